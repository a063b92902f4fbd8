import { spawn, execFile, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import path from "node:path";
import { promisify } from "node:util";
import { describe, expect, inject, it } from "vitest";
import { freePort } from "./setup/global";
import { tempDir } from "./helpers";
import { databaseFile, loadConfig } from "../core/config";
import { Database } from "../core/store/db";
import { openPayloadKey, payloadKeyId } from "../core/temporal/payload-keys";
import { sandboxBanner, type BannerApp } from "../sandbox/banner";
import { SANDBOX_DATA_DIR, SANDBOX_DEV_TOKEN } from "../sandbox/defaults";

const ROOT = path.resolve(import.meta.dirname, "..");
/**
 * Runs a TypeScript entry point as `npm start` does: one node process with tsx's loader. Not tsx's CLI,
 * which runs the program as its child and SIGKILLs it when it does not acknowledge a relayed signal
 * within 30 ms (a busy service) — the graceful shutdown then never happens.
 */
const TSX_LOADER = ["--import", "tsx"];
const run = promisify(execFile);

/** The sandbox's environment on a free port and a fresh data dir, against the tests' Temporal server. */
async function sandboxEnv(logLevel: string): Promise<{ port: number; env: NodeJS.ProcessEnv }> {
  const port = await freePort();
  return { port, env: { ...process.env, PORT: String(port), SVC_DATA_DIR: tempDir(), TEMPORAL_ADDRESS: inject("temporalAddress"), SVC_TASK_QUEUE: `sandbox-${port}`, LOG_LEVEL: logLevel, SVC_WORKFLOW_BUNDLE: inject("workflowBundle") } };
}

/** Collects `child`'s stdout and stderr; answers once its banner's `Dev token` line is out (or after 60 s). */
async function bannerOf(child: ChildProcess): Promise<() => string> {
  let out = "";
  child.stdout!.on("data", (d) => (out += d));
  child.stderr!.on("data", (d) => (out += d));
  const deadline = Date.now() + 60_000;
  while (!out.includes("Dev token") && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  return () => out;
}

/** Spawns the sandbox (`node --import tsx sandbox/main.ts`) with `env` and answers once its banner is out; `stop` SIGTERMs it and answers its exit code. */
async function startSandbox(env: NodeJS.ProcessEnv): Promise<{ output: () => string; stop: () => Promise<number | null> }> {
  const child = spawn(process.execPath, [...TSX_LOADER, "sandbox/main.ts"], { cwd: ROOT, env, stdio: ["ignore", "pipe", "pipe"] });
  const exited = new Promise<number | null>((resolve) => child.on("exit", resolve));
  const output = await bannerOf(child);
  return {
    output,
    stop: () => {
      child.kill("SIGTERM");
      return exited;
    },
  };
}

/** Runs `npm run svc -- <args>` (sandbox/cli.ts) with `env`; answers its exit code and output. */
async function cli(args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number; stdout: string; stderr: string }> {
  return run(process.execPath, [...TSX_LOADER, "sandbox/cli.ts", ...args], { cwd: ROOT, env }).then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (e: { code: number; stdout: string; stderr: string }) => ({ code: e.code, stdout: e.stdout, stderr: e.stderr }),
  );
}

/** `diagnostics.sleep` for 1 s as the dev token, sent 200 ms before this answers: a request in flight. */
async function slowAction(port: number): Promise<Promise<Response>> {
  const slow = fetch(`http://127.0.0.1:${port}/api/actions/diagnostics.sleep`, { method: "POST", headers: { authorization: "Bearer svc_dev_sandbox_token", "content-type": "application/json" }, body: JSON.stringify({ params: { ms: 1000 } }) });
  await new Promise((r) => setTimeout(r, 200));
  return slow;
}

describe("the sandbox process (npm start) and CLI (npm run svc)", () => {
  it("boots, prints the banner, serves with a CLI-made token, and shuts down gracefully on SIGTERM", async () => {
    const { port, env } = await sandboxEnv("warn");

    const child = spawn(process.execPath, [...TSX_LOADER, "sandbox/main.ts"], { cwd: ROOT, env, stdio: ["ignore", "pipe", "pipe"] });
    const exited = new Promise<number | null>((resolve) => child.on("exit", resolve));
    const output = await bannerOf(child);
    const out = output();
    expect(out).toContain(`http://127.0.0.1:${port}/docs`);
    expect(out).toContain("svc_dev_sandbox_token");

    // the CLI works on the running service's data dir
    const created = await run(process.execPath, [...TSX_LOADER, "sandbox/cli.ts", "tokens", "create", "--identity", "alice"], { cwd: ROOT, env });
    const token = /^\s+(svc_\S+)$/m.exec(created.stdout)?.[1];
    expect(token).toBeDefined();
    const unknown = (await run(process.execPath, [...TSX_LOADER, "sandbox/cli.ts", "tokens", "create", "--identity", "mallory"], { cwd: ROOT, env }).then(
      () => ({ code: 0, stderr: "" }),
      (e: { code: number; stderr: string }) => e,
    ));
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/Unknown identity "mallory"/);

    const base = `http://127.0.0.1:${port}`;
    const project = await fetch(`${base}/api/project`, { headers: { authorization: `Bearer ${token}` } });
    expect(project.status).toBe(200);
    const forbidden = await fetch(`${base}/api/actions/diagnostics.noop`, { method: "POST", headers: { authorization: `Bearer ${token}`, "content-type": "application/json" }, body: "{}" });
    expect(forbidden.status).toBe(403);

    const slow = await slowAction(port);
    child.kill("SIGTERM");
    const res = await slow;
    expect(res.status).toBe(200);
    expect(((await res.json()) as { status: string }).status).toBe("succeeded");
    expect(await exited).toBe(0);
  });

  it("shuts down gracefully on a SIGTERM sent to npm start's process alone (a supervisor's stop: sh execs the service, so the signal is passed on)", async () => {
    const { port, env } = await sandboxEnv("info");
    const child = spawn("npm", ["start"], { cwd: ROOT, env, stdio: ["ignore", "pipe", "pipe"], detached: true });
    const closed = new Promise<void>((resolve) => child.on("close", () => resolve()));
    const output = await bannerOf(child);
    expect(output()).toContain("Dev token");
    // the service is npm's own child: no tsx CLI between them (it SIGKILLs a child that is slow to
    // acknowledge the signal it relays, which cut a busy service's shutdown short in a CI run)
    const servicePid = Number(/"pid":(\d+)/.exec(output())?.[1]);
    const parentPid = Number(fs.readFileSync(`/proc/${servicePid}/stat`, "utf8").replace(/^.*\) /s, "").split(" ")[1]);
    process.kill(child.pid!, "SIGTERM");
    const stopped = await Promise.race([closed.then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), 30_000))]);
    const serving = await fetch(`http://127.0.0.1:${port}/api/status`, { headers: { authorization: "Bearer svc_dev_sandbox_token" } }).then(() => true, () => false);
    if (serving) process.kill(-child.pid!, "SIGKILL");
    expect([stopped, serving], output().split("\n").slice(-20).join("\n")).toEqual([true, false]);
    expect(output()).toContain('"msg":"stopped"');
    // checked once the service is stopped: a failure here leaves nothing running
    expect(parentPid, "the service's parent").toBe(child.pid);
  });

  it("shuts down gracefully when one Ctrl-C reaches npm start's process group twice (the terminal, then npm relaying it)", async () => {
    const { port, env } = await sandboxEnv("debug");
    // its own process group, as a terminal's foreground job: npm, sh, tsx and node all receive the SIGINT
    const child = spawn("npm", ["start"], { cwd: ROOT, env, stdio: ["ignore", "pipe", "pipe"], detached: true });
    // npm itself dies of the SIGINT at once; the service (which shares its output pipes) is done when they close
    const closed = new Promise<void>((resolve) => child.on("close", () => resolve()));
    const output = await bannerOf(child);
    expect(output()).toContain("Dev token");

    const slow = await slowAction(port);
    // one Ctrl-C reaches the service more than once: from the terminal (the process group), and again
    // from npm, which relays the SIGINT it got to its child; the second delivery is sent here 30 ms
    // after the first
    process.kill(-child.pid!, "SIGINT");
    await new Promise((r) => setTimeout(r, 30));
    process.kill(-child.pid!, "SIGINT");
    const res = await slow;
    expect(res.status).toBe(200);
    expect(((await res.json()) as { status: string }).status).toBe("succeeded");
    await closed;
    const shutdown = output().split("\n").filter((l) => /signal|shutting|shutdown|stopped|exiting|failed/.test(l)).join("\n");
    // on failure, the service's last lines say where its shutdown went (it failed once in a full CI run
    // with no "stopped" and nothing else matched: the filter did not take "shutdown failed" then)
    const tail = output().split("\n").slice(-40).join("\n");
    // the repeat was seen and ignored, and the shutdown ran to its end
    expect(shutdown, tail).toContain("signal repeated within the first one's window");
    expect(shutdown, tail).not.toContain("second signal: exiting now");
    expect(shutdown, tail).toContain('"msg":"stopped"');
    // nothing of the group is left (a process that closed its pipes may take a moment to be reaped)
    const groupAlive = () => {
      try {
        process.kill(-child.pid!, 0);
        return true;
      } catch {
        return false;
      }
    };
    for (const end = Date.now() + 5_000; groupAlive() && Date.now() < end; ) await new Promise((r) => setTimeout(r, 50));
    expect(groupAlive()).toBe(false);
  });

  it("serves a deck frame's files to requests one after another and goes on serving (the frame re-wrapped the file's Node stream in a new Response: a double close ended the process within a few requests)", async () => {
    const { port, env } = await sandboxEnv("warn");
    const sandbox = await startSandbox(env);
    try {
      const base = `http://127.0.0.1:${port}`;
      const signedIn = await fetch(`${base}/api/auth/sign-in`, { method: "POST", headers: { "content-type": "application/json", origin: base }, body: JSON.stringify({ identity: "dev", password: "dev-sandbox-password" }) });
      const cookie = signedIn.headers.get("set-cookie")!.split(";")[0]!;
      const decks = (await (await fetch(`${base}/api/artifacts?kind=slides`, { headers: { authorization: `Bearer ${SANDBOX_DEV_TOKEN}` } })).json()) as { data: { id: string }[] };
      const page = await (await fetch(`${base}/artifacts/${decks.data[0]!.id}`, { headers: { cookie } })).text();
      const frame = /\/artifact-frames\/[^/"?]+\//.exec(page)?.[0];
      expect(frame, "the deck page names its frame").toBeDefined();
      const statuses: number[] = [];
      for (let i = 0; i < 20; i++) {
        // a connection the client closes after each answer (curl's way; the server then ends the socket
        // as the body ends, which is what closed the re-wrapped stream twice)
        const res = await fetch(`${base}${frame}deck.css`, { headers: { connection: "close" } }).catch(() => undefined);
        statuses.push(res?.status ?? 0);
        await res?.arrayBuffer();
      }
      expect(statuses, sandbox.output().split("\n").slice(-15).join("\n")).toEqual(Array(20).fill(200));
      expect((await fetch(`${base}/health`)).status).toBe(200);
    } finally {
      await sandbox.stop();
    }
  });

  it("the CLI refuses a data dir that holds no svc database (a misspelt SVC_DATA_DIR), naming SVC_DATA_DIR, and makes none there", async () => {
    const { env } = await sandboxEnv("warn");
    const cases: [string, string[]][] = [
      [tempDir(), ["tokens", "create", "--identity", "alice"]],
      [path.join(tempDir(), "typo"), ["tokens", "list"]],
      [tempDir(), ["payload-keys", "rotate"]],
    ];
    for (const [dataDir, args] of cases) {
      const answer = await cli(args, { ...env, SVC_DATA_DIR: dataDir });
      expect(answer.code, answer.stderr).toBe(2);
      expect(answer.stderr).toContain(`SVC_DATA_DIR ${dataDir} holds no svc database (svc.db)`);
      expect(answer.stdout).not.toMatch(/Created token/);
      expect(fs.existsSync(path.join(dataDir, "svc.db"))).toBe(false);
    }
  });

  it("the CLI lists the Temporal payload keys and rotates them: the old key retired under its id, a new one current", async () => {
    const { env } = await sandboxEnv("warn");
    const dataDir = tempDir();
    await (await Database.open(databaseFile(dataDir))).close();
    const cliEnv = { ...env, SVC_DATA_DIR: dataDir };
    const none = await cli(["payload-keys"], cliEnv);
    expect([none.code, none.stderr.trim()]).toEqual([1, `${dataDir} has no temporal-payload.key yet: the service writes it at its first start with Temporal`]);
    const first = payloadKeyId(openPayloadKey(dataDir));
    expect((await cli(["payload-keys"], cliEnv)).stdout.trim()).toBe(`current  ${first}  ${path.join(dataDir, "temporal-payload.key")}`);
    const rotated = await cli(["payload-keys", "rotate"], cliEnv);
    expect(rotated.code, rotated.stderr).toBe(0);
    const second = payloadKeyId(openPayloadKey(dataDir));
    expect(second).not.toBe(first);
    expect(rotated.stdout).toContain(`Retired key ${first} (kept in ${path.join(dataDir, "temporal-payload-keys")}, it still reads what it encrypted); new key ${second}`);
    expect((await cli(["payload-keys"], cliEnv)).stdout.trim().split("\n")).toEqual([`current  ${second}  ${path.join(dataDir, "temporal-payload.key")}`, `retired  ${first}  ${path.join(dataDir, "temporal-payload-keys", `${first}.key`)}`]);
    expect((await cli(["payload-keys", "list"], cliEnv)).stdout).toContain(`current  ${second}`);
    for (const wrong of [["payload-keys", "spin"], ["payload-keys", "rotate", "now"]]) expect((await cli(wrong, cliEnv)).stderr.trim()).toBe("usage: npm run svc -- payload-keys [list | rotate]");
    expect(payloadKeyId(openPayloadKey(dataDir))).toBe(second); // the refused commands rotated nothing
  });

  it("a data dir it cannot use or a port in use ends the start with one line naming the variable and its value, exit 2, no stack trace", async () => {
    const { port, env } = await sandboxEnv("warn");
    /** Runs the sandbox to its end; answers its exit code and what it wrote to stderr. */
    const failedStart = (extra: NodeJS.ProcessEnv) =>
      new Promise<{ code: number | null; stderr: string }>((resolve) => {
        const child = spawn(process.execPath, [...TSX_LOADER, "sandbox/main.ts"], { cwd: ROOT, env: { ...env, ...extra }, stdio: ["ignore", "ignore", "pipe"] });
        let stderr = "";
        child.stderr!.on("data", (d) => (stderr += d));
        child.on("exit", (code) => resolve({ code, stderr }));
      });
    const file = path.join(tempDir(), "a-file");
    fs.writeFileSync(file, "");
    const notADir = await failedStart({ SVC_DATA_DIR: file });
    expect(notADir.code, notADir.stderr).toBe(2);
    expect(notADir.stderr.trim()).toBe(`Invalid configuration: SVC_DATA_DIR ${file} is a file, not a directory (EEXIST)`);

    // a retired payload key that is cut short (core/temporal/payload-keys.ts): the same one line, read before Temporal is connected
    const keysDir = tempDir();
    fs.mkdirSync(path.join(keysDir, "temporal-payload-keys"));
    fs.writeFileSync(path.join(keysDir, "temporal-payload-keys", "cut.key"), "short");
    const cutKey = await failedStart({ SVC_DATA_DIR: keysDir });
    expect(cutKey.code, cutKey.stderr).toBe(2);
    expect(cutKey.stderr.trim()).toBe(`Invalid configuration: SVC_DATA_DIR ${path.join(keysDir, "temporal-payload-keys", "cut.key")} must hold a 32-byte key of the Temporal payloads svc encrypts (it holds 5 bytes); restore it from a backup of the data directory`);

    const busy = net.createServer();
    await new Promise<void>((resolve) => busy.listen(port, "127.0.0.1", resolve));
    try {
      const inUse = await failedStart({});
      expect(inUse.code, inUse.stderr).toBe(2);
      expect(inUse.stderr.trim()).toBe(`Invalid configuration: PORT ${port} is already in use on 127.0.0.1 (EADDRINUSE): stop what listens there, or choose another PORT`);
    } finally {
      busy.close();
    }
  });

  it("does not print a development token set by SVC_DEV_TOKEN, which works", async () => {
    const { port, env } = await sandboxEnv("warn");
    const secret = "svc_operator_secret_7d1e0b";
    const sandbox = await startSandbox({ ...env, SVC_DEV_TOKEN: secret });
    try {
      expect(sandbox.output()).not.toContain(secret);
      expect(sandbox.output()).toContain('Bearer $SVC_DEV_TOKEN"');
      expect((await fetch(`http://127.0.0.1:${port}/api/status`, { headers: { authorization: `Bearer ${secret}` } })).status).toBe(200);
    } finally {
      expect(await sandbox.stop()).toBe(0);
    }
  });

  it("keeps a development token revoked with the CLI revoked at the next start, and its banner says so instead of offering it", async () => {
    const { port, env } = await sandboxEnv("warn");
    const status = () => fetch(`http://127.0.0.1:${port}/api/status`, { headers: { authorization: `Bearer ${SANDBOX_DEV_TOKEN}` } }).then((r) => r.status);
    const first = await startSandbox(env);
    expect(await status()).toBe(200);
    const listed = await cli(["tokens", "list"], env);
    const id = /^(tok_\S+)\s+dev\s+development\b/m.exec(listed.stdout)?.[1];
    expect(id, listed.stdout).toBeDefined();
    expect((await cli(["tokens", "revoke", id!], env)).code).toBe(0);
    expect(await first.stop()).toBe(0);

    const second = await startSandbox(env);
    try {
      const banner = second.output();
      expect(banner).toMatch(/Dev token .*revoked/);
      expect(banner).toContain("npm run svc -- tokens create --identity dev");
      expect(banner).not.toContain(`Bearer ${SANDBOX_DEV_TOKEN}`);
      expect(await status()).toBe(401);
      expect((await cli(["tokens", "list"], env)).stdout).toMatch(new RegExp(`^${id}\\s.*revoked`, "m"));
    } finally {
      expect(await second.stop()).toBe(0);
    }
  });
});

