/**
 * Ranges of a sheet in A1 notation (spec 2.7, 2.8, 8): the one parser and the one formatter of the
 * `<range>` in an artifact address's `#<sheet_name>!<range>` part (./address.ts), and column letters.
 * Pure, like the address parser.
 *
 * ## Ranges (A1 notation; spec 2.7, 2.8, 8)
 *
 * Columns are uppercase letters `A`..`GR` (0..199: a sheet has at most 200 columns); rows are 1..100001
 * without leading zeros, where row 1 is the header row (so `A1` is the header cell of column A and the
 * 100,000 data rows are rows 2..100001). Accepted forms:
 *
 * | Written | Meaning | Parsed |
 * |---|---|---|
 * | `C5` | one cell | `{ start: { column: 2, row: 5 }, end: { column: 2, row: 5 } }` |
 * | `A2:C10` | a block of cells | `{ start: { column: 0, row: 2 }, end: { column: 2, row: 10 } }` |
 * | `B:D` | whole columns | `{ start: { column: 1 }, end: { column: 3 } }` (no `row` key) |
 * | `B` | one whole column (also written `B:B`) | `{ start: { column: 1 }, end: { column: 1 } }` |
 *
 * Both ends must have the same shape (`A2:C` is refused), the end is at or after the start in both
 * directions (`C2:A3` is refused: no reversed ranges), and there are no `$` anchors, lowercase letters
 * or whole-row ranges (`2:5`). When start and end are the same the canonical form is the short one
 * (`C5`, `B`); `C5:C5` and `B:B` are accepted and mean the same.
 *
 * Errors: parsing throws {@link AddressError} (./address-error.ts) with the 0-based position in the
 * input where it went wrong and what was expected there. Formatting a value that is not a valid range
 * throws a `TypeError` saying what is wrong.
 */
import { AddressError, isDigit, isUpper, type Fail } from "./address-error";

/** Columns of a sheet (spec 8): `A`..`GR`, 0-based 0..199. */
export const MAX_COLUMNS = 200;
/** The last row an address may name: header row 1 plus 100,000 data rows (spec 8). */
export const MAX_ROW = 100_001;

/**
 * One end of a range: a cell, or a whole column when `row` is absent (spec 2.7).
 * `column` is 0-based (`A` is 0); `row` is 1-based, and row 1 is the header row.
 */
export interface CellRef {
  column: number;
  row?: number;
}

/**
 * A rectangle of a sheet in A1 notation (spec 2.7). A single cell or a single whole column has
 * `start` and `end` deep-equal. Both ends have a row or neither does; `end` is never before `start`.
 */
export interface CellRange {
  start: CellRef;
  end: CellRef;
}

/**
 * The letters of a 0-based column index (spreadsheet style, bijective base 26): 0 → `A`, 25 → `Z`,
 * 26 → `AA`, 199 → `GR`, 701 → `ZZ`, 702 → `AAA`. Not limited to the 200 columns of a sheet.
 * Throws a `RangeError` for a negative or non-integer index.
 */
export function columnLetter(index: number): string {
  if (!Number.isSafeInteger(index) || index < 0) throw new RangeError(`columnLetter: expected a non-negative integer, got ${index}`);
  let letters = "";
  for (let n = index + 1; n > 0; n = Math.floor((n - 1) / 26)) letters = String.fromCharCode(0x41 + ((n - 1) % 26)) + letters;
  return letters;
}

/**
 * The 0-based index of column letters: `A` → 0, `Z` → 25, `AA` → 26, `GR` → 199. The inverse of
 * {@link columnLetter}. Throws {@link AddressError} (position in `letters`) unless `letters` is one or
 * more uppercase ASCII letters (at most 11, to stay a safe integer).
 */
export function columnIndex(letters: string): number {
  const fail: Fail = (position, expected) => {
    throw new AddressError(letters, position, expected);
  };
  if (letters.length === 0) fail(0, "a column letter (A to Z)");
  let n = 0;
  for (let i = 0; i < letters.length; i++) {
    const c = letters.charCodeAt(i);
    if (!isUpper(c)) fail(i, "an uppercase column letter (A to Z)");
    if (i >= 11) fail(0, "at most 11 column letters");
    n = n * 26 + (c - 0x40);
  }
  return n - 1;
}

const LAST_COLUMN = columnLetter(MAX_COLUMNS - 1);

