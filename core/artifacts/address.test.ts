/**
 * Artifact addresses (spec 2.7, 9): every form of the spec's table, the canonical spelling, round trips
 * as properties over arbitrary addresses, and refusals with exact positions (tables) and as a property
 * (a valid address with one corruption is refused at or before the corruption, never past it).
 */
import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { type ArtifactAddress, formatAddress, isArtifactAddress, parseAddress } from "./address";
import { AddressError, toApiError } from "./address-error";
import { type CellRange, columnIndex, columnLetter, formatRange, MAX_ROW, parseRange } from "./cell-range";

/** The error `fn` throws (fails the test when it throws nothing or something else). */
function refusal(fn: () => unknown): AddressError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(AddressError);
    return err as AddressError;
  }
  throw new Error("expected an AddressError, nothing was thrown");
}

const cell = (column: number, row: number) => ({ start: { column, row }, end: { column, row } });
const block = (c1: number, r1: number, c2: number, r2: number) => ({ start: { column: c1, row: r1 }, end: { column: c2, row: r2 } });
const cols = (c1: number, c2: number) => ({ start: { column: c1 }, end: { column: c2 } });

describe("parseAddress: every form of the spec 2.7 table", () => {
  const ID = "art_01J9ZQ5X6Y7RG0M2B3C4D5E6F7";
  it.each<[string, ArtifactAddress]>([
    // artifact:<id> — the artifact, latest version
    [`artifact:${ID}`, { artifactId: ID }],
    ["artifact:art_x", { artifactId: "art_x" }],
    // artifact:<id>@<version> — a fixed version
    [`artifact:${ID}@3`, { artifactId: ID, version: 3 }],
    ["artifact:art_x@1", { artifactId: "art_x", version: 1 }],
    ["artifact:art_x@9007199254740991", { artifactId: "art_x", version: Number.MAX_SAFE_INTEGER }],
    // artifact:<id>/<file> — a file inside it
    ["artifact:art_x/document.md", { artifactId: "art_x", file: "document.md" }],
    ["artifact:art_x/images/chart.png", { artifactId: "art_x", file: "images/chart.png" }],
    ["artifact:art_x@2/sheets/Q1%20Sales.csv", { artifactId: "art_x", version: 2, file: "sheets/Q1 Sales.csv" }],
    ["artifact:art_x/Données/été.csv", { artifactId: "art_x", file: "Données/été.csv" }],
    ["artifact:art_x/%E6%97%A5%E6%9C%AC.png", { artifactId: "art_x", file: "日本.png" }],
    ["artifact:art_x/img@2x.png", { artifactId: "art_x", file: "img@2x.png" }],
    ["artifact:art_x/a!b=c.txt", { artifactId: "art_x", file: "a!b=c.txt" }],
    ["artifact:art_x/.hidden/..a/a..", { artifactId: "art_x", file: ".hidden/..a/a.." }],
    // artifact:<id>#<sheet_name> — a sheet (a name: the resolver knows the kind)
    ["artifact:art_x#Revenue", { artifactId: "art_x", part: { kind: "name", name: "Revenue" } }],
    ["artifact:art_x#Q1%20Sales", { artifactId: "art_x", part: { kind: "name", name: "Q1 Sales" } }],
    ["artifact:art_x#日本語", { artifactId: "art_x", part: { kind: "name", name: "日本語" } }],
    // artifact:<id>#<sheet_name>!<range> — row 1 is the header row
    ["artifact:art_x#Revenue!A2:C10", { artifactId: "art_x", part: { kind: "range", sheet: "Revenue", range: block(0, 2, 2, 10) } }],
    ["artifact:art_x#Revenue!B:D", { artifactId: "art_x", part: { kind: "range", sheet: "Revenue", range: cols(1, 3) } }],
    ["artifact:art_x#Revenue!C5", { artifactId: "art_x", part: { kind: "range", sheet: "Revenue", range: cell(2, 5) } }],
    ["artifact:art_x#Revenue!A1", { artifactId: "art_x", part: { kind: "range", sheet: "Revenue", range: cell(0, 1) } }],
    ["artifact:art_x#Revenue!A1:GR100001", { artifactId: "art_x", part: { kind: "range", sheet: "Revenue", range: block(0, 1, 199, 100001) } }],
    ["artifact:art_x#Revenue!B", { artifactId: "art_x", part: { kind: "range", sheet: "Revenue", range: cols(1, 1) } }],
    ["artifact:art_x#Revenue!B:B", { artifactId: "art_x", part: { kind: "range", sheet: "Revenue", range: cols(1, 1) } }],
    ["artifact:art_x#Revenue!C5:C5", { artifactId: "art_x", part: { kind: "range", sheet: "Revenue", range: cell(2, 5) } }],
    ["artifact:art_x#Q1%20Sales%21!AA2:AB3", { artifactId: "art_x", part: { kind: "range", sheet: "Q1 Sales!", range: block(26, 2, 27, 3) } }],
    ["artifact:art_x#chart%3Dx!A1", { artifactId: "art_x", part: { kind: "range", sheet: "chart=x", range: cell(0, 1) } }],
    // artifact:<id>#chart=<chart_name>
    ["artifact:art_x#chart=Revenue", { artifactId: "art_x", part: { kind: "chart", chart: "Revenue" } }],
    ["artifact:art_x#chart=Revenue%20by%20month", { artifactId: "art_x", part: { kind: "chart", chart: "Revenue by month" } }],
    ["artifact:art_x#chart=a=b", { artifactId: "art_x", part: { kind: "chart", chart: "a=b" } }],
    ["artifact:art_x#chart=%21", { artifactId: "art_x", part: { kind: "chart", chart: "!" } }],
    // artifact:<id>#<heading_slug>, and a slide number (a name of digits)
    ["artifact:art_x#getting-started", { artifactId: "art_x", part: { kind: "name", name: "getting-started" } }],
    ["artifact:art_x#3", { artifactId: "art_x", part: { kind: "name", name: "3" } }],
    ["artifact:art_x#chart%3Dx", { artifactId: "art_x", part: { kind: "name", name: "chart=x" } }],
    ["artifact:art_x#Chart=x", { artifactId: "art_x", part: { kind: "name", name: "Chart=x" } }],
    // everything together, escapes of every kind
    ["artifact:art_x@7/sheets/Revenue.csv#Revenue!A2:C10", { artifactId: "art_x", version: 7, file: "sheets/Revenue.csv", part: { kind: "range", sheet: "Revenue", range: block(0, 2, 2, 10) } }],
    ["artifact:art_x#Q1%21%23%40%2F%25%3F", { artifactId: "art_x", part: { kind: "name", name: "Q1!#@/%?" } }],
    ["artifact:art_x#%c3%a9t%C3%A9", { artifactId: "art_x", part: { kind: "name", name: "été" } }],
    ["artifact:art_x#%F0%9F%98%80%41", { artifactId: "art_x", part: { kind: "name", name: "😀A" } }],
    ["artifact:art_x#%00%C2%A0%E2%80%AE", { artifactId: "art_x", part: { kind: "name", name: "\u0000\u00a0\u202e" } }],
    ["artifact:art_x#a@b", { artifactId: "art_x", part: { kind: "name", name: "a@b" } }],
  ])("%s", (input, expected) => {
    expect(parseAddress(input)).toStrictEqual(expected);
  });
});

