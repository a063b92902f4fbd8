/** Row validation, keys and file parsing of datasets (no database). */
import * as v from "valibot";
import { describe, expect, it } from "vitest";
import { compileDataset, defineDataset, rowKey } from "../sdk/datasets";
import { checkRows, parseCsvRows, parseJsonLines, rowsFormatOf } from "./rows";
import type { RegisteredDataset } from "../project/registry";

const registered = (definition: Parameters<typeof defineDataset>[0]): RegisteredDataset => ({ id: "d", connectorId: "c", definition, compiled: compileDataset(definition) });
const prices = registered({ columns: { sku: "string", price: { type: "number", required: true }, qty: "integer", on: "date", at: "datetime", ok: "boolean" }, primaryKey: "sku" });

describe("row keys", () => {
  it("is the value for one column, escaped values joined with / for several", () => {
    expect(rowKey(["a/b"])).toBe("a/b");
    expect(rowKey([12])).toBe("12");
    expect(rowKey(["a/b", "c"])).toBe("a%2Fb/c");
    expect(rowKey(["a", "b/c"])).toBe("a/b%2Fc");
    expect(rowKey(["50%", "x"])).toBe("50%25/x");
  });
});

describe("compiled rows", () => {
  it("drops absent and null columns, orders columns as declared, and gives equal rows equal text", () => {
    const a = prices.compiled.check({ price: 1, sku: "k", ok: null });
    const b = prices.compiled.check({ sku: "k", price: 1 });
    expect(a).toEqual({ ok: true, key: "k", values: { sku: "k", price: 1 }, data: '{"sku":"k","price":1}' });
    expect(b).toEqual(a);
  });

  it("names the column of each problem", () => {
    const check = (row: unknown) => {
      const r = prices.compiled.check(row);
      return r.ok ? [] : r.problems.map((p) => p.column);
    };
    expect(check({ sku: "k" })).toEqual(["price"]);
    expect(check({ sku: "", price: 1 })).toEqual(["sku"]);
    expect(check({ sku: "k", price: 1, qty: 1.5, on: "2026-02-30x", at: "yesterday", ok: "yes" })).toEqual(["qty", "on", "at", "ok"]);
    expect(check({ sku: "k", price: 1, extra: 1 })).toEqual(["extra"]);
    expect(check("row")).toEqual([undefined]);
  });

  it("describes a valibot schema's columns; its primary key columns are required", () => {
    const d = compileDataset({ schema: v.object({ id: v.optional(v.string()), n: v.pipe(v.number(), v.integer()), t: v.pipe(v.string(), v.isoDate()), j: v.array(v.string()) }), primaryKey: "id" });
    expect(d.columns).toEqual([
      { name: "id", type: "string", required: true },
      { name: "n", type: "integer", required: true },
      { name: "t", type: "date", required: true },
      { name: "j", type: "json", required: true },
    ]);
    expect(d.check({ n: 1, t: "2026-01-01", j: [] })).toMatchObject({ ok: false, problems: [{ column: "id" }] });
  });
});

describe("checkRows", () => {
  it("lists every problem with its 1-based row and line, and refuses duplicate keys", () => {
    try {
      checkRows(prices, [{ value: { sku: "a", price: 1 }, line: 2 }, { value: { sku: "b", price: "x" }, line: 3 }, { value: { sku: "a", price: 2 }, line: 5 }], "f.csv");
      expect.unreachable();
    } catch (err: any) {
      expect(err.code).toBe("invalid_request");
      expect(err.message).toContain('Row 2 (line 3 of f.csv), column "price"');
      expect(err.message).toContain("and 1 more problems");
      expect(err.details).toMatchObject({ row: 2, line: 3, column: "price", file: "f.csv", totalProblems: 2 });
      expect(err.details.problems[1]).toMatchObject({ row: 3, line: 5, column: "sku", message: 'duplicate primary key "a" (row 1 has the same key)' });
    }
    expect(checkRows(prices, [{ value: { sku: "a", price: 1 } }])).toEqual([{ key: "a", data: '{"sku":"a","price":1}' }]);
  });
});

describe("rows files", () => {
  it("converts CSV cells to the column types; an empty cell is absent; lines are the file's", () => {
    const rows = parseCsvRows(prices, '\uFEFFsku,price,qty,ok,on\na,1.5,2,TRUE,\n\n"b,1",-3e1,x,no,2026-01-02\n', "p.csv");
    expect(rows).toEqual([
      { value: { sku: "a", price: 1.5, qty: 2, ok: true }, line: 2 },
      { value: { sku: "b,1", price: -30, qty: "x", ok: false, on: "2026-01-02" }, line: 4 },
    ]);
    expect(() => parseCsvRows(prices, "sku,colour\n", "p.csv")).toThrow('Column "colour" of p.csv is not a column of dataset "d"');
    expect(() => parseCsvRows(prices, "sku,sku\n", "p.csv")).toThrow('Column "sku" appears twice');
    expect(() => parseCsvRows(prices, 'sku,price\n"a,1\n', "p.csv")).toThrow("p.csv is not valid CSV");
    expect(() => parseCsvRows(prices, "sku,price\na,1,2\n", "p.csv")).toThrow("not valid CSV at line 2");
  });

  it("reads JSON Lines and names the line that is not JSON", () => {
    expect(parseJsonLines(prices, '{"sku":"a"}\r\n\r\n{"sku":"b"}', "r.jsonl")).toEqual([{ value: { sku: "a" }, line: 1 }, { value: { sku: "b" }, line: 3 }]);
    expect(() => parseJsonLines(prices, '{"sku":"a"}\nnope\n', "r.jsonl")).toThrow("Line 2 of r.jsonl is not JSON");
  });

  it("takes the format from the request, the content type or the name", () => {
    expect(rowsFormatOf({ name: "a.bin", contentType: "application/octet-stream" }, "csv")).toBe("csv");
    expect(rowsFormatOf({ name: "a", contentType: "text/csv; charset=utf-8" })).toBe("csv");
    expect(rowsFormatOf({ name: "a.ndjson", contentType: "text/plain" })).toBe("jsonl");
    expect(rowsFormatOf({ name: "a", contentType: "application/x-ndjson" })).toBe("jsonl");
    expect(() => rowsFormatOf({ name: "a.txt", contentType: "text/plain" })).toThrow('send format "csv" or "jsonl"');
  });
});