/** One end of a range at `pos`; `wantRow` says whether a row must (true) or must not (false) follow. */
function readRef(input: string, pos: number, end: number, wantRow: boolean | undefined, fail: Fail): { ref: CellRef; next: number } {
  let i = pos;
  while (i < end && isUpper(input.charCodeAt(i))) i++;
  if (i === pos) {
    const c = input.charCodeAt(pos);
    if (pos < end && c >= 0x61 && c <= 0x7a) fail(pos, `an uppercase column letter (A to ${LAST_COLUMN})`);
    fail(pos, `a column letter (A to ${LAST_COLUMN})`);
  }
  const column = i - pos > 2 ? MAX_COLUMNS : columnIndex(input.slice(pos, i));
  if (column >= MAX_COLUMNS) fail(pos, `a column from A to ${LAST_COLUMN} (a sheet has at most ${MAX_COLUMNS} columns)`);
  const rowStart = i;
  while (i < end && isDigit(input.charCodeAt(i))) i++;
  if (i === rowStart) {
    if (wantRow === true) fail(rowStart, `a row number (1 to ${MAX_ROW}), as the start of the range has one`);
    return { ref: { column }, next: i };
  }
  if (wantRow === false) fail(rowStart, "no row number (the range starts with a whole column)");
  if (input.charCodeAt(rowStart) === 0x30) fail(rowStart, `a row number from 1 (row 1 is the header row), without leading zeros`);
  const row = i - rowStart > 6 ? MAX_ROW + 1 : Number(input.slice(rowStart, i));
  if (row > MAX_ROW) fail(rowStart, `a row number at most ${MAX_ROW} (the header row and ${MAX_ROW - 1} data rows)`);
  return { ref: { column, row }, next: i };
}

/**
 * Parses the A1 range `input[start, end)`; positions in errors are indexes into `input` (./address.ts
 * reads the range of a `#<sheet_name>!<range>` part with it).
 */
export function readRange(input: string, start: number, end: number, fail: Fail): CellRange {
  const first = readRef(input, start, end, undefined, fail);
  if (first.next === end) return { start: first.ref, end: { ...first.ref } };
  if (input.charCodeAt(first.next) !== 0x3a) fail(first.next, first.ref.row === undefined ? "':' or the end of the range" : "a digit, ':' or the end of the range");
  const endStart = first.next + 1;
  const second = readRef(input, endStart, end, first.ref.row !== undefined, fail);
  if (second.next !== end) fail(second.next, second.ref.row === undefined ? "the end of the range" : "a digit or the end of the range");
  if (second.ref.column < first.ref.column) fail(endStart, `a column at or after ${columnLetter(first.ref.column)} (the end of a range is not before its start)`);
  if (second.ref.row !== undefined && second.ref.row < first.ref.row!) {
    fail(endStart + columnLetter(second.ref.column).length, `a row at or after ${first.ref.row} (the end of a range is not before its start)`);
  }
  return { start: first.ref, end: second.ref };
}

/**
 * Parses an A1 range (`C5`, `A2:C10`, `B:D`, `B`; see the module comment). Throws {@link AddressError}
 * with the position in `input`.
 */
export function parseRange(input: string): CellRange {
  const fail: Fail = (position, expected) => {
    throw new AddressError(input, position, expected);
  };
  return readRange(input, 0, input.length, fail);
}

function checkRef(ref: CellRef, field: string): void {
  if (!Number.isInteger(ref?.column) || ref.column < 0 || ref.column >= MAX_COLUMNS) throw new TypeError(`formatRange: ${field}.column must be an integer from 0 to ${MAX_COLUMNS - 1}, got ${ref?.column}`);
  if (ref.row !== undefined && (!Number.isInteger(ref.row) || ref.row < 1 || ref.row > MAX_ROW)) throw new TypeError(`formatRange: ${field}.row must be an integer from 1 to ${MAX_ROW}, got ${ref.row}`);
}

const formatRef = (ref: CellRef) => `${columnLetter(ref.column)}${ref.row ?? ""}`;

/**
 * The canonical A1 text of a range: `C5` when start and end are the same cell, `B` for one whole
 * column, else `start:end` (`A2:C10`, `B:D`). Throws a `TypeError` when the range is not valid
 * (column outside 0..199, row outside 1..100001, ends of different shapes, end before start).
 */
export function formatRange(range: CellRange): string {
  checkRef(range?.start, "start");
  checkRef(range.end, "end");
  const { start, end } = range;
  if ((start.row === undefined) !== (end.row === undefined)) throw new TypeError("formatRange: start and end must both have a row or both be whole columns");
  if (end.column < start.column || (start.row !== undefined && end.row! < start.row)) throw new TypeError("formatRange: the end of a range must not be before its start");
  if (start.column === end.column && start.row === end.row) return formatRef(start);
  return `${formatRef(start)}:${formatRef(end)}`;
}