describe("formatAddress: the canonical form", () => {
  it.each<[ArtifactAddress, string]>([
    [{ artifactId: "art_x" }, "artifact:art_x"],
    [{ artifactId: "art_x", version: 12 }, "artifact:art_x@12"],
    [{ artifactId: "art_1", file: "Données/été 2024.csv" }, "artifact:art_1/Données/été%202024.csv"],
    [{ artifactId: "art_1", file: "img@2x!=.png" }, "artifact:art_1/img%402x%21=.png"],
    [{ artifactId: "art_1", file: "a#b?c%d" }, "artifact:art_1/a%23b%3Fc%25d"],
    [{ artifactId: "art_1", part: { kind: "name", name: "Q1 #1 @home 100% a/b c!d e=f ?" } }, "artifact:art_1#Q1%20%231%20%40home%20100%25%20a%2Fb%20c%21d%20e%3Df%20%3F"],
    [{ artifactId: "art_1", part: { kind: "name", name: '"<>\\^`{|}' } }, "artifact:art_1#%22%3C%3E%5C%5E%60%7B%7C%7D"],
    [{ artifactId: "art_1", part: { kind: "name", name: "\u0000\t\u007f\u0085\u00a0\u2028\u202e\u2066\ufeff\u3000" } }, "artifact:art_1#%00%09%7F%C2%85%C2%A0%E2%80%A8%E2%80%AE%E2%81%A6%EF%BB%BF%E3%80%80"],
    [{ artifactId: "art_1", part: { kind: "name", name: "😀 日本 é ‍ ()[]'*$&+,;:~" } }, "artifact:art_1#😀%20日本%20é%20‍%20()[]'*$&+,;:~"],
    [{ artifactId: "art_1", part: { kind: "chart", chart: "a=b c!" } }, "artifact:art_1#chart=a=b%20c%21"],
    [{ artifactId: "art_1", part: { kind: "range", sheet: "chart=x", range: cell(0, 1) } }, "artifact:art_1#chart%3Dx!A1"],
    [{ artifactId: "art_1", part: { kind: "range", sheet: "S", range: cols(1, 1) } }, "artifact:art_1#S!B"],
    [{ artifactId: "art_1", part: { kind: "range", sheet: "S", range: cols(1, 3) } }, "artifact:art_1#S!B:D"],
    [{ artifactId: "art_1", part: { kind: "range", sheet: "S", range: block(0, 2, 2, 10) } }, "artifact:art_1#S!A2:C10"],
    [{ artifactId: "art_1", part: { kind: "name", name: "3" } }, "artifact:art_1#3"],
    [{ artifactId: "art_1", version: 2, file: "a/b", part: { kind: "chart", chart: "c" } }, "artifact:art_1@2/a/b#chart=c"],
  ])("%j → %s", (address, expected) => {
    expect(formatAddress(address)).toBe(expected);
  });

  it.each<[string, string]>([
    ["artifact:art_x/img@2x.png", "artifact:art_x/img%402x.png"],
    ["artifact:art_x#Revenue!B:B", "artifact:art_x#Revenue!B"],
    ["artifact:art_x#Revenue!C5:C5", "artifact:art_x#Revenue!C5"],
    ["artifact:art_x#%c3%a9%41", "artifact:art_x#éA"],
    ["artifact:art_x#a=b", "artifact:art_x#a%3Db"],
    ["artifact:art_x#a@b", "artifact:art_x#a%40b"],
    ["artifact:art_x/%2e%2E%2e", "artifact:art_x/..."],
  ])("%s has the canonical spelling %s", (input, canonical) => {
    expect(formatAddress(parseAddress(input))).toBe(canonical);
    expect(parseAddress(canonical)).toStrictEqual(parseAddress(input));
  });

  it.each<[string, ArtifactAddress]>([
    ["an id without art_", { artifactId: "x_1" }],
    ["an id with a dash", { artifactId: "art_a-b" }],
    ["version 0", { artifactId: "art_x", version: 0 }],
    ["version 1.5", { artifactId: "art_x", version: 1.5 }],
    ["an unsafe version", { artifactId: "art_x", version: 2 ** 60 }],
    ["an empty file", { artifactId: "art_x", file: "" }],
    ["an absolute file", { artifactId: "art_x", file: "/a" }],
    ["an empty segment", { artifactId: "art_x", file: "a//b" }],
    ["a .. segment", { artifactId: "art_x", file: "a/../b" }],
    ["a . segment", { artifactId: "art_x", file: "./b" }],
    ["an unpaired surrogate", { artifactId: "art_x", file: "a\ud800" }],
    ["an empty chart", { artifactId: "art_x", part: { kind: "chart", chart: "" } }],
    ["an empty name", { artifactId: "art_x", part: { kind: "name", name: "" } }],
    ["an empty sheet", { artifactId: "art_x", part: { kind: "range", sheet: "", range: cell(0, 1) } }],
    ["row 0", { artifactId: "art_x", part: { kind: "range", sheet: "S", range: cell(0, 0) } }],
    ["row 100002", { artifactId: "art_x", part: { kind: "range", sheet: "S", range: cell(0, 100_002) } }],
    ["column 200", { artifactId: "art_x", part: { kind: "range", sheet: "S", range: cell(200, 1) } }],
    ["a reversed range", { artifactId: "art_x", part: { kind: "range", sheet: "S", range: block(2, 1, 1, 1) } }],
    ["ends of two shapes", { artifactId: "art_x", part: { kind: "range", sheet: "S", range: { start: { column: 0, row: 1 }, end: { column: 1 } } } }],
  ])("refuses %s with a TypeError", (_what, address) => {
    expect(() => formatAddress(address)).toThrow(TypeError);
  });
});

