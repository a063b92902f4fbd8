/**
 * Artifact addresses (spec 2.7, 2.9, 2.10, 9): the one parser and the one formatter for
 *
 *     artifact:<id>[@<version>][/<file>][#<part>]
 *
 * Pure: no I/O, nothing about what exists. Whether an address names something (the artifact, the
 * version, the file, the sheet, the chart, the section, the slide) is the resolver's question.
 *
 * ## Grammar
 *
 * - `artifact:` — lowercase, exactly (no leading or trailing whitespace is skipped).
 * - `<id>` — `art_` followed by one or more ASCII letters or digits (ours are `art_<ULID>`).
 * - `@<version>` — a positive integer without leading zeros, at most `Number.MAX_SAFE_INTEGER`. Absent:
 *   the address follows the latest version; present: it stays on that version forever (spec 9).
 * - `/<file>` — a relative path inside the artifact: segments separated by `/`, no empty segment, no
 *   `.` or `..` segment (also when spelled `%2E`), and no `/` inside a segment (`%2F` is refused in a
 *   path: a file name cannot contain `/`). The parsed `file` is the decoded segments joined by `/`.
 * - `#<part>` — the rest of the address, one of (decided on the raw, undecoded text):
 *   1. `chart=<chart_name>` — the part starts with the five raw characters `chart=`; the chart name is
 *      what follows (non-empty; `=` inside it needs no escape; a raw `!` is refused in it to avoid
 *      reading `chart=x!A1` as a range — write `%21`). → `{ kind: "chart", chart }`.
 *   2. `<sheet_name>!<range>` — the part contains a raw `!`; the first one separates the (non-empty)
 *      sheet name from the range. → `{ kind: "range", sheet, range }`.
 *   3. `<name>` — anything else: a sheet name (sheets), a heading slug (documents) or a slide number
 *      (slides; a slide number is simply a name made of digits, `#3`, and the resolver reads it as the
 *      third slide). The parser cannot know the artifact's kind. → `{ kind: "name", name }`.
 *   A sheet or a bare name that itself starts with `chart=` is written with its `=` escaped (`chart%3Dx`).
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
 * ## Escaping (RFC 3986-style percent-encoding of UTF-8, IRI-style raw Unicode)
 *
 * Applies to file path segments, sheet names, chart names and bare names ("components").
 *
 * Decoding (parser):
 * - `%` must start `%XX` (two hex digits, either case); consecutive escapes form one character in
 *   UTF-8, which must be well formed (no stray continuation byte, no truncated sequence, no overlong
 *   form, no surrogate, nothing above U+10FFFF). A malformed escape is refused at its `%` (the lead
 *   `%` of the sequence when the UTF-8 is wrong; the `%` of a continuation escape that lacks hex digits).
 * - Any character may be percent-encoded (`%41` reads as `A`); other non-ASCII characters may be raw.
 * - These characters are refused when raw, anywhere in an address ("unsafe"): the controls
 *   U+0000–U+001F and U+007F–U+009F; space and every other Unicode separator (general category Z:
 *   U+00A0, U+1680, U+2000–U+200A, U+2028, U+2029, U+202F, U+205F, U+3000); the bidirectional controls
 *   U+061C, U+200E, U+200F, U+202A–U+202E, U+2066–U+2069; U+FEFF; the ASCII characters
 *   `"` `<` `>` `\` `^` `` ` `` `{` `|` `}` `?`; a `%` that does not start a valid escape; and an
 *   unpaired surrogate (JavaScript strings can hold one; it is not a character).
 * - Raw delimiters by place: `#` only once, to start the part; `/` only between path segments (raw `/`
 *   in a part is refused); `!` in the part only as the sheet/range separator (in a file path a raw `!`
 *   is an ordinary character; in a chart name it is refused); `@` is an ordinary character anywhere
 *   after the version's place (raw `@` in a path or a name is accepted); `=` is an ordinary character
 *   except in the leading `chart=`.
 *
 * Encoding (formatter, canonical form): a character is percent-encoded as its UTF-8 bytes, uppercase
 * hex, exactly when it is
 * - unsafe (the list above), or `%`, `#`, `@`, `!`, `/` — in every component;
 * - `=` — in sheet names and bare names only (never in chart names or file paths).
 *
 * Everything else is written as it is, non-ASCII included (`artifact:art_1/Données/été.csv`). So the
 * canonical form of an address is unique: `formatAddress(parseAddress(s))` is the same string for
 * every spelling `s` of one address, and `parseAddress(formatAddress(a))` is `a`.
 *
 * Errors: parsing throws {@link AddressError} with the 0-based position in the input where it went
 * wrong and what was expected there; {@link toApiError} turns it into a 400 `invalid_request`.
 * Formatting a value that is not a valid address throws a `TypeError` naming the field.
 */
