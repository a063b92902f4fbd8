/**
 * Dataset projections beyond the sandbox (spec 2.3 `projection`, issue 14): a composite primary key,
 * a link per row and a computed property; a `schema` (valibot) dataset; an action's `ctx.datasets`;
 * file ownership; projection-owned links and telemetry; the checks at app start; and a process
 * SIGKILLed in the middle of projecting 20,000 rows, which completes once after a restart.
 */
import * as v from "valibot";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { allEvents, client, eventually, startApp, startFixtureProcess, tempDir, tokenFor, uploadFile } from "./helpers";
import { freePort } from "./setup/global";
import { allPermissions, can, defineAction, defineConnector, defineDataset, defineProject, type ProjectDefinition } from "../core/sdk";
import { ProjectRegistry } from "../core/project/registry";
import { OntologyStore } from "../core/ontology/store";
import { Database } from "../core/store/db";
import type { App } from "../core/app";

const stock = defineDataset({
  title: "Stock counts",
  columns: { site: "string", sku: "string", warehouse: "string", quantity: { type: "integer", required: true }, countedOn: "date" },
  primaryKey: ["site", "sku"],
  projection: {
    objectTypeId: "item",
    // (the warehouses BAD and NUM make rows the projection cannot write: for the skipped-rows test)
    properties: {
      quantity: "quantity",
      countedOn: "countedOn",
      label: (row) => {
        if (row.warehouse === "BAD") throw new Error("no label in warehouse BAD");
        return row.warehouse === "NUM" ? (42 as unknown as string) : `${row.sku} at ${row.site}`;
      },
    },
    links: [{ linkId: "storedIn", targetTypeId: "warehouse", targetId: "warehouse" }],
  },
});
const connector = defineConnector({
  id: "stock",
  datasets: { stock, notes: defineDataset({ schema: v.object({ id: v.string(), text: v.optional(v.string()), n: v.optional(v.pipe(v.number(), v.integer())) }), primaryKey: "id" }) },
  actions: {
    "stock.count": defineAction({
      params: v.object({ site: v.string(), sku: v.string(), quantity: v.unknown() }),
      run(ctx) {
        ctx.datasets.append("stock", [{ site: ctx.params.site, sku: ctx.params.sku, warehouse: "W1", quantity: ctx.params.quantity }]);
        return { ok: true };
      },
    }),
  },
});
const base = {
  id: "stock-test",
  name: "Stock",
  objectTypes: {
    item: { properties: { label: { type: "string", required: true }, quantity: { type: "integer", required: true }, countedOn: "date" } },
    warehouse: { properties: { name: "string" } },
  },
  linkTypes: { storedIn: { source: "item", target: "warehouse" } },
  telemetry: { temperature: { objectTypeId: "item", unit: "C" } },
  devIdentity: "dev",
} satisfies Partial<ProjectDefinition>;
const project = defineProject({
  ...base,
  connectors: [connector],
  identities: {
    dev: { type: "user", permissions: (p) => [...allPermissions(p)] },
    editor: { type: "user", permissions: [can.viewDataset("stock"), can.editDataset("stock")] },
  },
});

