/**
 * A sheet's data over real HTTP (spec 2.7, 2.8, 4.3): `GET /api/artifacts/:id/versions/:v/sheets/:sheet/rows`
 * pages through the raw rows with the column types; SheetData reads the workbook (types, frozen panes,
 * widths, theme, charts) and parses each CSV once, shared by concurrent readers; owner-only.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEV_TOKEN, client, startApp, tokenFor, uploadFile } from "./helpers";
import { SheetData } from "../core/artifacts/sheet-data";
import type { App } from "../core/app";

let app: App;
let dev: ReturnType<typeof client>;
let alice: ReturnType<typeof client>;
let sheetId: string;
const ROWS = 450;

const put = (content: string, name: string, type: string) => uploadFile(app, content, name, type);

const WORKBOOK = {
  sheets: [
    { name: "Revenue", frozenColumns: 1, widths: { Month: 140 }, columns: { Month: "date", Revenue: { type: "currency", currency: "USD" }, Margin: { type: "percent", decimals: 1 }, Report: "link" } },
    { name: "Q3 notes & more", frozenRows: 0 },
  ],
  charts: [{ name: "Revenue by month", type: "bar", sheet: "Revenue", x: "Month", y: ["Revenue"] }],
};
const revenueRows = Array.from({ length: ROWS }, (_, i) => {
  const day = new Date(Date.UTC(2025, 0, 1 + i)).toISOString().slice(0, 10);
  return [day, String(1000 + i), (i % 100 / 100).toString(), i % 3 ? `https://example.com/r/${i}` : ""];
});
const REVENUE_CSV = ["Month,Revenue,Margin,Report", ...revenueRows.map((r) => r.join(","))].join("\n") + "\n\n\n";
const NOTES_CSV = 'Note,Author\n"Line one\nline two, with a comma",Ann\n"He said ""hi""",Bo\n';

beforeAll(async () => {
  app = await startApp();
  dev = client(app);
  alice = client(app, await tokenFor(app, "alice"));
  const res = await dev.post("/api/artifacts", {
    kind: "sheet",
    title: "Revenue",
    files: [
      { path: "workbook.json", file: await put(JSON.stringify(WORKBOOK), "workbook.json", "application/json") },
      { path: "theme.json", file: await put(JSON.stringify({ mode: "light", tokens: { "--chart-1": "oklch(0.62 0.17 255)" } }), "theme.json", "application/json") },
      { path: "sheets/Revenue.csv", file: await put(REVENUE_CSV, "Revenue.csv", "text/csv") },
      { path: "sheets/Q3 notes & more.csv", file: await put(NOTES_CSV, "notes.csv", "text/csv") },
    ],
  });
  expect(res.status).toBe(200);
  sheetId = res.body.artifact.id;
});
afterAll(() => app?.close());

const rowsPath = (sheet = "Revenue", query = "", id = sheetId, version = 1) => `/api/artifacts/${id}/versions/${version}/sheets/${encodeURIComponent(sheet)}/rows${query}`;

describe("GET …/sheets/:sheet/rows (spec 2.8)", () => {
  it("answers the first 200 raw rows with the columns, their types and the total", async () => {
    const res = await dev.get(rowsPath());
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      sheet: "Revenue",
      total: ROWS,
      offset: 0,
      columns: [
        { name: "Month", type: { type: "date" } },
        { name: "Revenue", type: { type: "currency", currency: "USD" } },
        { name: "Margin", type: { type: "percent", decimals: 1 } },
        { name: "Report", type: { type: "link" } },
      ],
    });
    expect(res.body.rows).toHaveLength(200);
    expect(res.body.rows[0]).toEqual(revenueRows[0]); // raw values: the reader's browser formats them
  });

  it("pages through every row with offset and limit, and answers no rows past the end", async () => {
    const seen: string[][] = [];
    for (let offset = 0; ; offset += 128) {
      const res = await dev.get(rowsPath("Revenue", `?offset=${offset}&limit=128`));
      expect(res.status).toBe(200);
      expect(res.body.offset).toBe(offset);
      if (res.body.rows.length === 0) break;
      seen.push(...res.body.rows);
    }
    expect(seen).toEqual(revenueRows); // the blank lines at the end are not rows
    expect((await dev.get(rowsPath("Revenue", "?offset=5000"))).body).toMatchObject({ total: ROWS, offset: 5000, rows: [] });
    expect((await dev.get(rowsPath("Revenue", "?limit=1000"))).body.rows).toHaveLength(ROWS);
  });

  it("reads a sheet whose name needs escaping, with quoted cells spanning lines; untyped columns are text", async () => {
    const res = await dev.get(rowsPath("Q3 notes & more"));
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      sheet: "Q3 notes & more",
      columns: [{ name: "Note", type: { type: "text" } }, { name: "Author", type: { type: "text" } }],
      total: 2,
      offset: 0,
      rows: [["Line one\nline two, with a comma", "Ann"], ['He said "hi"', "Bo"]],
    });
  });

  it("refuses limits outside 1 to 1000 and offsets that are not whole numbers (400)", async () => {
    for (const query of ["?limit=0", "?limit=1001", "?limit=abc", "?offset=-1", "?offset=1.5", "?limit="]) {
      const res = await dev.get(rowsPath("Revenue", query));
      expect(res.status, query).toBe(400);
      expect(res.body.error.code).toBe("invalid_request");
    }
  });

  it("is 404 for a sheet the version does not have (listing its sheets), a missing version, another kind", async () => {
    const missing = await dev.get(rowsPath("Costs"));
    expect(missing.status).toBe(404);
    expect(missing.body.error.message).toBe(`Version 1 of ${sheetId} has no sheet "Costs"; its sheets are: "Revenue", "Q3 notes & more"`);
    expect((await dev.get(rowsPath("Revenue", "", sheetId, 2))).status).toBe(404);
    expect((await dev.get(rowsPath("Revenue", "", "art_nothing"))).status).toBe(404);
    const doc = await dev.post("/api/artifacts", { kind: "document", title: "Doc", files: [{ path: "document.md", file: await put("# Doc\n", "document.md", "text/markdown") }] });
    const notSheet = await dev.get(rowsPath("Revenue", "", doc.body.artifact.id));
    expect(notSheet.status).toBe(404);
    expect(notSheet.body.error.message).toMatch(/is a document, not a sheet/);
  });

  it("is 404 for everyone but the owner (spec 4.3)", async () => {
    const res = await alice.get(rowsPath());
    expect(res.status).toBe(404);
    expect(res.body.error.code).toBe("not_found");
    expect((await client(app, null).get(rowsPath())).status).toBe(401);
  });

  it("is documented in the OpenAPI document with its query bounds", async () => {
    const doc = (await dev.get("/docs/openapi.json")).body;
    const op = doc.paths["/api/artifacts/{artifactId}/versions/{version}/sheets/{sheet}/rows"].get;
    expect(op.parameters.find((p: any) => p.name === "limit").schema).toMatchObject({ type: "integer", minimum: 1, maximum: 1000 });
    expect(op.parameters.find((p: any) => p.name === "offset").schema).toMatchObject({ type: "integer", minimum: 0 });
    expect(Object.keys(op.responses)).toEqual(expect.arrayContaining(["200", "400", "401", "404"]));
  });
});

describe("SheetData", () => {
  it("reads the workbook: every column typed, frozen panes, widths, totals, the theme and the charts", async () => {
    const data = app.container.resolve(SheetData);
    const book = await data.workbook({ kind: "identity", id: "dev" }, sheetId, 1);
    expect(book.sheets).toEqual([
      {
        name: "Revenue",
        frozenRows: 1,
        frozenColumns: 1,
        widths: { Month: 140 },
        columns: ["Month", "Revenue", "Margin", "Report"],
        types: { Month: { type: "date" }, Revenue: { type: "currency", currency: "USD" }, Margin: { type: "percent", decimals: 1 }, Report: { type: "link" } },
        total: ROWS,
      },
      { name: "Q3 notes & more", frozenRows: 0, frozenColumns: 0, widths: {}, columns: ["Note", "Author"], types: { Note: { type: "text" }, Author: { type: "text" } }, total: 2 },
    ]);
    expect(book.theme).toEqual({ mode: "light", tokens: { "--chart-1": "oklch(0.62 0.17 255)" } });
    expect(book.charts).toEqual([{ name: "Revenue by month", type: "bar", sheet: "Revenue", x: "Month", y: ["Revenue"] }]);
    expect(book).toMatchObject({ version: 1, latestVersion: 1, title: "Revenue" });
    await expect(data.workbook({ kind: "identity", id: "alice" }, sheetId, 1)).rejects.toMatchObject({ code: "not_found" });
  });

  it("parses a CSV once: concurrent first reads share the parse, later reads hit the cache", async () => {
    const data = app.container.resolve(SheetData);
    const csv = ["N,V", ...Array.from({ length: 5000 }, (_, i) => `${i},${i * 2}`)].join("\n");
    const res = await dev.post("/api/artifacts", {
      kind: "sheet",
      title: "Numbers",
      files: [
        { path: "workbook.json", file: await put(JSON.stringify({ sheets: [{ name: "N", columns: { N: "number", V: "number" } }] }), "workbook.json", "application/json") },
        { path: "sheets/N.csv", file: await put(csv, "N.csv", "text/csv") },
      ],
    });
    const id = res.body.artifact.id;
    const before = data.cache.parses;
    const reader = { kind: "identity", id: "dev" } as const;
    const tables = await Promise.all(Array.from({ length: 8 }, () => data.table(reader, id, 1, "N")));
    expect(data.cache.parses - before).toBe(1);
    expect(new Set(tables).size).toBe(1);
    expect(tables[0]!.rows).toHaveLength(5000);
    await data.table(reader, id, undefined, "N");
    expect(data.cache.parses - before).toBe(1);
    expect(data.cache.cells).toBeLessThanOrEqual(data.cache.maxCells);
  });
});