describe("the sandbox's start banner", () => {
  /** A running app as the banner sees it, with the given config environment and development token status. */
  const appWith = (env: Record<string, string>, devTokenStatus: BannerApp["devTokenStatus"]): BannerApp => ({
    url: "http://127.0.0.1:3002",
    config: loadConfig({ SVC_API_PUBLIC_ORIGIN: "http://localhost:3002", ...env }, { dataDir: SANDBOX_DATA_DIR, devToken: SANDBOX_DEV_TOKEN }),
    devTokenStatus,
    temporal: { uiUrl: "http://localhost:8233", address: "127.0.0.1:7233" },
  });
  const banner = (env: Record<string, string>, status: BannerApp["devTokenStatus"]) => sandboxBanner(appWith(env, status), { seconds: 1.2, devIdentity: "dev" });

  it("shows the pages and the reference at the public origin when a proxy serves them under a path prefix", () => {
    expect(banner({}, "active")).toContain("  Artifacts    http://127.0.0.1:3002/artifacts (sign in");
    const shown = banner({ SVC_API_PUBLIC_ORIGIN: "https://example.com/svc" }, "active");
    expect(shown).toContain("  Docs         https://example.com/svc/docs\n");
    expect(shown).toContain("  Artifacts    https://example.com/svc/artifacts (sign in");
    expect(shown).toContain("  API          http://127.0.0.1:3002\n");
  });

  it("offers the development token and a first curl when it works", () => {
    const shown = banner({}, "active");
    expect(shown).toContain(`Dev token    ${SANDBOX_DEV_TOKEN}`);
    expect(shown).toContain(`curl -H "Authorization: Bearer ${SANDBOX_DEV_TOKEN}" http://127.0.0.1:3002/api/status`);
  });

  it("never prints a development token set by SVC_DEV_TOKEN (a secret of the operator's): it names the variable, in the curl too", () => {
    const secret = "svc_operator_secret_4f9a2c";
    for (const status of ["active", "revoked"] as const) {
      const shown = banner({ SVC_DEV_TOKEN: secret }, status);
      expect(shown).not.toContain(secret);
      expect(shown).toContain("SVC_DEV_TOKEN");
    }
    expect(banner({ SVC_DEV_TOKEN: secret }, "active")).toContain('curl -H "Authorization: Bearer $SVC_DEV_TOKEN" http://127.0.0.1:3002/api/status');
    // the sandbox's well-known default, set explicitly, is no secret
    expect(banner({ SVC_DEV_TOKEN: SANDBOX_DEV_TOKEN }, "active")).toContain(`Dev token    ${SANDBOX_DEV_TOKEN}`);
  });

  it("says a revoked development token is revoked and how to make a new one, and offers no curl with it", () => {
    const shown = banner({}, "revoked");
    expect(shown).toMatch(/Dev token .*revoked/);
    expect(shown).toContain("npm run svc -- tokens create --identity dev");
    expect(shown).toContain("SVC_DEV_TOKEN");
    expect(shown).not.toContain(`Bearer ${SANDBOX_DEV_TOKEN}`);
    expect(shown).toContain('Bearer <token>"');
  });

  it("says SVC_DEV_TOKEN=none leaves no development token, and how to make a token; a data dir of its own is named in the command", () => {
    const shown = banner({ SVC_DEV_TOKEN: "none" }, "disabled");
    expect(shown).toContain("Dev token    none (SVC_DEV_TOKEN=none)");
    expect(shown).toContain("New token    npm run svc -- tokens create --identity dev");
    expect(shown).not.toContain(SANDBOX_DEV_TOKEN);
    expect(banner({ SVC_DEV_TOKEN: "none", SVC_DATA_DIR: "/srv/svc data" }, "disabled")).toContain("New token    SVC_DATA_DIR='/srv/svc data' npm run svc -- tokens create --identity dev");
  });
});