describe("projections of a composite-key dataset with links", () => {
  let app: App;
  beforeAll(async () => {
    app = await startApp({ project });
  });
  afterAll(() => app?.close());
  const dev = () => client(() => app);
  const S = "/api/datasets/stock";
  const row = (site: string, sku: string, warehouse: string, quantity: number, extra = {}) => ({ site, sku, warehouse, quantity, ...extra });
  const eventsOf = async (version: number) => {
    await eventually(async () => (await dev().get(S)).body.projection.projectedVersion >= version);
    return (await allEvents(dev())).filter((e) => e.origin?.kind === "projection" && e.origin.version === version).map((e) => [e.type, e.payload.primaryId ?? `${e.payload.sourceId}->${e.payload.targetId}`]);
  };

  it("keys several columns, computes properties, and keeps each object's link in step with its row", async () => {
    const v1 = await dev().post(`${S}/versions`, { transaction: "snapshot", rows: [row("A/1", "x", "W1", 3, { countedOn: "2026-01-05" }), row("B", "y", "W2", 1)] });
    expect(v1.status, v1.text).toBe(201);
    expect(await eventsOf(1)).toEqual([
      ["object.created", "A%2F1/x"],
      ["link.created", "A%2F1/x->W1"],
      ["object.created", "B/y"],
      ["link.created", "B/y->W2"],
    ]);
    const items = (await dev().post("/api/objects/query", { objectTypeId: "item" })).body.data;
    expect(items.map((o: any) => [o.primaryId, o.properties])).toEqual([
      ["A%2F1/x", { quantity: 3, countedOn: "2026-01-05", label: "x at A/1" }],
      ["B/y", { quantity: 1, label: "y at B" }],
    ]);
    // B/y moves to W3: its object is unchanged, its link is replaced
    await dev().post(`${S}/versions`, { transaction: "append", rows: [row("B", "y", "W3", 1)] });
    expect(await eventsOf(2)).toEqual([
      ["link.deleted", "B/y->W2"],
      ["link.created", "B/y->W3"],
    ]);
    // gone from a snapshot: object and link deleted (the link with its object, before it)
    await dev().post(`${S}/versions`, { transaction: "snapshot", rows: [row("A/1", "x", "W1", 4, { countedOn: "2026-01-05" })] });
    expect(await eventsOf(3)).toEqual([
      ["object.updated", "A%2F1/x"],
      ["link.deleted", "B/y->W3"],
      ["object.deleted", "B/y"],
    ]);
    const date = await dev().post(`${S}/versions`, { transaction: "append", rows: [row("C", "z", "W1", 1, { countedOn: "2026-13-01" })] });
    expect(date.body.error.details).toMatchObject({ row: 1, column: "countedOn" });
    const fraction = await dev().post(`${S}/versions`, { transaction: "append", rows: [row("C", "z", "W1", 1.5)] });
    expect(fraction.body.error.details).toMatchObject({ row: 1, column: "quantity" });
  });

  it("skips a row it cannot write (its mapping throws, or its object is refused), lists it, and goes on; a later version that changes it projects it", async () => {
    const before = (await dev().get(S)).body.projection.projectedVersion as number;
    const v = await dev().post(`${S}/versions`, { transaction: "append", rows: [row("S", "1", "W1", 1), row("S", "2", "BAD", 2), row("S", "3", "NUM", 3), row("S", "4", "W1", 4)] });
    expect(v.status, v.text).toBe(201);
    const version = v.body.version as number;
    expect(version).toBeGreaterThan(before);
    // the projection got past them: the good rows are objects, the version is projected
    const state = await eventually(async () => {
      const p = (await dev().get(S)).body.projection;
      return p.projectedVersion === version ? p : undefined;
    }, 20_000);
    expect(state).toMatchObject({ status: "idle", failedRows: 2 });
    expect(state.failures).toEqual([
      { key: "S/2", version, error: "the projection's mapping threw: no label in warehouse BAD", failedAt: expect.any(String) },
      { key: "S/3", version, error: expect.stringMatching(/^its object was refused: .*label/), failedAt: expect.any(String) },
    ]);
    const items = (await dev().post("/api/objects/query", { objectTypeId: "item" })).body.data.map((o: any) => o.primaryId);
    expect(items).toEqual(expect.arrayContaining(["S/1", "S/4"]));
    expect(items).not.toEqual(expect.arrayContaining(["S/2"]));
    expect(items).not.toEqual(expect.arrayContaining(["S/3"]));
    // the next version fixes the rows: they are projected and no longer listed
    const fixed = await dev().post(`${S}/versions`, { transaction: "append", rows: [row("S", "2", "W1", 2), row("S", "3", "W1", 3)] });
    const after = await eventually(async () => {
      const p = (await dev().get(S)).body.projection;
      return p.projectedVersion === fixed.body.version ? p : undefined;
    }, 20_000);
    expect(after).not.toHaveProperty("failedRows");
    expect(after).not.toHaveProperty("failures");
    const now = (await dev().post("/api/objects/query", { objectTypeId: "item" })).body.data.map((o: any) => o.primaryId);
    expect(now).toEqual(expect.arrayContaining(["S/1", "S/2", "S/3", "S/4"]));
  });

  it("describes a valibot-schema dataset's columns and stores its rows", async () => {
    const notes = await dev().get("/api/datasets/notes");
    expect(notes.body).toMatchObject({ primaryKey: ["id"], latestVersion: null, rowCount: 0, columns: [{ name: "id", type: "string", required: true }, { name: "text", type: "string", required: false }, { name: "n", type: "integer", required: false }] });
    expect(notes.body.projection).toBeUndefined();
    expect((await dev().post("/api/datasets/notes/versions", { transaction: "append", rows: [{ id: "a", n: 2 }] })).status).toBe(201);
    expect((await dev().get("/api/datasets/notes/versions/1/rows")).body.data).toEqual([{ id: "a", n: 2 }]);
    expect((await dev().post("/api/datasets/notes/versions", { transaction: "append", rows: [{ id: "b", n: "2" }] })).body.error.details).toMatchObject({ row: 1, column: "n" });
  });

  it("commits an action's ctx.datasets.append with the run, and fails the run on a refused row", async () => {
    const before = (await dev().get(S)).body.latestVersion;
    const ok = await dev().post("/api/actions/stock.count", { params: { site: "D", sku: "q", quantity: 7 }, runId: "count-1" });
    expect(ok.body.status, ok.text).toBe("succeeded");
    const versions = (await dev().get(`${S}/versions`)).body.data;
    expect(versions[0]).toMatchObject({ version: before + 1, transaction: "append", status: "committed", rowCount: 1, source: { kind: "action", id: "count-1" } });
    expect((await dev().post("/api/actions/stock.count", { params: { site: "D", sku: "q", quantity: 7 }, runId: "count-1" })).body.status).toBe("succeeded");
    const bad = await dev().post("/api/actions/stock.count", { params: { site: "E", sku: "r", quantity: "many" } });
    expect(bad.body.status).toBe("failed");
    expect(bad.body.error.code).toBe("invalid_request");
    expect(bad.body.error.message).toContain('ctx.datasets.append call 1: Dataset "stock" refused the rows: Row 1, column "quantity"');
    expect((await dev().get(S)).body.latestVersion).toBe(before + 1);
  });

  it("reads rows only from the caller's own files", async () => {
    const editor = client(() => app, await tokenFor(app, "editor"));
    const file = await uploadFile(app, "site,sku,warehouse,quantity\nF,1,W1,5\n", "counts.csv", "text/csv");
    const refused = await editor.post(`${S}/versions`, { transaction: "append", file });
    expect(refused.status).toBe(403);
    expect(refused.body.error.details).toEqual({ fileId: file.id });
    const own = await uploadFile(app, "site,sku,warehouse,quantity\nF,1,W1,5\n", "counts.csv", "text/csv", await tokenFor(app, "editor"));
    const accepted = await editor.post(`${S}/versions`, { transaction: "append", file: own });
    expect(accepted.status, accepted.text).toBe(201);
    expect(accepted.body).toMatchObject({ source: { kind: "upload", fileId: own.id }, openedBy: { id: "editor" } });
  });

  it("refuses other writers' links from projected objects, and allows their telemetry", async () => {
    const ontology = app.container.resolve(OntologyStore);
    const link = { sourceTypeId: "item", sourceId: "A%2F1/x", linkId: "storedIn", targetTypeId: "warehouse", targetId: "W9" };
    await expect(ontology.commit([{ op: "link.upsert", ...link }], { origin: { kind: "runtime" }, correlationId: "t" })).rejects.toMatchObject({ code: "conflict", message: "objects of type item are projected from dataset stock; commit a new dataset version instead" });
    const point = await ontology.commit([{ op: "telemetry.append", objectTypeId: "item", objectId: "A%2F1/x", propertyId: "temperature", value: 4 }], { origin: { kind: "runtime" }, correlationId: "t" });
    expect(point.events.map((e) => e.type)).toEqual(["telemetry.appended"]);
  });

  it("reads nothing for a commit without a dataset event (the projector follows the datasets topic only)", async () => {
    const ontology = app.container.resolve(OntologyStore);
    const db = app.container.resolve(Database);
    await eventually(async () => (await dev().get(S)).body.projection.status === "idle");
    const before = db.stats().readerStatements;
    for (let i = 0; i < 5; i++) await ontology.commit([{ op: "telemetry.append", objectTypeId: "item", objectId: "A%2F1/x", propertyId: "temperature", value: i }], { origin: { kind: "runtime" }, correlationId: "t" });
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(db.stats().readerStatements - before).toBe(0);
    // a version commit still wakes it
    expect((await dev().post(`${S}/versions`, { transaction: "append", rows: [row("Z", "9", "W1", 1)] })).status).toBe(201);
    await eventually(async () => (await ontology.getObject("item", "Z/9")) !== undefined);
  });

  // last in this app: it leaves the projection failing
  it("a chunk whose every row is refused is the projection's problem, not the rows': it fails and is retried, nothing skipped", async () => {
    const before = (await dev().get(S)).body.projection.projectedVersion as number;
    const v = await dev().post(`${S}/versions`, { transaction: "append", rows: [row("N", "1", "NUM", 1), row("N", "2", "NUM", 2)] });
    expect(v.status).toBe(201);
    const failing = await eventually(async () => {
      const p = (await dev().get(S)).body.projection;
      return p.lastError ? p : undefined;
    }, 20_000);
    expect(failing).toMatchObject({ projectedVersion: before, status: "projecting", lastError: expect.stringMatching(/label/) });
    expect(failing).not.toHaveProperty("failedRows");
  });
});