describe("parseAddress refuses malformed addresses at the exact position", () => {
  it.each<[string, number]>([
    ["", 0],
    ["http://x", 0],
    ["https://example.com/a", 0],
    ["Artifact:art_x", 0],
    [" artifact:art_x", 0],
    ["artifact", 8],
    ["artifact:", 9],
    ["artifact:ART_x", 9],
    ["artifact:art-x", 12],
    ["artifact:art_", 13],
    ["artifact:art_x ", 14],
    ["artifact:art_x @1", 14],
    ["artifact:art_x?a=1", 14],
    ["artifact:art_x.md", 14],
    ["artifact:art_x@", 15],
    ["artifact:art_x@0", 15],
    ["artifact:art_x@01", 15],
    ["artifact:art_x@-1", 15],
    ["artifact:art_x@99999999999999999", 15],
    ["artifact:art_x@1x", 16],
    ["artifact:art_x@1@2", 16],
    ["artifact:art_x/", 15],
    ["artifact:art_x//a", 15],
    ["artifact:art_x/../a", 15],
    ["artifact:art_x/./a", 15],
    ["artifact:art_x/a/./b", 17],
    ["artifact:art_x/a/..", 17],
    ["artifact:art_x/%2E%2e", 15],
    ["artifact:art_x/a/", 17],
    ["artifact:art_x/a b", 16],
    ["artifact:art_x/a?b", 16],
    ["artifact:art_x/a%2Fb", 16],
    ["artifact:art_x/a%2fb", 16],
    ["artifact:art_x/%C3", 15],
    ["artifact:art_x/%C3%28", 15],
    ["artifact:art_x/%C3%2", 18],
    ["artifact:art_x/%C3%zz", 18],
    ["artifact:art_x/%ED%A0%80", 15],
    ["artifact:art_x/%C0%AF", 15],
    ["artifact:art_x/%F4%90%80%80", 15],
    ["artifact:art_x/%80", 15],
    ["artifact:art_x/%FF", 15],
    ["artifact:art_x/\ud800", 15],
    ["artifact:art_x/a\udc00", 16],
    ["artifact:art_x#", 15],
    ["artifact:art_x#%zz", 15],
    ["artifact:art_x#%", 15],
    ["artifact:art_x#%4", 15],
    ["artifact:art_x#a%g1", 16],
    ["artifact:art_x#a#b", 16],
    ["artifact:art_x#a/b", 16],
    ["artifact:art_x#a b", 16],
    ["artifact:art_x#Q1\u00a0Sales", 17],
    ["artifact:art_x#a\u202eb", 16],
    ["artifact:art_x#a\u0000", 16],
    ['artifact:art_x#a"b', 16],
    ["artifact:art_x#a<b>", 16],
    ["artifact:art_x#chart=", 21],
    ["artifact:art_x#chart=a!b", 22],
    ["artifact:art_x#chart=a#b", 22],
    ["artifact:art_x#!A1", 15],
    ["artifact:art_x#Sheet!", 21],
    ["artifact:art_x#Sheet!A0", 22],
    ["artifact:art_x#Sheet!A01", 22],
    ["artifact:art_x#Sheet!a1", 21],
    ["artifact:art_x#Sheet!$A$1", 21],
    ["artifact:art_x#Sheet!GS1", 21],
    ["artifact:art_x#Sheet!AAA1", 21],
    ["artifact:art_x#Sheet!A100002", 22],
    ["artifact:art_x#Sheet!A1000000000", 22],
    ["artifact:art_x#Sheet!A1:", 24],
    ["artifact:art_x#Sheet!A2:C", 25],
    ["artifact:art_x#Sheet!B:D5", 24],
    ["artifact:art_x#Sheet!C2:A3", 24],
    ["artifact:art_x#Sheet!A3:C2", 25],
    ["artifact:art_x#Sheet!D:B", 23],
    ["artifact:art_x#Sheet!A1!B2", 23],
    ["artifact:art_x#Sheet!2:5", 21],
    ["artifact:art_x#Sheet!A1:B2:C3", 26],
    ["artifact:art_x#Sheet!A1 ", 23],
  ])("%j at %i", (input, position) => {
    const err = refusal(() => parseAddress(input));
    expect(err.position).toBe(position);
    expect(err.input).toBe(input);
    expect(err.expected.length).toBeGreaterThan(0);
    expect(err.message).toContain(`at position ${position}`);
  });

  it("says what was expected and what was found", () => {
    const err = refusal(() => parseAddress("artifact:art_x@0"));
    expect(err.expected).toBe("a version number from 1, without leading zeros");
    expect(err.message).toBe('Invalid artifact address: expected a version number from 1, without leading zeros at position 15, found "0"');
    expect(refusal(() => parseAddress("artifact:art_x#a b")).message).toContain("found U+0020");
    expect(refusal(() => parseAddress("artifact:art_x#Sheet!")).message).toContain("found the end of the address");
    expect(refusal(() => parseAddress("artifact:art_x#a b")).expected).toBe("a name character (write a space as %20)");
    expect(refusal(() => parseAddress("artifact:art_x#Sheet!A0")).expected).toMatch(/row 1 is the header row/);
  });

  it("becomes a 400 invalid_request with position, expected and input", () => {
    const err = refusal(() => parseAddress("artifact:art_x@01"));
    const api = toApiError(err);
    expect(api.code).toBe("invalid_request");
    expect(api.status).toBe(400);
    expect(api.message).toBe(err.message);
    expect(api.toBody()).toStrictEqual({ error: { code: "invalid_request", message: err.message, details: { position: 15, expected: err.expected, input: "artifact:art_x@01" } } });
  });
});

