/**
 * Datasets and projections against the real sandbox app (spec 2.3 `projection` origin, 2.4
 * `dataset.version.committed`, 4.1 `GET /api/datasets`, 5; issue 14): versions committed over HTTP
 * (rows in the body, CSV and JSON Lines files), by a sync (retried: committed once), projected into
 * `product` objects chunk by chunk; validation, abort, one open transaction, permissions, and the
 * projection's ownership of `product`.
 */
import { describe, expect, it } from "vitest";
import { allEvents, client, eventually, sandboxSuite, uploadFile } from "./helpers";
import { DatasetStore, END_CHANGED_ROWS } from "../core/datasets/store";
import { createActivities } from "../core/runtime/activities";
import sqlite3 from "sqlite3";
import { Database } from "../core/store/db";
import { openConnection } from "../core/store/sql";
import { EventLog } from "../core/events/log";
import { OntologyStore } from "../core/ontology/store";
import { ActionRunner } from "../core/runtime/actions";
import { ProjectRegistry } from "../core/project/registry";
import { HandlerRunner } from "../core/runtime/handler";
import { SAMPLE_PRICE_LIST } from "../sandbox/billing";

const CHUNK = 250;
const suite = sandboxSuite({ env: { SVC_PROJECTION_CHUNK_ROWS: String(CHUNK) } });
const dev = () => client(() => suite.app);
const as = (who: "alice" | "auditor" | "opsBot") => client(() => suite.app, suite.tokens[who]);
const P = "/api/datasets/price-list";
const product = (sku: string, unitPrice = 1, extra: Record<string, unknown> = {}) => ({ sku, name: `Product ${sku}`, unitPrice, currency: "EUR", ...extra });
const range = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => product(`P-${String(from + i).padStart(4, "0")}`, from + i));

/** Every row of a committed version, paging through the rows endpoint. */
async function versionRows(version: number, pageSize = 300): Promise<any[]> {
  const out: any[] = [];
  let token: string | undefined;
  do {
    const res = await dev().get(`${P}/versions/${version}/rows?pageSize=${pageSize}${token ? `&nextPageToken=${token}` : ""}`);
    expect(res.status, res.text).toBe(200);
    out.push(...res.body.data);
    token = res.body.nextPageToken;
  } while (token);
  return out;
}

/**
 * Waits until the projection reached `version` and the outbox delivered its events to the stream (the
 * last chunk's events reach the stream after the commit that shows the version projected), then answers
 * the product events it produced for it.
 */
async function projected(version: number): Promise<any[]> {
  await eventually(async () => (await dev().get(P)).body.projection.projectedVersion === version);
  await eventually(async () => (await dev().get("/api/status")).body.parts.outbox.backlog === 0);
  expect((await dev().get(P)).body.projection).toMatchObject({ objectTypeId: "product", projectedVersion: version, status: "idle" });
  return (await allEvents(dev(), "&topic=objects")).filter((e) => e.origin?.kind === "projection" && e.origin.version === version);
}

const ids = (events: any[], type: string) => events.filter((e) => e.type === type).map((e) => e.payload.primaryId).sort();

