/**
 * Artifact addresses (spec 2.7, 9): every form of the spec's table, the canonical spelling, columns and
 * ranges, and refusals with exact positions (tables). The properties over arbitrary addresses are in
 * address.property.test.ts.
 */
import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { type ArtifactAddress, formatAddress, isArtifactAddress, parseAddress } from "./address";
import { toApiError } from "./address-error";
import { type CellRange, columnIndex, columnLetter, formatRange, MAX_ROW, parseRange } from "./cell-range";
import { block, cell, cols, refusal } from "../../test/helpers-artifacts";

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