describe("checks at app start", () => {
  const withStock = (projection: object, extra: Partial<ProjectDefinition> = {}) =>
    new ProjectRegistry({ ...base, ...extra, identities: {}, connectors: [defineConnector({ id: "stock", datasets: { stock: { ...stock, projection } as never } })] });
  it("refuses projections naming unknown or mismatched types, properties, columns and links", () => {
    expect(() => withStock({ ...stock.projection, objectTypeId: "nope" })).toThrow('Dataset "stock" of connector "stock": its projection names unknown object type "nope"');
    expect(() => withStock({ ...stock.projection, properties: { ...stock.projection!.properties, colour: "sku" } })).toThrow('unknown property "colour"');
    expect(() => withStock({ ...stock.projection, properties: { ...stock.projection!.properties, label: "shelf" } })).toThrow('unknown column "shelf"');
    expect(() => withStock({ ...stock.projection, properties: { ...stock.projection!.properties, label: "quantity" } })).toThrow('column "quantity" (integer) to property "label" (string)');
    expect(() => withStock({ ...stock.projection, properties: { quantity: "quantity" } })).toThrow('does not map property "label"');
    expect(() => withStock({ ...stock.projection, properties: { label: "sku", quantity: "warehouse" } })).toThrow('column "warehouse" (string) to property "quantity" (integer)');
    expect(() => withStock({ ...stock.projection, properties: { label: "warehouse", quantity: "quantity" } })).toThrow('maps required property "label" from column "warehouse", which rows may leave out');
    expect(() => withStock({ ...stock.projection, links: [{ linkId: "nope", targetTypeId: "warehouse", targetId: "warehouse" }] })).toThrow('unknown link type "nope"');
    expect(() => withStock({ ...stock.projection, links: [{ linkId: "storedIn", targetTypeId: "warehouse", targetId: "shelf" }] })).toThrow('unknown column "shelf"');
    expect(() => withStock(stock.projection!)).not.toThrow();
    expect(() => defineDataset({ columns: { a: "string" }, primaryKey: "b" })).toThrow('Primary key column "b" is not a column');
    expect(() => defineDataset({ columns: { a: "text" as never }, primaryKey: "a" })).toThrow('unknown type "text"');
    expect(() => defineDataset({ primaryKey: "a" })).toThrow("exactly one of columns or schema");
  });

  it("refuses projections naming an object type, property or link type like an Object.prototype member", () => {
    expect(() => withStock({ ...stock.projection, objectTypeId: "constructor" })).toThrow('its projection names unknown object type "constructor"');
    expect(() => withStock({ ...stock.projection, properties: { ...stock.projection!.properties, toString: "sku" } })).toThrow('unknown property "toString"');
    expect(() => withStock({ ...stock.projection, links: [{ linkId: "hasOwnProperty", targetTypeId: "warehouse", targetId: "warehouse" }] })).toThrow('unknown link type "hasOwnProperty"');
  });
});

