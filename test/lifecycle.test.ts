import fs from "node:fs";
import net from "node:net";
import path from "node:path";
import pino from "pino";
import { describe, expect, it, vi } from "vitest";
import { client, eventually, startApp, tempDir } from "./helpers";
import { Database } from "../core/store/db";
import { EventLog } from "../core/events/log";
import { sandboxProject } from "../sandbox/project";
import { ensureChromium } from "./setup/chromium";
import { freePort } from "./setup/global";
import { ConfigError } from "../core/config";

describe("graceful shutdown", () => {
  it("refuses a second app on a data directory an app is using (SVC_DATA_DIR named), and takes it once that one has closed", async () => {
    const first = await startApp();
    try {
      await expect(startApp({ dataDir: first.dataDir })).rejects.toThrow(`SVC_DATA_DIR ${first.dataDir} is in use by another svc process`);
    } finally {
      await first.close();
    }
    const second = await startApp({ dataDir: first.dataDir });
    await second.close();
  });

  it("lets in-flight runs finish, answers new action runs 503 and starts nothing, then stops", async () => {
    const app = await startApp();
    const c = client(app);
    const slow = c.post("/api/actions/diagnostics.sleep", { params: { ms: 1200 }, runId: "slow-at-shutdown" });
    await new Promise((r) => setTimeout(r, 200));
    const closing = app.close();
    await new Promise((r) => setTimeout(r, 50));

    const refused = await c.post("/api/actions/diagnostics.noop", { params: {}, runId: "after-shutdown" });
    expect(refused.status).toBe(503);
    expect(refused.body.error.code).toBe("shutting_down");
    const wf = await c.post("/api/workflows/invoice-review/runs", { input: { invoiceId: "inv_1001" } });
    expect(wf.status).toBe(503);
    expect((await c.get("/api/status")).body.status).toBe("shutting_down");

    const finished = await slow;
    expect(finished.status).toBe(200);
    expect(finished.body.status).toBe("succeeded");
    await closing;
    await expect(fetch(`${app.url}/api/status`)).rejects.toThrow();

    const db = await Database.open(path.join(app.dataDir, "svc.db"));
    try {
      const runs = await db.all<{ run_id: string }>("SELECT run_id FROM action_runs");
      expect(runs.map((r) => r.run_id)).toEqual(["slow-at-shutdown"]);
      expect((await db.get<{ n: number }>("SELECT COUNT(*) AS n FROM outbox"))!.n).toBe(0);
    } finally {
      await db.close();
    }
  });
});

describe("status", () => {
  it("is degraded while the outbox holds an envelope older than two recovery intervals, and ok once drained", async () => {
    const app = await startApp({ env: { SVC_OUTBOX_RECOVERY_MS: "1000" } });
    try {
      const c = client(app);
      expect((await c.get("/api/status")).body.status).toBe("ok");
      const db = app.container.resolve(Database);
      const events = app.container.resolve(EventLog);
      const envelope = events.envelope({ type: "schedule.triggered", payload: { scheduleId: "s", occurrenceAt: "a", triggeredAt: "b", occurrenceKey: "k" } });
      await db.transaction((tx) => tx.run("INSERT INTO outbox (event_id, envelope, created_at) VALUES (?, ?, ?)", [envelope.id, JSON.stringify(envelope), new Date(Date.now() - 10_000).toISOString()]));
      const degraded = (await c.get("/api/status")).body;
      expect(degraded.status).toBe("degraded");
      // the probe without a token: the word and a 503, no detail
      const probe = await fetch(`${app.url}/health`);
      expect([probe.status, await probe.json()]).toEqual([503, { status: "degraded" }]);
      expect(degraded.parts.outbox).toMatchObject({ status: "unhealthy", backlog: 1, oldestAgeMs: expect.any(Number) });
      expect(degraded.parts.outbox.oldestAgeMs).toBeGreaterThanOrEqual(10_000);
      // the recovery pass (every SVC_OUTBOX_RECOVERY_MS) delivers it
      await eventually(async () => (await c.get("/api/status")).body.status === "ok");
      const healthy = await fetch(`${app.url}/health`);
      expect([healthy.status, await healthy.json()]).toEqual([200, { status: "ok" }]);
      expect((await c.get("/api/events?type=schedule.triggered")).body.events.map((e: any) => e.id)).toEqual([envelope.id]);
    } finally {
      await app.close();
    }
  });
});