import { ApiError } from "../errors";

/** The scheme every artifact address starts with. */
export const ADDRESS_SCHEME = "artifact:";
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
 * What follows `#` (spec 2.7, 2.10): a chart of a workbook, a range of a sheet, or a name the resolver
 * interprets by the artifact's kind (a sheet, a heading slug, or a slide number such as `"3"`).
 */
export type AddressPart = { kind: "chart"; chart: string } | { kind: "range"; sheet: string; range: CellRange } | { kind: "name"; name: string };

/**
 * A parsed address (spec 2.7, 9). Absent keys are omitted (never set to `undefined`) by the parser.
 * No `version`: the address follows the latest version. `file` is decoded (`"images/Q1 chart.png"`).
 */
export interface ArtifactAddress {
  artifactId: string;
  version?: number;
  file?: string;
  part?: AddressPart;
}

/**
 * A refused address: `position` is the 0-based index into `input` where it went wrong (the input's
 * length when it ended too early), `expected` says what would have been valid there.
 */
export class AddressError extends Error {
  readonly position: number;
  readonly expected: string;
  readonly input: string;

  constructor(input: string, position: number, expected: string) {
    super(`Invalid artifact address: expected ${expected} at position ${position}, found ${found(input, position)}`);
    this.name = "AddressError";
    this.input = input;
    this.position = position;
    this.expected = expected;
  }
}

/**
 * The 400 `invalid_request` for a refused address (spec 7), with `details: { position, expected, input }`.
 *
 * @example try { parseAddress(q) } catch (err) { throw err instanceof AddressError ? toApiError(err) : err }
 */
export function toApiError(err: AddressError): ApiError {
  return new ApiError("invalid_request", err.message, { position: err.position, expected: err.expected, input: err.input });
}

/**
 * True when `input` starts with `artifact:` (case-sensitive). A link cell, a markdown link or an
 * `href`/`src` holding such a value is an artifact address (and must then parse); anything else is not.
 */
export function isArtifactAddress(input: string): boolean {
  return typeof input === "string" && input.startsWith(ADDRESS_SCHEME);
}

// ---------------------------------------------------------------------------------------------------
// characters

const UNSAFE_ASCII = new Set(Array.from(' "<>\\^`{|}?', (c) => c.charCodeAt(0)));
const UNSAFE_UNICODE = /^[\p{Z}\u061C\u200E\u200F\u202A-\u202E\u2066-\u2069\uFEFF]$/u;

/** Characters refused raw anywhere and always encoded (see the module comment); `%` is handled apart. */
function isUnsafe(cp: number): boolean {
  if (cp < 0x20 || (cp >= 0x7f && cp <= 0x9f)) return true;
  if (cp < 0x80) return UNSAFE_ASCII.has(cp);
  return UNSAFE_UNICODE.test(String.fromCodePoint(cp));
}

const isSurrogate = (cp: number) => cp >= 0xd800 && cp <= 0xdfff;
const isDigit = (c: number) => c >= 0x30 && c <= 0x39;
const isUpper = (c: number) => c >= 0x41 && c <= 0x5a;
const isAlnum = (c: number) => isDigit(c) || isUpper(c) || (c >= 0x61 && c <= 0x7a);
const hexValue = (c: number) => (isDigit(c) ? c - 0x30 : c >= 0x41 && c <= 0x46 ? c - 0x37 : c >= 0x61 && c <= 0x66 ? c - 0x57 : -1);

/** How the character at `position` is shown in a message. */
function found(input: string, position: number): string {
  if (position >= input.length) return "the end of the address";
  const cp = input.codePointAt(position)!;
  if (isSurrogate(cp) || isUnsafe(cp)) return `U+${cp.toString(16).toUpperCase().padStart(4, "0")}`;
  return JSON.stringify(String.fromCodePoint(cp));
}

type Fail = (position: number, expected: string) => never;