describe("a dataset's versions and their projection", () => {
  it("seed v1, snapshot v2, append v3, snapshot with removals v4: rows of each version and exactly the right object events", async () => {
    // v1: the seed's sample, projected before the app answered
    expect((await dev().get(P)).body).toMatchObject({ latestVersion: 1, rowCount: 5, projection: { projectedVersion: 1, status: "idle" } });
    expect(ids(await projected(1), "object.created")).toEqual(SAMPLE_PRICE_LIST.map((r) => r.sku).sort());

    // v2 snapshot, written in two calls: the sample unchanged + 700 new rows
    // the transaction's kind is `transaction`, as in a version and in POST …/versions (`type`, its older name, is still taken: below)
    const both = await dev().post(`${P}/transactions`, { transaction: "snapshot", type: "snapshot" });
    expect([both.status, both.body.error?.message]).toEqual([400, expect.stringContaining("give transaction: snapshot or append (type is its older name; not both)")]);
    const opened = await dev().post(`${P}/transactions`, { transaction: "snapshot" });
    expect(opened.status, opened.text).toBe(201);
    expect(opened.body).toMatchObject({ datasetId: "price-list", version: 2, transaction: "snapshot", status: "open", rowCount: 0, source: { kind: "http" }, openedBy: { type: "user", id: "dev" } });
    expect((await dev().post(`${P}/transactions/2/rows`, { rows: [...SAMPLE_PRICE_LIST, ...range(0, 300)] })).body.rowCount).toBe(305);
    expect((await dev().post(`${P}/transactions/2/rows`, { rows: range(300, 700) })).body.rowCount).toBe(705);
    expect((await dev().get(P)).body.openTransaction).toMatchObject({ version: 2, transaction: "snapshot" });
    const v2 = await dev().post(`${P}/transactions/2/commit`);
    expect(v2.status, v2.text).toBe(200);
    expect(v2.body).toMatchObject({ version: 2, status: "committed", rowCount: 705, totalRows: 705 });
    const e2 = await projected(2);
    expect(e2.map((e) => e.type).every((t) => t === "object.created")).toBe(true);
    expect(ids(e2, "object.created")).toEqual(range(0, 700).map((r) => r.sku));
    // chunks of at most CHUNK rows, one commit each: 250 + 250 + 200
    const commits = new Map<string, number>();
    for (const e of e2) commits.set(e.commitId, (commits.get(e.commitId) ?? 0) + 1);
    expect([...commits.values()].sort((a, b) => b - a)).toEqual([250, 250, 200]);
    for (const e of e2) {
      expect(e.origin).toEqual({ kind: "projection", datasetId: "price-list", version: 2 });
      expect(e.actor).toBeUndefined();
      expect(e.correlationId).toBe("projection:price-list:2");
    }
    expect(e2.find((e) => e.payload.primaryId === "P-0042").payload).toMatchObject({ objectTypeId: "product", properties: { name: "Product P-0042", unitPrice: 42, currency: "EUR" } });

    // v3 append: 3 new, SKU-SEAT changed, SKU-API-1K identical (no event)
    const v3 = await dev().post(`${P}/versions`, { transaction: "append", rows: [...range(700, 703), { ...SAMPLE_PRICE_LIST[2], unitPrice: 15 }, SAMPLE_PRICE_LIST[0]] });
    expect(v3.status, v3.text).toBe(201);
    expect(v3.body).toMatchObject({ version: 3, transaction: "append", status: "committed", rowCount: 5, totalRows: 708 });
    const e3 = await projected(3);
    expect(ids(e3, "object.created")).toEqual(["P-0700", "P-0701", "P-0702"]);
    expect(e3.filter((e) => e.type === "object.updated").map((e) => [e.payload.primaryId, e.payload.propertyChanges])).toEqual([["SKU-SEAT", [{ property: "unitPrice", before: 12, after: 15 }]]]);
    expect(e3).toHaveLength(4);

    // v4 snapshot: SKU-LEGACY and P-0000..P-0009 gone, SKU-STORAGE renamed
    const keep = (await versionRows(3)).filter((r) => r.sku !== "SKU-LEGACY" && !/^P-000\d$/.test(r.sku)).map((r) => (r.sku === "SKU-STORAGE" ? { ...r, name: "Storage (GB-month)" } : r));
    const v4 = await dev().post(`${P}/versions`, { transaction: "snapshot", rows: keep });
    expect(v4.body).toMatchObject({ version: 4, rowCount: 697, totalRows: 697 });
    const e4 = await projected(4);
    expect(ids(e4, "object.deleted")).toEqual(["P-0000", "P-0001", "P-0002", "P-0003", "P-0004", "P-0005", "P-0006", "P-0007", "P-0008", "P-0009", "SKU-LEGACY"]);
    expect(e4.filter((e) => e.type === "object.updated").map((e) => [e.payload.primaryId, e.payload.propertyChanges])).toEqual([["SKU-STORAGE", [{ property: "name", before: "Storage (per GB-month)", after: "Storage (GB-month)" }]]]);
    expect(e4).toHaveLength(12);
    expect((await dev().get("/api/objects/product/SKU-LEGACY")).status).toBe(404);
    expect((await dev().get("/api/objects/product/SKU-SEAT")).body.properties.unitPrice).toBe(15);

    // every committed version stays readable, in key order
    expect((await versionRows(1)).map((r) => r.sku)).toEqual(SAMPLE_PRICE_LIST.map((r) => r.sku).sort());
    const r2 = await versionRows(2, 101);
    expect(r2).toHaveLength(705);
    expect(r2.map((r) => r.sku)).toEqual(r2.map((r) => r.sku).sort());
    expect(r2.find((r) => r.sku === "SKU-SEAT").unitPrice).toBe(12);
    expect((await versionRows(3)).find((r) => r.sku === "SKU-SEAT").unitPrice).toBe(15);
    expect((await versionRows(4)).map((r) => r.sku)).toEqual(keep.map((r) => r.sku).sort());

    // one dataset.version.committed per version, actor = the committing principal (none for the seed)
    const committed = await allEvents(dev(), "&topic=datasets");
    expect(committed.map((e) => [e.payload.version, e.payload.transaction, e.payload.rowCount, e.payload.totalRows, e.actor?.id])).toEqual([
      [1, "snapshot", 5, 5, undefined],
      [2, "snapshot", 705, 705, "dev"],
      [3, "append", 5, 708, "dev"],
      [4, "snapshot", 697, 697, "dev"],
    ]);
    for (const e of committed) expect(e).toMatchObject({ type: "dataset.version.committed", origin: { kind: "runtime", datasetId: "price-list" }, payload: { datasetId: "price-list" } });
    const versions = await dev().get(`${P}/versions?pageSize=3`);
    expect(versions.body.data.map((x: any) => x.version)).toEqual([4, 3, 2]);
    expect((await dev().get(`${P}/versions?pageSize=3&nextPageToken=${versions.body.nextPageToken}`)).body).toEqual({ data: [expect.objectContaining({ version: 1, source: { kind: "seed", id: "seed" } })] });
  }, 120_000);

  it("names the field of a body that is not { transaction, rows } or { transaction, file, format? }", async () => {
    const file = { id: "file_0123456789ABCDEFGHJKMNPQRS" };
    const cases: [unknown, string][] = [
      [{ transaction: "bogus", rows: [] }, 'transaction must be "snapshot" or "append"'],
      [{ rows: [] }, 'transaction must be "snapshot" or "append" (it is missing)'],
      [{ transaction: "append", file, format: "xml" }, 'format must be "csv" or "jsonl"'],
      [{ transaction: "append", rows: [], file }, "gives rows and a file: send one of them"],
      [{ transaction: "append", rows: [], colour: 1 }, '"colour", which is not a field'],
      [{ transaction: "append" }, "has neither rows nor file"],
      [{ transaction: "append", file: "file_1" }, 'file must be { id: "file_…" }'],
    ];
    for (const [body, message] of cases) {
      const res = await dev().post(`${P}/versions`, body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.error.message, JSON.stringify(body)).toContain(message);
    }
    const rows = await dev().post(`${P}/transactions`, { type: "append" });
    expect(rows.headers.get("deprecation")).toBe(`@${Date.UTC(2026, 10, 29) / 1000}`); // type is transaction's older name
    const version = rows.body.version;
    const toRows = await dev().post(`${P}/transactions/${version}/rows`, { rows: [], file });
    expect(toRows.body.error.message).toContain("gives rows and a file: send one of them");
    expect((await dev().post(`${P}/transactions/${version}/abort`, {})).status).toBe(200);
  });

  it("refuses invalid rows naming row and column, and duplicate keys, committing nothing", async () => {
    const before = (await dev().get(`${P}/versions`)).body.data;
    const events = (await allEvents(dev(), "&topic=datasets")).length;
    const bad = await dev().post(`${P}/versions`, { transaction: "append", rows: [product("OK-1"), product("BAD-2", "abc" as never), product("OK-3")] });
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe("invalid_request");
    expect(bad.body.error.message).toContain('Row 2, column "unitPrice"');
    expect(bad.body.error.details).toMatchObject({ datasetId: "price-list", row: 2, column: "unitPrice", totalProblems: 1 });
    const unknown = await dev().post(`${P}/versions`, { transaction: "append", rows: [product("OK-1"), { ...product("X-2"), colour: "red" }] });
    expect(unknown.status).toBe(400);
    expect(unknown.body.error.details).toMatchObject({ row: 2, column: "colour" });
    const missing = await dev().post(`${P}/versions`, { transaction: "append", rows: [{ sku: "X-1", unitPrice: 1, currency: "EUR" }] });
    expect(missing.body.error.details).toMatchObject({ row: 1, column: "name" });
    const dup = await dev().post(`${P}/versions`, { transaction: "snapshot", rows: [product("D-1"), product("D-2"), product("D-1", 9)] });
    expect(dup.status).toBe(400);
    expect(dup.body.error.message).toContain('Row 3, column "sku": duplicate primary key "D-1" (row 1 has the same key)');
    // across two calls of one transaction too; the open transaction keeps only the accepted call
    const open = (await dev().post(`${P}/transactions`, { type: "append" })).body.version;
    expect((await dev().post(`${P}/transactions/${open}/rows`, { rows: [product("D-1")] })).status).toBe(200);
    const again = await dev().post(`${P}/transactions/${open}/rows`, { rows: [product("D-3"), product("D-1", 2)] });
    expect(again.status).toBe(400);
    expect(again.body.error.details).toMatchObject({ row: 2, column: "sku" });
    expect((await dev().post(`${P}/transactions/${open}/abort`)).body).toMatchObject({ status: "aborted", rowCount: 1, abortReason: "requested" });
    // nothing committed: the versions are the same plus the aborted one, no event
    const after = (await dev().get(`${P}/versions`)).body.data;
    expect(after.slice(1)).toEqual(before);
    expect(after[0]).toMatchObject({ version: open, status: "aborted" });
    expect((await allEvents(dev(), "&topic=datasets")).length).toBe(events);
  });

  it("refuses a primary key over 1,024 characters, naming row, column and length", async () => {
    const long = await dev().post(`${P}/versions`, { transaction: "append", rows: [product("OK-1"), product("K".repeat(1025))] });
    expect(long.status).toBe(400);
    expect(long.body.error.message).toContain('Row 2, column "sku": the primary key is 1025 characters long; at most 1024');
    // 1,024 is taken (in a transaction aborted after, so the dataset stays as the other tests expect it)
    const open = (await dev().post(`${P}/transactions`, { type: "append" })).body.version;
    expect((await dev().post(`${P}/transactions/${open}/rows`, { rows: [product("K".repeat(1024))] })).status).toBe(200);
    expect((await dev().post(`${P}/transactions/${open}/abort`)).status).toBe(200);
  });

  it("a commit finds the rows it changes from the rows it received, by key: its cost follows them, not the dataset's size", async () => {
    // the IN (subquery) form scanned every current row of the dataset against the staged keys: one
    // 2 MB key over 300,000 rows held the writer, and so every write of the service, for minutes
    // on a connection of its own: an EXPLAIN on the app's reader left it on an old snapshot
    const conn = await openConnection(suite.app.container.resolve(Database).file, sqlite3.OPEN_READONLY);
    const plan = (await conn.all<{ detail: string }>(`EXPLAIN QUERY PLAN ${END_CHANGED_ROWS}`, [1, "price-list", 1]).finally(() => conn.close())).map((r) => r.detail);
    // the staged rows are the outer loop; each finds its current row by key, then that row is updated by key
    expect(plan).toEqual([
      "SEARCH dataset_rows USING PRIMARY KEY (dataset_id=? AND row_key=? AND from_version=?)",
      expect.stringMatching(/^LIST SUBQUERY \d+$/),
      "SEARCH s USING PRIMARY KEY (dataset_id=? AND version=?)",
      "SEARCH r USING PRIMARY KEY (dataset_id=? AND row_key=?)",
    ]);
  });

  it("keeps one open transaction at a time; abort drops its rows and its number is not reused", async () => {
    const latest = (await dev().get(P)).body.latestVersion;
    const open = await dev().post(`${P}/transactions`, { type: "snapshot" });
    expect(open.status).toBe(201);
    const n = open.body.version;
    const second = await dev().post(`${P}/transactions`, { type: "append" });
    expect(second.status).toBe(409);
    expect(second.body.error).toMatchObject({ code: "conflict", details: { openVersion: n } });
    expect(second.body.error.message).toContain(`version ${n}`);
    expect((await dev().post(`${P}/versions`, { transaction: "append", rows: [] })).status).toBe(409);
    await dev().post(`${P}/transactions/${n}/rows`, { rows: [product("GONE-1")] });
    expect((await dev().get(`${P}/versions/${n}/rows`)).status).toBe(404);
    expect((await dev().post(`${P}/transactions/${n}/abort`)).body).toMatchObject({ version: n, status: "aborted" });
    expect((await dev().post(`${P}/transactions/${n}/commit`)).status).toBe(409);
    expect((await dev().post(`${P}/transactions/${n}/rows`, { rows: [product("GONE-2")] })).status).toBe(409);
    // aborting again (a retry whose answer was lost) answers the aborted version
    expect((await dev().post(`${P}/transactions/${n}/abort`)).body).toMatchObject({ version: n, status: "aborted", abortReason: "requested" });
    expect((await dev().post(`${P}/transactions/9999/commit`)).status).toBe(404);
    expect((await dev().get(`${P}/versions/${n}/rows`)).status).toBe(404);
    expect((await dev().get(P)).body).toMatchObject({ latestVersion: latest });
    expect((await dev().get(P)).body.openTransaction).toBeUndefined();
    const next = await dev().post(`${P}/transactions`, { type: "append" });
    expect(next.body.version).toBe(n + 1);
    expect((await dev().post(`${P}/transactions/${n + 1}/abort`)).status).toBe(200);
    expect((await dev().get("/api/objects/product/GONE-1")).status).toBe(404);
  });

  it("reads rows from CSV and JSON Lines files uploaded through POST /api/files", async () => {
    const csv = "sku,name,unitPrice,currency,active\nCSV-1,Widget,2.5,EUR,true\nCSV-2,\"Gadget, large\",10,EUR,\n\nCSV-3,Gizmo,1e2,USD,FALSE\n";
    const file = await uploadFile(suite.app, csv, "prices.csv", "text/csv");
    const n = (await dev().post(`${P}/transactions`, { type: "append" })).body.version;
    const written = await dev().post(`${P}/transactions/${n}/rows`, { file });
    expect(written.status, written.text).toBe(200);
    expect(written.body).toMatchObject({ rowCount: 3, source: { kind: "upload", fileId: file.id } });
    const committed = await dev().post(`${P}/transactions/${n}/commit`);
    expect(committed.body).toMatchObject({ status: "committed", rowCount: 3 });
    // committing again (a retry whose answer was lost) answers the same version and writes nothing
    const events = (await allEvents(dev(), "&topic=datasets")).length;
    const again = await dev().post(`${P}/transactions/${n}/commit`);
    expect([again.status, again.body]).toEqual([200, committed.body]);
    expect((await dev().post(`${P}/transactions/${n}/abort`)).status).toBe(409);
    expect((await allEvents(dev(), "&topic=datasets")).length).toBe(events);
    const rows = (await versionRows(n)).filter((r) => r.sku.startsWith("CSV-"));
    expect(rows).toEqual([
      { sku: "CSV-1", name: "Widget", unitPrice: 2.5, currency: "EUR", active: true },
      { sku: "CSV-2", name: "Gadget, large", unitPrice: 10, currency: "EUR" },
      { sku: "CSV-3", name: "Gizmo", unitPrice: 100, currency: "USD", active: false },
    ]);
    await eventually(async () => (await dev().get("/api/objects/product/CSV-2")).status === 200);

    const jsonl = `${JSON.stringify(product("JL-1", 3))}\n\n${JSON.stringify(product("JL-2", 4, { active: true }))}\n`;
    const one = await dev().post(`${P}/versions`, { transaction: "append", file: await uploadFile(suite.app, jsonl, "prices.jsonl") });
    expect(one.status, one.text).toBe(201);
    expect(one.body).toMatchObject({ rowCount: 2, source: { kind: "upload" } });
    expect((await versionRows(one.body.version)).filter((r) => r.sku.startsWith("JL-")).map((r) => r.unitPrice)).toEqual([3, 4]);

    // refusals name row, file line and column; nothing is committed
    const latest = (await dev().get(P)).body.latestVersion;
    const badCsv = await dev().post(`${P}/versions`, { transaction: "append", file: await uploadFile(suite.app, "sku,name,unitPrice,currency\nB-1,One,1,EUR\n\nB-2,Two,cheap,EUR\n", "bad.csv", "text/csv") });
    expect(badCsv.status).toBe(400);
    expect(badCsv.body.error.message).toContain('Row 2 (line 4 of bad.csv), column "unitPrice"');
    expect(badCsv.body.error.details).toMatchObject({ row: 2, line: 4, column: "unitPrice", file: "bad.csv" });
    const badHeader = await dev().post(`${P}/versions`, { transaction: "append", file: await uploadFile(suite.app, "sku,price\nB-1,1\n", "header.csv", "text/csv") });
    expect(badHeader.body.error).toMatchObject({ code: "invalid_request", details: { column: "price", line: 1 } });
    const badJson = await dev().post(`${P}/versions`, { transaction: "append", format: "jsonl", file: await uploadFile(suite.app, `${JSON.stringify(product("J-1"))}\n{oops\n`, "rows.txt") });
    expect(badJson.body.error).toMatchObject({ code: "invalid_request", details: { line: 2 } });
    // a JSON Lines row that is an array is not a row (it read as every column missing)
    const arrayRow = await dev().post(`${P}/versions`, { transaction: "append", format: "jsonl", file: await uploadFile(suite.app, "[1,2]\n", "rows.jsonl") });
    expect(arrayRow.body.error).toMatchObject({ code: "invalid_request", message: "Line 1 of rows.jsonl is a JSON array: each line is one row, a JSON object of the dataset's columns", details: { line: 1 } });
    // an empty file (a failed export, most often) is refused: as a snapshot it emptied the dataset
    for (const [name, type] of [["empty.csv", "text/csv"], ["empty.jsonl", "application/x-ndjson"]] as const) {
      const empty = await dev().post(`${P}/versions`, { transaction: "snapshot", file: await uploadFile(suite.app, "\uFEFF \n", name, type) });
      expect([empty.status, empty.body.error?.message]).toEqual([400, expect.stringMatching(new RegExp(`^${name.replace(".", "\\.")} is empty: .*To empty the dataset on purpose, commit a snapshot of "rows": \\[\\]$`))]);
    }
    expect((await dev().get(P)).body.rowCount).toBeGreaterThan(0);
    const unknownFormat = await dev().post(`${P}/versions`, { transaction: "append", file: await uploadFile(suite.app, "x", "rows.bin") });
    expect(unknownFormat.body.error.message).toContain('send format "csv" or "jsonl"');
    expect((await dev().post(`${P}/versions`, { transaction: "append", file: { id: "file_doesnotexist" } })).status).toBe(404);
    expect((await dev().get(P)).body.latestVersion).toBe(latest);
  });

  it("a sync's ctx.datasets.snapshot commits one version, once even when its activity is retried", async () => {
    const c = suite.app.container;
    const activities = createActivities({ db: c.resolve(Database), events: c.resolve(EventLog), ontology: c.resolve(OntologyStore), actions: c.resolve(ActionRunner), project: c.resolve(ProjectRegistry), handlers: c.resolve(HandlerRunner) });
    const latest = (await dev().get(P)).body.latestVersion;
    const input = { syncId: "price-list-sync", runId: "run_dataset_retry", input: { rows: SAMPLE_PRICE_LIST } };
    expect(await activities.runSync(input)).toEqual({ rows: 5 });
    expect(await activities.runSync(input)).toEqual({ rows: 5 }); // Temporal's retry of the same activity
    const versions = (await dev().get(`${P}/versions`)).body.data.filter((x: any) => x.version > latest);
    expect(versions).toEqual([expect.objectContaining({ version: latest + 1, transaction: "snapshot", status: "committed", rowCount: 5, totalRows: 5, source: { kind: "sync", id: "run_dataset_retry" } })]);
    expect((await allEvents(dev(), "&topic=datasets")).filter((e) => e.payload.version > latest).map((e) => [e.payload.version, e.correlationId, e.actor])).toEqual([[latest + 1, "run_dataset_retry", undefined]]);
    await projected(latest + 1);
    expect((await dev().post("/api/objects/query", { objectTypeId: "product", pageSize: 100 })).body.data.map((o: any) => o.primaryId)).toEqual(SAMPLE_PRICE_LIST.map((r) => r.sku).sort());

    // and the real run on Temporal (the sample list: nothing changes but the version number)
    const run = await dev().post("/api/syncs/price-list-sync/runs", {});
    expect(run.status).toBe(200);
    await eventually(async () => (await dev().get(`/api/sync-runs/${run.body.runId}`)).body.status === "completed", 30_000);
    expect((await dev().get(`${P}/versions`)).body.data[0]).toMatchObject({ version: latest + 2, source: { kind: "sync", id: run.body.runId }, rowCount: 5, totalRows: 5 });
  });

  it("permissions: view reads, edit writes, neither sees nothing; unknown datasets are 404 first", async () => {
    const writes: Array<[string, string, unknown]> = [
      ["POST", `${P}/transactions`, { type: "append" }],
      ["POST", `${P}/versions`, { transaction: "append", rows: [] }],
      ["POST", `${P}/transactions/1/rows`, { rows: [] }],
      ["POST", `${P}/transactions/1/commit`, undefined],
      ["POST", `${P}/transactions/1/abort`, undefined],
    ];
    const reads = [P, `${P}/versions`, `${P}/versions/1`, `${P}/versions/1/rows`];
    // alice holds view:dataset:price-list only
    expect((await as("alice").get("/api/datasets")).body.data.map((d: any) => d.id)).toEqual(["price-list"]);
    for (const path of reads) expect((await as("alice").get(path)).status, path).toBe(200);
    for (const [method, path, body] of writes) {
      const res = await as("alice").call(method, path, body);
      expect(res.status, path).toBe(403);
      expect(res.body.error.details.permission).toBe("edit:dataset:price-list");
    }
    expect((await as("alice").get("/api/events?topic=datasets&limit=1000")).body.count).toBeGreaterThan(0);
    // the auditor holds neither: listed nothing, refused everything, sees no dataset event
    expect((await as("auditor").get("/api/datasets")).body).toEqual({ data: [] });
    for (const path of reads) {
      const res = await as("auditor").get(path);
      expect(res.status, path).toBe(403);
      expect(res.body.error.details.permission).toBe("view:dataset:price-list");
    }
    for (const [method, path, body] of writes) expect((await as("auditor").call(method, path, body)).status, path).toBe(403);
    expect((await as("auditor").get("/api/events?topic=datasets&limit=1000")).body.count).toBe(0);
    // unknown dataset: 404 before any permission check; no token: 401
    for (const who of [dev(), as("auditor")]) {
      expect((await who.get("/api/datasets/nope")).status).toBe(404);
      expect((await who.post("/api/datasets/nope/transactions", { type: "append" })).status).toBe(404);
      expect((await who.get("/api/datasets/nope/versions/1/rows")).status).toBe(404);
    }
    expect((await client(() => suite.app, null).get("/api/datasets")).status).toBe(401);
  });

  it("refuses writes to projected objects from anyone but the projection (409), writing nothing", async () => {
    const direct = await dev().post("/api/ontology/writes", { changes: [{ op: "object.update", objectTypeId: "product", primaryId: "SKU-SEAT", properties: { unitPrice: 1 } }] });
    expect(direct.status).toBe(409);
    expect(direct.body.error).toMatchObject({ code: "conflict", message: "objects of type product are projected from dataset price-list; commit a new dataset version instead", details: { datasetId: "price-list", objectTypeId: "product" } });
    const mixed = await dev().post("/api/ontology/writes", { changes: [{ op: "object.create", objectTypeId: "customer", primaryId: "cus_proj", properties: { name: "X" } }, { op: "object.delete", objectTypeId: "product", primaryId: "SKU-SEAT" }] });
    expect(mixed.status).toBe(409);
    expect((await dev().get("/api/objects/customer/cus_proj")).status).toBe(404);
    const system = suite.app.container.resolve(OntologyStore).commit([{ op: "object.upsert", objectTypeId: "product", primaryId: "SKU-NEW", properties: { name: "n", unitPrice: 1, currency: "EUR" } }], { origin: { kind: "runtime" }, correlationId: "test" });
    await expect(system).rejects.toMatchObject({ code: "conflict" });
    const other = suite.app.container.resolve(OntologyStore).commit([{ op: "object.delete", objectTypeId: "product", primaryId: "SKU-SEAT" }], { origin: { kind: "projection", datasetId: "another" }, correlationId: "test" });
    await expect(other).rejects.toMatchObject({ code: "conflict" });
    expect((await dev().get("/api/objects/product/SKU-SEAT")).status).toBe(200);
    expect((await dev().get("/api/objects/product/SKU-NEW")).status).toBe(404);
  });
});