describe("a process killed in the middle of a projection", () => {
  it("resumes after restart and projects every row of the version exactly once", async () => {
    const dataDir = tempDir();
    const port = await freePort();
    const env = { SVC_PROJECTION_CHUNK_ROWS: "200" };
    let child = await startFixtureProcess("sandbox-server.ts", dataDir, port, env);
    const target = { url: `http://127.0.0.1:${port}` } as App;
    const c = client(() => target);
    const N = 20_000;
    try {
      const csv = ["sku,name,unitPrice,currency,active", ...Array.from({ length: N }, (_, i) => `K-${String(i).padStart(5, "0")},Item ${i},${i / 100},EUR,${i % 2 === 0}`)].join("\n");
      const committed = await c.post("/api/datasets/price-list/versions", { transaction: "snapshot", file: await uploadFile(target, csv, "big.csv", "text/csv") });
      expect(committed.status, committed.text).toBe(201);
      expect(committed.body).toMatchObject({ version: 2, rowCount: N, totalRows: N });
      // killed once the projection is partway: some chunks committed, most still pending
      const partway = await eventually(async () => {
        const p = (await c.get("/api/datasets/price-list")).body.projection;
        return p.status === "projecting" && p.targetVersion === 2 && p.pendingRows < N - 1000 ? p : undefined;
      }, 60_000, 10);
      child.kill("SIGKILL");
      await child.exited;
      expect(partway.pendingRows).toBeGreaterThan(0);

      child = await startFixtureProcess("sandbox-server.ts", dataDir, port, env);
      await eventually(async () => (await c.get("/api/datasets/price-list")).body.projection.projectedVersion === 2, 120_000, 200);
      // the last chunk's events reach the stream after the commit that shows the version projected
      await eventually(async () => (await c.get("/api/status")).body.parts.outbox.backlog === 0, 30_000, 100);
      const events = (await allEvents(c, "&topic=objects")).filter((e) => e.origin?.kind === "projection" && e.origin.version === 2);
      const created = events.filter((e) => e.type === "object.created").map((e) => e.payload.primaryId);
      expect(created).toHaveLength(N);
      expect(new Set(created).size).toBe(N);
      expect(created.slice().sort()).toEqual(Array.from({ length: N }, (_, i) => `K-${String(i).padStart(5, "0")}`));
      expect(events.filter((e) => e.type === "object.deleted").map((e) => e.payload.primaryId).sort()).toEqual(["SKU-API-1K", "SKU-LEGACY", "SKU-SEAT", "SKU-STORAGE", "SKU-SUPPORT"]);
      expect(events).toHaveLength(N + 5);
      const chunks = new Map<string, number>();
      for (const e of events) chunks.set(e.commitId, (chunks.get(e.commitId) ?? 0) + 1);
      expect(Math.max(...chunks.values())).toBeLessThanOrEqual(200);
      expect((await c.post("/api/objects/query", { objectTypeId: "product", pageSize: 1 })).body.data[0]).toMatchObject({ primaryId: "K-00000", properties: { name: "Item 0", unitPrice: 0, currency: "EUR", active: true } });
    } finally {
      child.kill("SIGTERM");
      await child.exited;
    }
  }, 240_000);
});