describe("isArtifactAddress", () => {
  it.each<[string, boolean]>([
    ["artifact:art_x", true],
    ["artifact:art_x#Sheet!A1", true],
    ["artifact:", true],
    ["artifact:not an address", true],
    ["https://example.com", false],
    ["Artifact:art_x", false],
    [" artifact:art_x", false],
    ["artifact", false],
    ["", false],
  ])("%j → %s", (input, expected) => {
    expect(isArtifactAddress(input)).toBe(expected);
  });
});

describe("columns and ranges (A1 notation)", () => {
  it.each<[number, string]>([
    [0, "A"],
    [1, "B"],
    [25, "Z"],
    [26, "AA"],
    [27, "AB"],
    [51, "AZ"],
    [52, "BA"],
    [199, "GR"],
    [701, "ZZ"],
    [702, "AAA"],
    [16383, "XFD"],
  ])("column %i is %s", (index, letters) => {
    expect(columnLetter(index)).toBe(letters);
    expect(columnIndex(letters)).toBe(index);
  });

  it("refuses what is not a column", () => {
    expect(() => columnLetter(-1)).toThrow(RangeError);
    expect(() => columnLetter(1.5)).toThrow(RangeError);
    expect(refusal(() => columnIndex("")).position).toBe(0);
    expect(refusal(() => columnIndex("Ab")).position).toBe(1);
    expect(refusal(() => columnIndex("A1")).position).toBe(1);
  });

  it("column letters round trip and keep spreadsheet order", () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 1_000_000 }), (n) => {
        const a = columnLetter(n);
        const b = columnLetter(n + 1);
        expect(columnIndex(a)).toBe(n);
        expect(a.length < b.length || (a.length === b.length && a < b)).toBe(true);
      }),
      { numRuns: 500 },
    );
  });

  it.each<[string, CellRange, string]>([
    ["A1", cell(0, 1), "A1"],
    ["C5", cell(2, 5), "C5"],
    ["C5:C5", cell(2, 5), "C5"],
    ["A2:C10", block(0, 2, 2, 10), "A2:C10"],
    ["A2:A10", block(0, 2, 0, 10), "A2:A10"],
    ["A2:C2", block(0, 2, 2, 2), "A2:C2"],
    ["B:D", cols(1, 3), "B:D"],
    ["B", cols(1, 1), "B"],
    ["B:B", cols(1, 1), "B"],
    ["GR100001", cell(199, MAX_ROW), "GR100001"],
  ])("parseRange(%j)", (input, range, canonical) => {
    expect(parseRange(input)).toStrictEqual(range);
    expect(formatRange(range)).toBe(canonical);
  });

  it.each<[string, number]>([
    ["", 0],
    ["1", 0],
    ["a1", 0],
    ["A0", 1],
    ["A-1", 1],
    ["GS1", 0],
    ["A1:", 3],
    ["A1:B", 4],
    ["A:B1", 3],
    ["B1:A1", 3],
    ["A2:A1", 4],
    ["A1 ", 2],
  ])("parseRange refuses %j at %i", (input, position) => {
    expect(refusal(() => parseRange(input)).position).toBe(position);
  });
});