const ID_RE = /^art_[0-9A-Za-z]+$/;

/** Components and what each refuses raw beyond the unsafe characters, and what it encodes beyond them. */
interface Component {
  label: string;
  /** Raw delimiters refused inside the component, each with the escape to use. */
  refusedRaw: string;
  /** Characters the formatter encodes in this component besides the unsafe ones and `%`. */
  encoded: string;
  /** A decoded `/` is refused (file path segments). */
  noSlash: boolean;
}
const FILE: Component = { label: "file path", refusedRaw: "#", encoded: "#@!/", noSlash: true };
const NAME: Component = { label: "name", refusedRaw: "#/", encoded: "#@!/=", noSlash: false };
const SHEET: Component = { label: "sheet name", refusedRaw: "#/", encoded: "#@!/=", noSlash: false };
const CHART: Component = { label: "chart name", refusedRaw: "#/!", encoded: "#@!/", noSlash: false };

const pct = (byte: number) => `%${byte.toString(16).toUpperCase().padStart(2, "0")}`;

/**
 * Reads one percent-encoded UTF-8 character starting at the `%` at `i` (before `end`).
 * Refuses a malformed escape at its `%`, and malformed UTF-8 at the sequence's first `%`.
 */
function readEscaped(input: string, i: number, end: number, fail: Fail): { cp: number; next: number } {
  const byteAt = (j: number): number => {
    const hi = j + 1 < end ? hexValue(input.charCodeAt(j + 1)) : -1;
    const lo = j + 2 < end ? hexValue(input.charCodeAt(j + 2)) : -1;
    if (hi < 0 || lo < 0) fail(j, "two hexadecimal digits after '%' (a percent-encoded byte such as %20)");
    return hi * 16 + lo;
  };
  const utf8 = "well-formed percent-encoded UTF-8 (e.g. %C3%A9 for é)";
  const b0 = byteAt(i);
  if (b0 < 0x80) return { cp: b0, next: i + 3 };
  let length: number;
  let lo = 0x80;
  let hi = 0xbf;
  let cp: number;
  if (b0 >= 0xc2 && b0 <= 0xdf) [length, cp] = [2, b0 & 0x1f];
  else if (b0 >= 0xe0 && b0 <= 0xef) {
    [length, cp] = [3, b0 & 0x0f];
    if (b0 === 0xe0) lo = 0xa0;
    if (b0 === 0xed) hi = 0x9f;
  } else if (b0 >= 0xf0 && b0 <= 0xf4) {
    [length, cp] = [4, b0 & 0x07];
    if (b0 === 0xf0) lo = 0x90;
    if (b0 === 0xf4) hi = 0x8f;
  } else return fail(i, utf8);
  for (let k = 1; k < length; k++) {
    const j = i + 3 * k;
    if (j >= end || input.charCodeAt(j) !== 0x25) fail(i, utf8);
    const b = byteAt(j);
    if (b < lo || b > hi) fail(i, utf8);
    cp = (cp << 6) | (b & 0x3f);
    lo = 0x80;
    hi = 0xbf;
  }
  return { cp, next: i + 3 * length };
}

/** Decodes `input[start, end)` as one component, refusing what the module comment says. */
function decodeComponent(input: string, start: number, end: number, kind: Component, fail: Fail): string {
  let out = "";
  let i = start;
  while (i < end) {
    const c = input.charCodeAt(i);
    if (c === 0x25) {
      const { cp, next } = readEscaped(input, i, end, fail);
      if (kind.noSlash && cp === 0x2f) fail(i, "a file name character ('/' separates path segments; %2F cannot be in a file name)");
      out += String.fromCodePoint(cp);
      i = next;
      continue;
    }
    const cp = input.codePointAt(i)!;
    if (isSurrogate(cp)) fail(i, "a Unicode character (this is half of a surrogate pair)");
    const ch = String.fromCodePoint(cp);
    if (isUnsafe(cp) || kind.refusedRaw.includes(ch)) {
      fail(i, `a ${kind.label} character (write ${ch === " " ? "a space" : `'${ch}'`} as ${Array.from(utf8Bytes(cp), pct).join("")})`);
    }
    out += ch;
    i += ch.length;
  }
  return out;
}