describe("restart over the same files", () => {
  it("delivers events left in the outbox, re-runs an interrupted action run, and keeps the data", async () => {
    const dataDir = tempDir();
    const first = await startApp({ dataDir });
    const done = await client(first).post("/api/actions/invoice.approve", { subject: { kind: "object", objectTypeId: "invoice", primaryId: "inv_1001" }, params: {}, runId: "before-crash" });
    expect(done.body.status).toBe("succeeded");
    await first.close();

    // Simulate a process killed (a) right after a commit, before its drain, and (b) in the middle of an action handler.
    const db = await Database.open(path.join(dataDir, "svc.db"));
    const stranded = { id: "evt_stranded", schemaVersion: 1, projectId: "sandbox", occurredAt: new Date().toISOString(), type: "workflow.run.queued", topic: "workflows", partitionKey: "r", payload: { workflowId: "invoice-review", runId: "r" }, correlationId: "r" };
    await db.transaction(async (tx) => {
      await tx.run("INSERT INTO outbox (event_id, envelope, created_at) VALUES (?, ?, ?)", [stranded.id, JSON.stringify(stranded), new Date().toISOString()]);
      await tx.run("INSERT INTO action_runs (id, run_id, action_id, status, params, started_at) VALUES ('run_x', 'interrupted', 'diagnostics.noop', 'running', '{}', ?)", [new Date().toISOString()]);
    });
    await db.close();

    const second = await startApp({ dataDir });
    try {
      const c = client(second);
      const events = await c.get("/api/events?type=workflow.run.queued&limit=100");
      expect(events.body.events.map((e: any) => e.id)).toContain("evt_stranded");
      expect((await c.get("/api/status")).body.parts.outbox.backlog).toBe(0);

      const rerun = await c.post("/api/actions/diagnostics.noop", { params: {}, runId: "interrupted" });
      expect(rerun.body).toMatchObject({ id: "run_x", status: "succeeded", attempts: 2 });
      const again = await c.post("/api/actions/invoice.approve", { subject: { kind: "object", objectTypeId: "invoice", primaryId: "inv_1001" }, params: {}, runId: "before-crash" });
      expect(again.body).toEqual(done.body);
      expect((await c.get("/api/objects/invoice/inv_1001")).body.properties.status).toBe("approved");
      // seed ran once only: 9 objects of its own, 5 products projected from the price-list version it committed
      expect((await c.get("/api/events?type=object.created&limit=1000")).body.count).toBe(14);
    } finally {
      await second.close();
    }
  });

  it("starts an effect recorded as pending when Temporal was not reached before the stop", async () => {
    const dataDir = tempDir();
    const first = await startApp({ dataDir });
    // the effect's start fails as if Temporal were unreachable; the run itself is recorded with the effect pending
    vi.spyOn(first.temporal.client.workflow, "start").mockRejectedValue(new Error("Temporal unreachable"));
    const res = await client(first).post("/api/actions/invoice.approve", { subject: { kind: "object", objectTypeId: "invoice", primaryId: "inv_1002" }, params: {}, runId: "effect-later" });
    expect(res.body.status).toBe("succeeded");
    await first.close();
    expect(fs.existsSync(path.join(dataDir, "svc.db"))).toBe(true);

    const second = await startApp({ dataDir });
    try {
      const invoice = await eventually(async () => {
        const r = await client(second).get("/api/objects/invoice/inv_1002");
        return r.body.properties.noticeSentAt ? r.body : undefined;
      });
      expect(invoice.properties.status).toBe("approved");
    } finally {
      await second.close();
    }
  });
});