// ---------------------------------------------------------------------------------------------------
// properties

const ALNUM = [..."0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"];
/** Pieces that stress the escaping: delimiters, unsafe characters, escapes written literally, unicode. */
const TRICKY = [
  " ", "#", "@", "!", "%", "/", "?", "=", ":", ".", "..", "chart=", "chart", "%20", "%zz", "!A1", "A1", "0", "1",
  "\u0000", "\u0007", "\t", "\n", "\u007f", "\u0085", "\u00a0", "\u2028", "\u202e", "\u2066", "\ufeff", "\u3000", "\u200d",
  "é", "日本", "😀", "👩‍💻", '"', "<", ">", "\\", "^", "`", "{", "|", "}", "$", "'", "(", ")", "[", "]", "+", "&", ";", ",", "*", "~", "-", "_",
];
const text = fc.string({
  unit: fc.oneof({ arbitrary: fc.constantFrom(...TRICKY), weight: 3 }, { arbitrary: fc.constantFrom(...ALNUM), weight: 3 }, { arbitrary: fc.string({ unit: "binary", minLength: 1, maxLength: 1 }), weight: 1 }),
  minLength: 1,
  maxLength: 10,
});
const segment = text.map((s) => s.replaceAll("/", "∕")).filter((s) => s !== "." && s !== "..");
const arbId = fc.string({ unit: fc.constantFrom(...ALNUM), minLength: 1, maxLength: 26 }).map((s) => `art_${s}`);
const arbVersion = fc.oneof(fc.integer({ min: 1, max: 20 }), fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }));
const arbColumn = fc.oneof(fc.constantFrom(0, 1, 25, 26, 27, 198, 199), fc.integer({ min: 0, max: 199 }));
const arbRow = fc.oneof(fc.constantFrom(1, 2, 9, 10, 100_000, MAX_ROW), fc.integer({ min: 1, max: MAX_ROW }));
const sorted = (a: number, b: number): [number, number] => (a <= b ? [a, b] : [b, a]);
const arbRange: fc.Arbitrary<CellRange> = fc.oneof(
  fc.tuple(arbColumn, arbRow).map(([c, r]) => cell(c, r)),
  fc.tuple(arbColumn, arbColumn, arbRow, arbRow).map(([c1, c2, r1, r2]) => {
    const [a, b] = sorted(c1, c2);
    const [x, y] = sorted(r1, r2);
    return block(a, x, b, y);
  }),
  fc.tuple(arbColumn, arbColumn).map(([c1, c2]) => cols(...sorted(c1, c2))),
);
const arbAddress: fc.Arbitrary<ArtifactAddress> = fc.record(
  {
    artifactId: arbId,
    version: arbVersion,
    file: fc.array(segment, { minLength: 1, maxLength: 4 }).map((s) => s.join("/")),
    part: fc.oneof(
      text.map((chart) => ({ kind: "chart" as const, chart })),
      fc.tuple(text, arbRange).map(([sheet, range]) => ({ kind: "range" as const, sheet, range })),
      text.map((name) => ({ kind: "name" as const, name })),
    ),
  },
  { requiredKeys: ["artifactId"], noNullPrototype: true },
);