describe("an open transaction nobody finishes (SVC_DATASET_TRANSACTION_IDLE_MS, 1 h here)", () => {
  const HOUR = 3_600_000;
  const versionOf = async (n: number) => (await dev().get(`${P}/versions?pageSize=100`)).body.data.find((v: any) => v.version === n);
  /** Moves the open version's clock back: opened and last written `agoMs` ago (no waiting an hour). */
  const backdate = (n: number, agoMs: number) => {
    const at = new Date(Date.now() - agoMs).toISOString();
    return suite.app.container.resolve(Database).transaction((tx) => tx.run("UPDATE dataset_versions SET opened_at = ?, touched_at = ? WHERE dataset_id = 'price-list' AND version = ?", [at, at, n]));
  };

  it("holds the dataset while written to; once idle past the limit the next open aborts it and goes on", async () => {
    const opened = await dev().post(`${P}/transactions`, { type: "snapshot" });
    expect(opened.status).toBe(201);
    const n = opened.body.version;
    const shown = (await dev().get(P)).body.openTransaction;
    expect(Date.parse(shown.expiresAt) - Date.parse(shown.openedAt)).toBe(HOUR);
    await backdate(n, HOUR - 60_000);
    const refused = await dev().post(`${P}/transactions`, { type: "append" });
    expect(refused.status).toBe(409);
    expect(refused.body.error).toMatchObject({ code: "conflict", details: { openVersion: n, expiresAt: expect.any(String) } });
    expect(Date.parse(refused.body.error.details.expiresAt) - Date.now()).toBeLessThan(61_000);
    expect(refused.body.error.message).toContain(`it may be aborted from ${refused.body.error.details.expiresAt}`);
    // rows written restart its clock: an hour from now again
    expect((await dev().post(`${P}/transactions/${n}/rows`, { rows: [product("IDLE-1")] })).status).toBe(200);
    expect(Date.parse((await dev().get(P)).body.openTransaction.expiresAt) - Date.now()).toBeGreaterThan(HOUR - 60_000);
    await backdate(n, HOUR + 1000);
    const next = await dev().post(`${P}/transactions`, { type: "append" });
    expect(next.status, next.text).toBe(201);
    expect(next.body.version).toBe(n + 1);
    expect(await versionOf(n)).toMatchObject({ status: "aborted", abortedAt: expect.any(String), abortReason: "idle" });
    // its writer, back, is told why it is gone
    const late = await dev().post(`${P}/transactions/${n}/rows`, { rows: [product("IDLE-LATE")] });
    expect([late.status, late.body.error.details.abortReason]).toEqual([409, "idle"]);
    expect(late.body.error.message).toContain(`is aborted, not open (aborted at ${(await versionOf(n)).abortedAt}: it received no rows for ${HOUR} ms, SVC_DATASET_TRANSACTION_IDLE_MS; open a new transaction)`);
    // the staged row went with it
    expect((await dev().post(`${P}/transactions/${n + 1}/commit`)).status).toBe(200);
    expect((await dev().get(`${P}/versions/${n + 1}/rows?pageSize=1000`)).body.data.map((r: any) => r.sku)).not.toContain("IDLE-1");
  });

  it("the sweep (DatasetStore.expireIdle) aborts an idle transaction without another open, and leaves a fresh one", async () => {
    const n = (await dev().post(`${P}/transactions`, { type: "append" })).body.version;
    await dev().post(`${P}/transactions/${n}/rows`, { rows: [product("IDLE-2")] });
    const store = suite.app.container.resolve(DatasetStore);
    expect(await store.expireIdle()).toEqual([]);
    expect(await store.expireIdle(Date.now() + HOUR + 1000)).toEqual([{ datasetId: "price-list", version: n }]);
    expect(await versionOf(n)).toMatchObject({ status: "aborted", abortReason: "idle" });
    expect((await dev().get(P)).body.openTransaction).toBeUndefined();
    expect((await dev().post(`${P}/transactions/${n}/commit`)).body.error.details).toMatchObject({ status: "aborted", abortReason: "idle" });
  });
});
