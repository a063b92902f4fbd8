import { spawn, type ChildProcess } from "node:child_process";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, inject } from "vitest";
import pino, { type Logger } from "pino";
import { createApp, type App } from "../core/app";
import { TokenService } from "../core/auth/tokens";
import { WORKFLOW_ENGINE } from "../workflows/modules";
import { builtinPlugins } from "../plugins";
import { sandboxProject, SANDBOX_DEV_TOKEN } from "../sandbox/project";
import type { ProjectDefinition } from "../core/sdk/project";
import { Readable } from "node:stream";
import { FileStore } from "../core/files/file-store";
import { ArtifactStore } from "../core/artifacts/store";
import { contentTypeOf } from "../core/artifacts/content";

export const DEV_TOKEN = SANDBOX_DEV_TOKEN;

export { tempDir } from "./helpers-fs";
import { tempDir } from "./helpers-fs";

/**
 * Boots the real app on a free port over a temporary SQLite file, connected to the run's shared
 * Temporal dev server, on a task queue of its own. `logger` replaces the silent one (for a test that
 * reads what the app logs).
 */
export async function startApp(opts: { dataDir?: string; env?: Record<string, string>; project?: ProjectDefinition; taskQueue?: string; logger?: Logger; ownWorkflowBundle?: boolean } = {}): Promise<App & { dataDir: string }> {
  // the suite's shared bundle holds the sandbox's workflows; a project with workflows of its own
  // (`ownWorkflowBundle`) is bundled from its workflowsModule, a few seconds
  if (opts.ownWorkflowBundle) delete process.env.SVC_WORKFLOW_BUNDLE;
  else process.env.SVC_WORKFLOW_BUNDLE = inject("workflowBundle");
  const dataDir = opts.dataDir ?? tempDir();
  const app = await createApp({
    project: opts.project ?? sandboxProject,
    plugins: builtinPlugins,
    workflowEngine: WORKFLOW_ENGINE,
    defaults: { devToken: DEV_TOKEN },
    logger: opts.logger ?? pino({ level: process.env.TEST_LOG_LEVEL ?? "silent" }),
    env: {
      PORT: "0",
      SVC_DATA_DIR: dataDir,
      TEMPORAL_ADDRESS: inject("temporalAddress"),
      SVC_TASK_QUEUE: opts.taskQueue ?? `test-${Math.random().toString(36).slice(2)}`,
      SVC_SCHEDULES: "false",
      // the sandbox's seed publishes a deck: tests that are not about deck checks do not launch Chromium for it
      SVC_DECK_CHECKS: "false",
      ...opts.env,
    },
  });
  return Object.assign(app, { dataDir });
}

/**
 * Starts an app once for the test file (beforeAll) and closes it after (afterAll), with API tokens for
 * the sandbox's alice, auditor and ops-bot. Read `suite.app` and `suite.tokens` inside tests.
 */
export function sandboxSuite(opts: Parameters<typeof startApp>[0] = {}) {
  const suite = { app: undefined as unknown as App & { dataDir: string }, tokens: {} as Record<"alice" | "auditor" | "opsBot", string> };
  beforeAll(async () => {
    suite.app = await startApp(opts);
    suite.tokens = { alice: await tokenFor(suite.app, "alice"), auditor: await tokenFor(suite.app, "auditor"), opsBot: await tokenFor(suite.app, "ops-bot") };
  });
  afterAll(() => suite.app?.close());
  return suite;
}

/** Every event the client may read, oldest first, paging with the last cursor. */
export async function allEvents(c: ReturnType<typeof client>, query = ""): Promise<any[]> {
  const out: any[] = [];
  let cursor: string | undefined;
  for (;;) {
    const res = await c.get(`/api/events?limit=1000${query}${cursor ? `&afterCursor=${encodeURIComponent(cursor)}` : ""}`);
    expect(res.status).toBe(200);
    if (res.body.count === 0) return out;
    out.push(...res.body.events);
    cursor = res.body.events.at(-1).cursor;
  }
}

/**
 * Runs a test fixture server (`test/fixtures/<script>`) as its own process over `dataDir` on `port`,
 * connected to the run's Temporal dev server, and resolves once it prints READY. It is started with
 * `node --import tsx` (not the tsx CLI, which forks), so the PID a test SIGKILLs is the server itself.
 * `exited` resolves when the process ends. `env` adds variables (e.g. `SVC_PROJECTION_CHUNK_ROWS`).
 */