function utf8Bytes(cp: number): number[] {
  if (cp < 0x80) return [cp];
  if (cp < 0x800) return [0xc0 | (cp >> 6), 0x80 | (cp & 0x3f)];
  if (cp < 0x10000) return [0xe0 | (cp >> 12), 0x80 | ((cp >> 6) & 0x3f), 0x80 | (cp & 0x3f)];
  return [0xf0 | (cp >> 18), 0x80 | ((cp >> 12) & 0x3f), 0x80 | ((cp >> 6) & 0x3f), 0x80 | (cp & 0x3f)];
}

/** The canonical spelling of one component (see "Encoding" in the module comment). */
function encodeComponent(value: string, kind: Component, field: string): string {
  let out = "";
  for (const ch of value) {
    const cp = ch.codePointAt(0)!;
    if (isSurrogate(cp)) throw new TypeError(`formatAddress: ${field} holds an unpaired surrogate (U+${cp.toString(16).toUpperCase()}), which has no UTF-8 form`);
    out += isUnsafe(cp) || ch === "%" || kind.encoded.includes(ch) ? utf8Bytes(cp).map(pct).join("") : ch;
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------
// columns and ranges

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

/** Parses the A1 range `input[start, end)`; positions in errors are indexes into `input`. */
function readRange(input: string, start: number, end: number, fail: Fail): CellRange {
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

// ---------------------------------------------------------------------------------------------------
// addresses

/**
 * Parses an artifact address (spec 2.7; grammar and escaping in the module comment).
 *
 * @example parseAddress("artifact:art_01J@3/sheets/Q1%20Sales.csv")
 *   // { artifactId: "art_01J", version: 3, file: "sheets/Q1 Sales.csv" }
 * @example parseAddress("artifact:art_01J#Revenue!A2:C10")
 *   // { artifactId: "art_01J", part: { kind: "range", sheet: "Revenue", range: { start: { column: 0, row: 2 }, end: { column: 2, row: 10 } } } }
 * @throws AddressError with the 0-based `position` where the input went wrong and what was `expected`
 */
export function parseAddress(input: string): ArtifactAddress {
  if (typeof input !== "string") throw new TypeError("parseAddress: expected a string");
  const fail: Fail = (position, expected) => {
    throw new AddressError(input, position, expected);
  };
  const n = input.length;
  for (let i = 0; i < ADDRESS_SCHEME.length; i++) if (input[i] !== ADDRESS_SCHEME[i]) fail(i, `"${ADDRESS_SCHEME}" at the start of an artifact address`);

  let pos = ADDRESS_SCHEME.length;
  for (let i = 0; i < 4; i++) if (input[pos + i] !== "art_"[i]) fail(pos + i, 'an artifact id ("art_" followed by letters and digits)');
  const idStart = pos;
  pos += 4;
  while (pos < n && isAlnum(input.charCodeAt(pos))) pos++;
  if (pos === idStart + 4) fail(pos, 'letters or digits of the artifact id after "art_"');
  const address: ArtifactAddress = { artifactId: input.slice(idStart, pos) };

  if (input[pos] === "@") {
    const start = ++pos;
    while (pos < n && isDigit(input.charCodeAt(pos))) pos++;
    if (pos === start) fail(start, "a version number (1, 2, 3, …) after '@'");
    if (input[start] === "0") fail(start, "a version number from 1, without leading zeros");
    const version = Number(input.slice(start, pos));
    if (!Number.isSafeInteger(version)) fail(start, `a version number at most ${Number.MAX_SAFE_INTEGER}`);
    address.version = version;
    if (pos < n && input[pos] !== "/" && input[pos] !== "#") fail(pos, "a digit, '/', '#' or the end of the address");
  } else if (pos < n && input[pos] !== "/" && input[pos] !== "#") {
    fail(pos, "a letter or digit of the id, '@', '/', '#' or the end of the address");
  }

  if (input[pos] === "/") {
    const segments: string[] = [];
    for (;;) {
      const start = ++pos;
      while (pos < n && input[pos] !== "/" && input[pos] !== "#") pos++;
      const segment = decodeComponent(input, start, pos, FILE, fail);
      if (segment === "") fail(start, "a file path segment (a path has no empty segment)");
      if (segment === "." || segment === "..") fail(start, "a file path segment other than '.' or '..'");
      segments.push(segment);
      if (input[pos] !== "/") break;
    }
    address.file = segments.join("/");
  }

  if (input[pos] === "#") {
    const start = ++pos;
    if (start === n) fail(start, "a part after '#': a name, <sheet>!<range> or chart=<name>");
    if (input.startsWith("chart=", start)) {
      const chart = decodeComponent(input, start + 6, n, CHART, fail);
      if (chart === "") fail(start + 6, "a chart name after 'chart='");
      address.part = { kind: "chart", chart };
    } else {
      const bang = input.indexOf("!", start);
      if (bang >= 0) {
        const sheet = decodeComponent(input, start, bang, SHEET, fail);
        if (sheet === "") fail(start, "a sheet name before '!'");
        address.part = { kind: "range", sheet, range: readRange(input, bang + 1, n, fail) };
      } else {
        address.part = { kind: "name", name: decodeComponent(input, start, n, NAME, fail) };
      }
    }
  }
  return address;
}

/**
 * The canonical string of an address (spec 2.7): `artifact:<id>[@<version>][/<file>][#<part>]` with
 * components percent-encoded as the module comment says and the range in canonical A1 form.
 * `parseAddress(formatAddress(a))` deep-equals `a` (with absent keys omitted).
 *
 * @example formatAddress({ artifactId: "art_01J", part: { kind: "chart", chart: "Revenue by month" } })
 *   // "artifact:art_01J#chart=Revenue%20by%20month"
 * @throws TypeError when `address` is not a valid address (bad id, version not a positive safe
 *   integer, empty/`.`/`..` path segment, empty name, unpaired surrogate, invalid range)
 */
export function formatAddress(address: ArtifactAddress): string {
  const { artifactId, version, file, part } = address;
  if (typeof artifactId !== "string" || !ID_RE.test(artifactId)) throw new TypeError(`formatAddress: artifactId must be "art_" followed by letters and digits, got ${JSON.stringify(artifactId)}`);
  let out = ADDRESS_SCHEME + artifactId;
  if (version !== undefined) {
    if (!Number.isSafeInteger(version) || version < 1) throw new TypeError(`formatAddress: version must be a positive integer, got ${version}`);
    out += `@${version}`;
  }
  if (file !== undefined) {
    if (typeof file !== "string") throw new TypeError("formatAddress: file must be a string");
    const segments = file.split("/");
    for (const s of segments) if (s === "" || s === "." || s === "..") throw new TypeError(`formatAddress: file ${JSON.stringify(file)} must be a relative path without empty, '.' or '..' segments`);
    out += `/${segments.map((s) => encodeComponent(s, FILE, "file")).join("/")}`;
  }
  if (part !== undefined) {
    const nonEmpty = (value: unknown, field: string): string => {
      if (typeof value !== "string" || value === "") throw new TypeError(`formatAddress: ${field} must be a non-empty string`);
      return value;
    };
    switch (part.kind) {
      case "chart":
        out += `#chart=${encodeComponent(nonEmpty(part.chart, "part.chart"), CHART, "part.chart")}`;
        break;
      case "range":
        out += `#${encodeComponent(nonEmpty(part.sheet, "part.sheet"), SHEET, "part.sheet")}!${formatRange(part.range)}`;
        break;
      case "name":
        out += `#${encodeComponent(nonEmpty(part.name, "part.name"), NAME, "part.name")}`;
        break;
      default:
        throw new TypeError(`formatAddress: unknown part kind ${JSON.stringify((part as { kind: unknown }).kind)}`);
    }
  }
  return out;
}

/**
 * The page that opens an address (spec 4.1): `/artifacts/<id>`, with `v` when the address pins a
 * version and `part` for a sheet, range's sheet, `chart=<name>`, section slug or slide number.
 */
export function pageUrl(address: ArtifactAddress): string {
  const query: string[] = [];
  if (address.version !== undefined) query.push(`v=${address.version}`);
  const part = address.part;
  const name = part?.kind === "chart" ? `chart=${part.chart}` : part?.kind === "range" ? part.sheet : part?.name;
  if (name !== undefined) query.push(`part=${encodeURIComponent(name)}`);
  return `/artifacts/${encodeURIComponent(address.artifactId)}${query.length ? `?${query.join("&")}` : ""}`;
}

/** A page URL for an address string ({@link pageUrl}), or `#` for a malformed one. */
export function safePageUrl(address: string): string {
  try {
    return pageUrl(parseAddress(address));
  } catch {
    return "#";
  }
}