describe("start-up that fails", () => {
  it("a seed that throws (deck checks on, so Temporal's SDK waits for the seed) fails start-up with its error, and nothing is left waiting", async () => {
    const project = { ...sandboxProject, seed: async () => Promise.reject(new Error("the seed broke")) };
    const started = Date.now();
    await expect(startApp({ project, env: { SVC_DECK_CHECKS: "true" } })).rejects.toThrow("the seed broke");
    expect(Date.now() - started).toBeLessThan(15_000);
  }, 30_000);

  it("a seed that publishes its deck starts, with the deck checked (Temporal's SDK loads while the check runs)", async () => {
    ensureChromium();
    const app = await startApp({ env: { SVC_DECK_CHECKS: "true" } });
    try {
      const decks = (await client(app).get("/api/artifacts?kind=slides")).body.data;
      expect(decks).toHaveLength(1);
      const version = (await client(app).get(`/api/artifacts/${decks[0].id}/versions/1`)).body;
      expect(version.outline.checks).toMatchObject({ checked: true, slides: [{ number: 1 }, { number: 2 }, { number: 3 }, { number: 4 }] });
      // the worker runs: an action goes through Temporal
      expect((await client(app).post("/api/actions/diagnostics.noop", { params: {} })).body.status).toBe("succeeded");
    } finally {
      await app.close();
    }
  }, 60_000);

  describe("a setting the service cannot start with is a ConfigError naming the variable and its value, logged once, and what was started is stopped", () => {
    /** Starts an app on `dataDir` with `env`; answers what it threw and the error lines it logged. */
    const failedStart = async (env: Record<string, string>, dataDir = tempDir()) => {
      const lines: { level: number; msg: string; variable?: string }[] = [];
      const logger = pino({ level: "error" }, { write: (line: string) => void lines.push(JSON.parse(line)) });
      const error = await startApp({ dataDir, env, logger }).then(
        async (app) => {
          await app.close();
          throw new Error("the app started");
        },
        (err: unknown) => err,
      );
      expect(error).toBeInstanceOf(ConfigError);
      return { error: error as ConfigError, logged: lines.filter((l) => l.level >= 50) };
    };
    const expectOneLine = ({ error, logged }: Awaited<ReturnType<typeof failedStart>>, variable: string, text: string) => {
      expect(error.variable).toBe(variable);
      expect(error.message).toContain(`Invalid configuration: ${variable} ${text}`);
      expect(error.message).not.toContain("\n");
      expect(logged).toEqual([expect.objectContaining({ variable, msg: error.message })]);
    };

    it("SVC_DATA_DIR: a file (EEXIST), a path through a file (ENOTDIR), a svc.db SQLite cannot open (SQLITE_CANTOPEN)", async () => {
      const file = path.join(tempDir(), "a-file");
      fs.writeFileSync(file, "");
      expectOneLine(await failedStart({}, file), "SVC_DATA_DIR", `${file} is a file, not a directory (EEXIST)`);
      expectOneLine(await failedStart({}, path.join(file, "data")), "SVC_DATA_DIR", `${path.join(file, "data")} is not a directory`);
      const dataDir = tempDir();
      fs.mkdirSync(path.join(dataDir, "svc.db"));
      const cantOpen = await failedStart({}, dataDir);
      expectOneLine(cantOpen, "SVC_DATA_DIR", `${dataDir} holds a database SQLite cannot open`);
      expect(cantOpen.error.message).toContain("(SQLITE_CANTOPEN)");
      // the data dir's lock went with the failed start: an app takes the directory once svc.db is a file again
      fs.rmdirSync(path.join(dataDir, "svc.db"));
      await (await startApp({ dataDir })).close();
    });

    it("PORT in use (EADDRINUSE) and HOST that does not resolve (ENOTFOUND), at listen, after everything else started", async () => {
      const busy = net.createServer();
      await new Promise<void>((resolve) => busy.listen(0, "127.0.0.1", resolve));
      const port = (busy.address() as net.AddressInfo).port;
      const dataDir = tempDir();
      try {
        expectOneLine(await failedStart({ PORT: String(port) }, dataDir), "PORT", `${port} is already in use on 127.0.0.1 (EADDRINUSE)`);
      } finally {
        busy.close();
      }
      const host = await failedStart({ HOST: "no-such-host.invalid" }, dataDir);
      expectOneLine(host, "HOST", "no-such-host.invalid does not resolve to an address");
      // everything started was stopped: the data dir is free for the next app
      await (await startApp({ dataDir })).close();
    });

    it("TEMPORAL_ADDRESS where no Temporal server answers, NATS_URL where no NATS server answers", async () => {
      const nowhere = await freePort();
      expectOneLine(await failedStart({ TEMPORAL_ADDRESS: `127.0.0.1:${nowhere}` }), "TEMPORAL_ADDRESS", `127.0.0.1:${nowhere} has no Temporal server answering (connection refused)`);
      expectOneLine(await failedStart({ SVC_EVENT_STREAM: "nats", NATS_URL: `nats://127.0.0.1:${nowhere}` }), "NATS_URL", `nats://127.0.0.1:${nowhere} has no NATS server answering (connection refused`);
    });
  });
});

describe("start-up warnings", () => {
  it("warns once at start when the deck checks' Chromium (SVC_CHROMIUM_PATH) does not exist, and not with deck checks off", async () => {
    const warnings = async (env: Record<string, string>) => {
      const lines: { level: number; msg: string; chromiumPath?: string }[] = [];
      const app = await startApp({ env, logger: pino({ level: "warn" }, { write: (line: string) => void lines.push(JSON.parse(line)) }) });
      await app.close();
      return lines.filter((l) => l.msg.includes("SVC_CHROMIUM_PATH"));
    };
    const missing = path.join(tempDir(), "no-chromium-here");
    const warned = await warnings({ SVC_DECK_CHECKS: "true", SVC_CHROMIUM_PATH: missing });
    expect(warned).toEqual([expect.objectContaining({ level: 40, chromiumPath: missing, msg: expect.stringContaining(`SVC_CHROMIUM_PATH ${missing} does not exist`) })]);
    expect(await warnings({ SVC_DECK_CHECKS: "false", SVC_CHROMIUM_PATH: missing })).toEqual([]);
  }, 60_000);
});
