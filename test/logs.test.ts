import { afterAll, beforeAll, describe, expect, it } from "vitest";
import NodeWebSocket from "crossws/websocket";
import { client, eventually, startApp, tokenFor } from "./helpers";
import type { App } from "../core/app";
import { LogCapture } from "../core/logs/capture";

let app: App;
let dev: ReturnType<typeof client>;
const sockets: any[] = [];
beforeAll(async () => {
  app = await startApp();
  dev = client(app);
});
afterAll(async () => {
  for (const s of sockets) s.terminate();
  await app?.close();
});

const approve = (id: string, runId: string) => dev.post("/api/actions/invoice.approve", { subject: { kind: "object", objectTypeId: "invoice", primaryId: id }, params: {}, runId });

describe("handler logs (spec 2.5)", () => {
  it("captures handler logs with level, fields, run context and cursor, readable by run, kind and level", async () => {
    await approve("inv_1001", "logs-approve-1");
    await dev.post("/api/actions/diagnostics.fail", { params: { message: "boom for the logs" }, runId: "logs-fail-1" });
    const ofRun = (await dev.get("/api/logs?runKind=action&runId=logs-approve-1")).body;
    expect(ofRun.logs).toContainEqual({ message: "invoice approved", level: "info", fields: { actionId: "invoice.approve", invoice: "inv_1001" }, run: { kind: "action", id: "logs-approve-1" }, at: expect.any(String), cursor: expect.any(String) });
    const warns = (await dev.get("/api/logs?levels=warn,error&kinds=action")).body.logs;
    expect(warns.some((l: any) => l.run.id === "logs-fail-1" && l.level === "warn" && l.fields.err.message === "boom for the logs")).toBe(true);
    expect(warns.every((l: any) => ["warn", "error"].includes(l.level) && l.run.kind === "action")).toBe(true);

    const all = (await dev.get("/api/logs?limit=1000")).body.logs.map((l: any) => l.cursor);
    const paged: string[] = [];
    let cursor: string | undefined;
    for (;;) {
      const page = (await dev.get(`/api/logs?limit=1${cursor ? `&afterCursor=${encodeURIComponent(cursor)}` : ""}`)).body;
      if (page.count === 0) break;
      paged.push(...page.logs.map((l: any) => l.cursor));
      cursor = page.logs.at(-1).cursor;
    }
    expect(paged).toEqual(all);
    const eventCursor = (await dev.get("/api/events?limit=1")).body.events[0].cursor;
    expect((await dev.get(`/api/logs?afterCursor=${encodeURIComponent(eventCursor)}`)).status).toBe(400);
  });

  it("answers where to continue (nextCursor): the last line of a full page, else past the lines the filter skipped, so a filter that matches nothing still moves its reader on", async () => {
    await approve("inv_1001", "logs-next-1");
    const full = (await dev.get("/api/logs?limit=1&kinds=action")).body;
    expect(full.nextCursor).toBe(full.logs[0].cursor);
    // a kind no run has is refused, naming the kinds (it answered 200 with nothing, as if none had logged)
    const bogus = await dev.get("/api/logs?kinds=no-such-kind");
    expect([bogus.status, bogus.body.error.message]).toEqual([400, expect.stringContaining("action, webhook, schedule, sync, pipeline, workflow, seed")]);
    // the seed's lines are read by their run as the others are
    expect((await dev.get("/api/logs?runKind=seed&runId=seed")).body.logs.map((l: any) => l.message)).toContain("published the sandbox's artifacts");
    // a filter nothing matches: no lines, but a cursor at the newest line this read covered (an effect
    // of an earlier approval may log meanwhile: between the newest positions before and after the read)
    const seqOf = (cursor: string) => Number(Buffer.from(cursor, "base64url").toString("utf8").split(":").pop());
    const capture = app.container.resolve(LogCapture);
    await capture.flush();
    const before = seqOf((await capture.latestCursor())!);
    const none = (await dev.get("/api/logs?runKind=sync&runId=logs-no-such-run")).body;
    const after = seqOf((await capture.latestCursor())!);
    expect(none.count).toBe(0);
    expect(seqOf(none.nextCursor)).toBeGreaterThanOrEqual(before);
    expect(seqOf(none.nextCursor)).toBeLessThanOrEqual(after);
    // more lines, none matching: the reader moves on past them, and a matching line comes next
    await dev.post("/api/actions/diagnostics.fail", { params: { message: "not for this filter" }, runId: "logs-next-fail" });
    const skipped = (await dev.get(`/api/logs?runKind=action&runId=logs-next-2&afterCursor=${encodeURIComponent(none.nextCursor)}`)).body;
    expect(skipped.count).toBe(0);
    expect(skipped.nextCursor).not.toBe(none.nextCursor);
    await approve("inv_1001", "logs-next-2");
    const next = (await dev.get(`/api/logs?runKind=action&runId=logs-next-2&afterCursor=${encodeURIComponent(skipped.nextCursor)}`)).body;
    // its handler's line (its effect may have logged under the same run too)
    expect(next.logs.filter((l: any) => l.message === "invoice approved").map((l: any) => l.run.id)).toEqual(["logs-next-2"]);
  });

  it("refuses a cursor past the newest line (one it never issued), which would skip lines in silence, on GET and on /ws/logs", async () => {
    await approve("inv_1002", "logs-approve-ahead");
    // the newest line once no more come (the approval's effect logs later, from its own workflow)
    const newest = async () => (await dev.get("/api/logs?limit=1000")).body.logs.at(-1).cursor as string;
    let latest = await newest();
    for (let settled = false; !settled; ) {
      await new Promise((r) => setTimeout(r, 500));
      const now = await newest();
      settled = now === latest;
      latest = now;
    }
    const [tag, epoch, seq] = Buffer.from(latest, "base64url").toString().split(":");
    const ahead = Buffer.from(`${tag}:${epoch}:${Number(seq) + 1_000}`).toString("base64url");
    const res = await dev.get(`/api/logs?afterCursor=${ahead}`);
    expect([res.status, res.body.error.message]).toEqual([400, "afterCursor is not a cursor of this log (it is past the newest line)"]);
    expect((await dev.get(`/api/logs?afterCursor=${latest}`)).body).toMatchObject({ count: 0 });
    // the lines written after it are read from it, and its successor is accepted once they exist
    await approve("inv_1004", "logs-approve-after");
    const after = await eventually(async () => {
      const page = (await dev.get(`/api/logs?afterCursor=${latest}`)).body;
      return page.count > 0 ? page.logs : undefined;
    });
    expect(after.map((l: any) => l.run.id)).toContain("logs-approve-after");
    const next = Buffer.from(`${tag}:${epoch}:${Number(seq) + 1}`).toString("base64url");
    expect((await dev.get(`/api/logs?afterCursor=${next}`)).status).toBe(200);

    const cookie = ((await fetch(`${app.url}/api/auth/sign-in`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ identity: "dev", password: "dev-sandbox-password" }) })).headers.get("set-cookie") ?? "").split(";")[0]!;
    const Ctor = NodeWebSocket as unknown as new (url: string, protocols: string[], opts: object) => any;
    const ws = new Ctor(`${app.url.replace(/^http/, "ws")}/ws/logs`, [], { headers: { cookie }, origin: app.url });
    sockets.push(ws);
    const frames: any[] = [];
    ws.on("message", (d: Buffer) => frames.push(JSON.parse(String(d))));
    await eventually(async () => frames.some((f) => f.type === "connected"));
    ws.send(JSON.stringify({ type: "subscribe", afterCursor: Buffer.from(`${tag}:${epoch}:${Number(seq) + 1_000_000}`).toString("base64url") }));
    await eventually(async () => frames.some((f) => f.type === "error" && f.message === "afterCursor is not a cursor of this log (it is past the newest line)"));
    expect(frames.some((f) => f.type === "subscribed")).toBe(false);
  });

  it("captures workflow code's logs through a sink, under the workflow run", async () => {
    const { runId } = (await dev.post("/api/workflows/invoice-review/runs", { input: { invoiceId: "inv_1003", waitMs: 0 } })).body;
    const lines = await eventually(async () => {
      const r = await dev.get(`/api/logs?runKind=workflow&runId=${runId}`);
      return r.body.count > 0 ? r.body.logs : undefined;
    });
    expect(lines).toEqual([expect.objectContaining({ message: "reviewing invoice", level: "info", run: { kind: "workflow", id: runId }, fields: expect.objectContaining({ invoiceId: "inv_1003", amount: 480.5, approvalNeeded: false, workflowId: "invoice-review" }) })]);
  });

  it("requires observe:logs", async () => {
    expect((await client(app, await tokenFor(app, "alice")).get("/api/logs")).status).toBe(403);
    expect((await client(app, await tokenFor(app, "ops-bot")).get("/api/logs")).status).toBe(200);
  });

  it("streams new lines on /ws/logs to a session that may observe logs", async () => {
    const signIn = async (identity: string, password: string) =>
      ((await fetch(`${app.url}/api/auth/sign-in`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ identity, password }) })).headers.get("set-cookie") ?? "").split(";")[0]!;
    const Ctor = NodeWebSocket as unknown as new (url: string, protocols: string[], opts: object) => any;
    const url = `${app.url.replace(/^http/, "ws")}/ws/logs`;
    const refused = new Ctor(url, [], { headers: { cookie: await signIn("alice", "alice-sandbox-password") }, origin: app.url });
    sockets.push(refused);
    refused.on("error", () => undefined);
    expect(await new Promise((r) => refused.on("unexpected-response", (_q: unknown, res: { statusCode: number }) => r(res.statusCode)))).toBe(403);

    const ws = new Ctor(url, [], { headers: { cookie: await signIn("dev", "dev-sandbox-password") }, origin: app.url });
    sockets.push(ws);
    const frames: any[] = [];
    ws.on("message", (d: Buffer) => frames.push(JSON.parse(String(d))));
    await eventually(async () => frames.some((f) => f.type === "connected"));
    // a cursor that is not one of this log: an error frame naming the log, nothing acknowledged
    ws.send(JSON.stringify({ type: "subscribe", afterCursor: "garbage" }));
    await eventually(async () => frames.some((f) => f.type === "error" && f.message === "afterCursor is not a cursor of this log"));
    expect(frames.some((f) => f.type === "subscribed")).toBe(false);
    ws.send(JSON.stringify({ type: "subscribe", run: { kind: "action", id: "logs-approve-ws" } }));
    await eventually(async () => frames.some((f) => f.type === "subscribed"));
    await approve("inv_1006", "logs-approve-ws");
    const lines = await eventually(async () => {
      const got = frames.filter((f) => f.type === "logs").flatMap((f) => f.logs);
      return got.some((l) => l.message === "approval notice sent") ? got : undefined;
    });
    // the run's own line, then its effect's (run on Temporal afterwards), and nothing of other runs
    expect(lines.map((l: any) => [l.message, l.run.id])).toEqual([["invoice approved", "logs-approve-ws"], ["approval notice sent", "logs-approve-ws"]]);
  });
});