/** A small deterministic PRNG so one generated seed decides a whole respelling. */
function prng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * Another valid spelling of `a`, written independently of the module's formatter: escapes where the
 * canonical form has none (either hex case), raw `@` in paths and names, raw `=` and `!` where they
 * are unambiguous, `C5:C5` for `C5` and `B:B` for `B`.
 */
function respell(a: ArtifactAddress, seed: number): string {
  const rnd = prng(seed);
  const escape = (ch: string) => {
    const hex = Array.from(new TextEncoder().encode(ch), (b) => `%${b.toString(16).padStart(2, "0")}`).join("");
    return rnd() < 0.5 ? hex.toUpperCase() : hex;
  };
  const mustEscape = /^[\p{Cc}\p{Z}\u061C\u200E\u200F\u202A-\u202E\u2066-\u2069\uFEFF"<>\\^`{|}?%#]$/u;
  const component = (value: string, rawAlso: string) =>
    Array.from(value, (ch) => (mustEscape.test(ch) || !rawAlso.includes(ch) && "/!@=".includes(ch) ? escape(ch) : rnd() < 0.3 ? escape(ch) : ch)).join("");
  const ref = (r: { column: number; row?: number }) => `${columnLetter(r.column)}${r.row ?? ""}`;
  let out = `artifact:${a.artifactId}`;
  if (a.version !== undefined) out += `@${a.version}`;
  if (a.file !== undefined) out += `/${a.file.split("/").map((s) => component(s, "@!=")).join("/")}`;
  const part = a.part;
  if (part?.kind === "chart") out += `#chart=${component(part.chart, "@=")}`;
  if (part?.kind === "name" || part?.kind === "range") {
    const name = part.kind === "name" ? part.name : part.sheet;
    // a raw `=` is fine unless the name would then begin with the raw `chart=`
    const spelled = component(name, name.startsWith("chart=") ? "@" : "@=");
    out += `#${spelled}`;
    if (part.kind === "range") {
      const { start, end } = part.range;
      const same = start.column === end.column && start.row === end.row;
      out += `!${same && rnd() < 0.5 ? ref(start) : `${ref(start)}:${ref(end)}`}`;
    }
  }
  return out;
}

describe("properties", () => {
  it("parse(format(a)) is a, for arbitrary addresses (unicode, spaces, #, @, !, %, / in names and paths)", () => {
    fc.assert(
      fc.property(arbAddress, (a) => {
        expect(parseAddress(formatAddress(a))).toStrictEqual(a);
      }),
      { numRuns: 2000 },
    );
  });

  it("canonical strings are stable: format(parse(s)) is s, and parse(format(parse(s))) is parse(s)", () => {
    fc.assert(
      fc.property(arbAddress, (a) => {
        const s = formatAddress(a);
        const parsed = parseAddress(s);
        expect(formatAddress(parsed)).toBe(s);
        expect(parseAddress(formatAddress(parsed))).toStrictEqual(parsed);
      }),
      { numRuns: 1000 },
    );
  });

  it("canonical strings hold no unsafe character raw, and each delimiter only in its place", () => {
    fc.assert(
      fc.property(arbAddress, (a) => {
        const s = formatAddress(a);
        expect(s).not.toMatch(/[\p{Cc}\p{Z}\u061C\u200E\u200F\u202A-\u202E\u2066-\u2069\uFEFF"<>\\^`{|}?]/u);
        expect(s.split("#").length - 1).toBe(a.part ? 1 : 0);
        expect(s.split("@").length - 1).toBe(a.version !== undefined ? 1 : 0);
        expect(s.split("!").length - 1).toBe(a.part?.kind === "range" ? 1 : 0);
        expect(s.split("/").length - 1).toBe(a.file ? a.file.split("/").length : 0);
        for (const [, hex] of s.matchAll(/%(..)/g)) expect(hex).toMatch(/^[0-9A-F]{2}$/);
      }),
      { numRuns: 1000 },
    );
  });

  it("every other spelling of an address parses to it and formats to its canonical string", () => {
    fc.assert(
      fc.property(arbAddress, fc.integer(), (a, seed) => {
        const spelled = respell(a, seed);
        expect(parseAddress(spelled)).toStrictEqual(a);
        expect(formatAddress(parseAddress(spelled))).toBe(formatAddress(a));
      }),
      { numRuns: 1000 },
    );
  });

  it("ranges round trip: parseRange(formatRange(r)) is r", () => {
    fc.assert(
      fc.property(arbRange, (r) => {
        expect(parseRange(formatRange(r))).toStrictEqual(r);
      }),
      { numRuns: 1000 },
    );
  });

  /** Characters and escapes that are wrong anywhere in an address (`%` alone only at the end, see below). */
  const BAD = [
    " ", "\t", "\n", "\u0000", "\u007f", "\u0085", "\u00a0", "\u2028", "\u202e", "\u2066", "\ufeff", "\u3000", "\ud800", "\udc00",
    "?", '"', "<", ">", "\\", "^", "`", "{", "|", "}",
    "%zz", "%g0", "%80", "%FF", "%C3", "%C3%28", "%E2%82", "%ED%A0%80", "%C0%AF", "%F4%90%80%80",
  ];
  const BAD_CHAR = BAD.filter((b) => b.length === 1);

  /**
   * The characters of a canonical string as written: one escaped character (`%E2%80%AE`) or one code
   * point each. A corruption goes between or in place of these (not inside one: `%C2` + `%80` + `%A0`
   * is a valid U+0080 followed by a stray byte, wrong only after the insertion).
   */
  function characters(s: string): string[] {
    const chars = s.match(/%(?:[0-7][0-9A-F]|[CD][0-9A-F]%[89AB][0-9A-F]|E[0-9A-F](?:%[89AB][0-9A-F]){2}|F[0-4](?:%[89AB][0-9A-F]){3})|[^]/gu) ?? [];
    expect(chars.join("")).toBe(s);
    return chars;
  }

  it("a valid address with something bad inserted is refused at or before the insertion, never past it", () => {
    fc.assert(
      fc.property(arbAddress, fc.nat(), fc.constantFrom(...BAD, "%"), (a, at, bad) => {
        const chars = characters(formatAddress(a));
        const k = bad === "%" ? chars.length : at % (chars.length + 1);
        const i = chars.slice(0, k).join("").length;
        const corrupt = [...chars.slice(0, k), bad, ...chars.slice(k)].join("");
        const err = refusal(() => parseAddress(corrupt));
        expect(err.input).toBe(corrupt);
        expect(err.position).toBeGreaterThanOrEqual(0);
        expect(err.position).toBeLessThanOrEqual(i);
      }),
      { numRuns: 3000 },
    );
  });

  it("a valid address with one character replaced by a bad one is refused at or before it, never past it", () => {
    fc.assert(
      fc.property(arbAddress, fc.nat(), fc.constantFrom(...BAD_CHAR), (a, at, bad) => {
        const chars = characters(formatAddress(a));
        const k = at % chars.length;
        const i = chars.slice(0, k).join("").length;
        const corrupt = [...chars.slice(0, k), bad, ...chars.slice(k + 1)].join("");
        const err = refusal(() => parseAddress(corrupt));
        expect(err.position).toBeGreaterThanOrEqual(0);
        expect(err.position).toBeLessThanOrEqual(i);
      }),
      { numRuns: 3000 },
    );
  });

  it("an escape with a hex digit spoiled is refused at or before its '%'", () => {
    fc.assert(
      fc.property(arbAddress, fc.nat(), fc.constantFrom("G", "z", "%", ""), (a, at, spoil) => {
        const s = formatAddress(a);
        const escapes = [...s.matchAll(/%[0-9A-F]{2}/g)].map((m) => m.index);
        fc.pre(escapes.length > 0);
        const i = escapes[at % escapes.length]!;
        // replace the second hex digit of that escape (with nothing: only when the escape ends the string)
        fc.pre(spoil !== "" || i + 3 === s.length);
        const corrupt = s.slice(0, i + 2) + spoil + s.slice(i + 3);
        const err = refusal(() => parseAddress(corrupt));
        expect(err.position).toBeLessThanOrEqual(i);
      }),
      { numRuns: 1000 },
    );
  });
});