export async function startFixtureProcess(script: string, dataDir: string, port: number, env: Record<string, string> = {}): Promise<ChildProcess & { exited: Promise<void> }> {
  const child = spawn(process.execPath, ["--import", "tsx", `test/fixtures/${script}`], {
    cwd: path.resolve(import.meta.dirname, ".."),
    env: { ...process.env, PORT: String(port), SVC_DATA_DIR: dataDir, TEMPORAL_ADDRESS: inject("temporalAddress"), SVC_WORKFLOW_BUNDLE: inject("workflowBundle"), SVC_TASK_QUEUE: `${script}-${port}`, SVC_SCHEDULES: "false", SVC_DECK_CHECKS: "false", ...env },
    stdio: ["ignore", "pipe", "inherit"],
  });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  await new Promise<void>((resolve, reject) => {
    let out = "";
    child.stdout!.on("data", (d) => {
      out += d;
      if (out.includes("READY")) resolve();
    });
    child.on("exit", (code) => reject(new Error(`fixture ${script} exited ${code}`)));
  });
  return Object.assign(child, { exited });
}

/** A token for one of the sandbox's identities. */
export async function tokenFor(app: App, identity: string): Promise<string> {
  return (await app.container.resolve(TokenService).create(identity)).token;
}

/** How a test reaches the app: over real HTTP on loopback, or in-process through the same h3 app (no socket). */
export type Transport = "http" | "in-process";
export const TRANSPORTS: readonly Transport[] = ["in-process", "http"];

/**
 * Runs a suite once per transport (h3's `describeMatrix`): every case in-process and against the real
 * server, for routes that need no Temporal run.
 */
export function describeMatrix(name: string, fn: (transport: Transport) => void): void {
  describe.each(TRANSPORTS)(`${name} [%s]`, fn);
}

/** A small JSON client, over real HTTP by default. `app` may be a function, read at each call. */
export function client(target: App | (() => App), token: string | null = DEV_TOKEN, transport: Transport = "http") {
  const call = async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
    const app = typeof target === "function" ? target() : target;
    const init: RequestInit = {
      method,
      headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...(body !== undefined ? { "content-type": "application/json" } : {}), ...headers },
      body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body),
    };
    const res = transport === "http" ? await fetch(app.url + path, init) : await app.fetch(new Request(app.url + path, init));
    const text = await res.text();
    let json: any;
    try {
      json = text ? JSON.parse(text) : undefined;
    } catch {
      json = undefined;
    }
    return { status: res.status, body: json, text, headers: res.headers };
  };
  return {
    get: (path: string) => call("GET", path),
    post: (path: string, body?: unknown, headers?: Record<string, string>) => call("POST", path, body, headers),
    call,
  };
}

/** Polls `fn` until it answers a truthy value or `timeoutMs` passes. */
export async function eventually<T>(fn: () => Promise<T | undefined | false>, timeoutMs = 20_000, everyMs = 100): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      const v = await fn();
      if (v) return v;
    } catch (err) {
      last = err;
    }
    await new Promise((r) => setTimeout(r, everyMs));
  }
  throw new Error(`condition not met within ${timeoutMs} ms${last ? `: ${(last as Error).message}` : ""}`);
}

export const invoiceSubject = (primaryId: string) => ({ kind: "object", objectTypeId: "invoice", primaryId });

/** Uploads `content` with POST /api/files (as `token`, dev by default) and answers the file reference's `{ id }`. */
export async function uploadFile(app: { url: string }, content: string | Uint8Array, name: string, type = "application/octet-stream", token = DEV_TOKEN): Promise<{ id: string }> {
  const form = new FormData();
  form.append("file", new Blob([content], { type }), name);
  const res = await fetch(`${app.url}/api/files`, { method: "POST", headers: { authorization: `Bearer ${token}` }, body: form });
  expect(res.status).toBe(200);
  return (await res.json()) as { id: string };
}

/**
 * Publishes an artifact as system code for `owner` (what agents and connectors do, spec 4.3): files by
 * path with text content, each uploaded with the content type of its extension. Answers the artifact id.
 */
export async function publishAs(app: App, owner: string, kind: "document" | "sheet" | "slides" | "file", title: string, files: Record<string, string>): Promise<string> {
  const store = app.container.resolve(FileStore);
  const entries = [];
  for (const [path, content] of Object.entries(files)) entries.push({ path, file: await store.upload(Readable.from([Buffer.from(content)]), { name: path.split("/").pop()!, declaredContentType: contentTypeOf(path), maxBytes: 1e7 }) });
  return (await app.container.resolve(ArtifactStore).publish({ kind, title, files: entries, author: { kind: "system" }, owner })).artifact.id;
}
