/** API tokens and permissions (spec 5), in-process and over HTTP. */
import { execFile } from "node:child_process";
import path from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { DEV_TOKEN, client, describeMatrix, eventually, sandboxSuite, startApp, tempDir } from "./helpers";
import { Database } from "../core/store/db";
import { TokenService } from "../core/auth/tokens";

const suite = sandboxSuite();

describeMatrix("authentication and permissions (spec 5)", (transport) => {
  const dev = client(() => suite.app, DEV_TOKEN, transport);

  it("answers 401 without a token or with an unknown one, with the structured error", async () => {
    for (const c of [client(suite.app, null, transport), client(suite.app, "svc_not_a_real_token", transport)]) {
      const res = await c.get("/api/project");
      expect(res.status).toBe(401);
      expect(res.body).toEqual({ error: { code: "unauthorized", message: expect.any(String) } });
      expect(res.headers.get("www-authenticate")).toMatch(/^Bearer/);
    }
  });

  it("stores tokens hashed, never in clear", async () => {
    const rows = await suite.app.container.resolve(Database).all<{ token_hash: string }>("SELECT token_hash FROM api_tokens");
    expect(rows.length).toBeGreaterThanOrEqual(4);
    for (const secret of [...Object.values(suite.tokens), "svc_dev_sandbox_token"]) expect(rows.some((r) => r.token_hash.includes(secret))).toBe(false);
  });

  it("answers 403 when the identity lacks the permission, naming it", async () => {
    const res = await client(suite.app, suite.tokens.auditor, transport).get("/api/objects?objectTypeId=invoice");
    expect(res.status).toBe(403);
    expect(res.body.error).toMatchObject({ code: "forbidden", details: { permission: "view:object:invoice" } });
    expect((await client(suite.app, suite.tokens.auditor, transport).get("/api/objects?objectTypeId=customer")).status).toBe(200);
    const run = await client(suite.app, suite.tokens.auditor, transport).post("/api/actions/diagnostics.noop", {});
    expect(run.status).toBe(403);
  });

  it("a revoked token stops working", async () => {
    const service = suite.app.container.resolve(TokenService);
    const { token, info } = await service.create("alice", "to-revoke");
    expect((await client(suite.app, token, transport).get("/api/project")).status).toBe(200);
    await service.revoke(info.id);
    expect((await client(suite.app, token, transport).get("/api/project")).status).toBe(401);
  });
});

describe("the development token across starts", () => {
  /** The app's answer to a request with the sandbox's development token. */
  const devTokenAnswer = async (app: Awaited<ReturnType<typeof startApp>>) => (await client(app, DEV_TOKEN).get("/api/project")).status;
  const revokeDevelopmentToken = async (app: Awaited<ReturnType<typeof startApp>>) => {
    const service = app.container.resolve(TokenService);
    const dev = (await service.list()).find((t) => t.name === "development" && !t.revokedAt);
    expect(dev).toBeDefined();
    expect(await service.revoke(dev!.id)).toBe(true);
  };

  it("a revoked development token stays revoked at the next start (the start does not restore it)", async () => {
    const dataDir = tempDir();
    const first = await startApp({ dataDir });
    try {
      expect(first.devTokenStatus).toBe("active");
      await revokeDevelopmentToken(first);
      expect(await devTokenAnswer(first)).toBe(401);
    } finally {
      await first.close();
    }
    const second = await startApp({ dataDir });
    try {
      expect(second.devTokenStatus).toBe("revoked");
      expect(await devTokenAnswer(second)).toBe(401);
    } finally {
      await second.close();
    }
    // a new value is a new token, which works (the revoked one stays revoked)
    const renewed = await startApp({ dataDir, env: { SVC_DEV_TOKEN: "svc_dev_second_value_0123" } });
    try {
      expect(renewed.devTokenStatus).toBe("active");
      expect((await client(renewed, "svc_dev_second_value_0123").get("/api/project")).status).toBe(200);
      expect(await devTokenAnswer(renewed)).toBe(401);
    } finally {
      await renewed.close();
    }
  });

  it("SVC_DEV_TOKEN=none runs without one, and the development token an earlier start stored stops working", async () => {
    const dataDir = tempDir();
    const first = await startApp({ dataDir });
    try {
      expect(await devTokenAnswer(first)).toBe(200);
    } finally {
      await first.close();
    }
    const without = await startApp({ dataDir, env: { SVC_DEV_TOKEN: "none" } });
    try {
      expect(without.devTokenStatus).toBe("disabled");
      expect(without.config.devToken).toBeUndefined();
      expect(await devTokenAnswer(without)).toBe(401);
      expect((await without.container.resolve(TokenService).list()).filter((t) => t.name === "development").every((t) => t.revokedAt)).toBe(true);
    } finally {
      await without.close();
    }
  });
});

describe("token expiry and last use (npm run svc -- tokens create --expires-in, tokens list)", () => {
  it("a token with an expiry works until then, and after it answers 401 saying it expired, even while its lookup is cached", async () => {
    const service = suite.app.container.resolve(TokenService);
    const { token, info } = await service.create("alice", "short-lived", { expiresInMs: 1500 });
    expect(Date.parse(info.expiresAt!) - Date.parse(info.createdAt)).toBe(1500);
    expect((await client(suite.app, token).get("/api/project")).status).toBe(200);
    await new Promise((r) => setTimeout(r, Date.parse(info.expiresAt!) - Date.now() + 50));
    const refused = await client(suite.app, token).get("/api/project");
    expect([refused.status, refused.body.error.code, refused.body.error.message]).toEqual([401, "unauthorized", `The API token expired at ${info.expiresAt}: create a new one (npm run svc -- tokens create)`]);
    expect((await service.list()).find((t) => t.id === info.id)).toMatchObject({ expiresAt: info.expiresAt });
    await expect(service.create("alice", "forever", { expiresInMs: 0 })).rejects.toThrow("A token's lifetime must be from 1 ms to 3650 days");
  });

  it("stores when a token was last used, to the hour, writing at most once an hour per token", async () => {
    const service = suite.app.container.resolve(TokenService);
    const db = suite.app.container.resolve(Database);
    const { token, info } = await service.create("auditor", "used");
    const lastUsed = async () => (await service.list()).find((t) => t.id === info.id)!.lastUsedAt;
    expect(await lastUsed()).toBeUndefined();
    expect((await client(suite.app, token).get("/api/project")).status).toBe(200);
    const hour = new Date(Date.now() - (Date.now() % 3_600_000)).toISOString();
    await eventually(async () => (await lastUsed()) === hour);
    // an hour ago and more: the next lookup (the cache is cleared by a revocation) writes it again
    const old = new Date(Date.now() - 2 * 3_600_000).toISOString();
    await db.transaction((tx) => tx.run("UPDATE api_tokens SET last_used_at = ? WHERE id = ?", [old, info.id]));
    await service.revoke((await service.create("auditor", "to-clear-the-cache")).info.id);
    expect((await client(suite.app, token).get("/api/project")).status).toBe(200);
    await eventually(async () => (await lastUsed()) === hour);
    // within the hour: a lookup writes nothing
    const recent = new Date(Date.now() - 60_000).toISOString();
    await db.transaction((tx) => tx.run("UPDATE api_tokens SET last_used_at = ? WHERE id = ?", [recent, info.id]));
    await service.revoke((await service.create("auditor", "to-clear-the-cache")).info.id);
    const transactions = db.stats().transactions;
    expect((await client(suite.app, token).get("/api/project")).status).toBe(200);
    await new Promise((r) => setTimeout(r, 200));
    expect(await lastUsed()).toBe(recent);
    // not even a write that changes nothing
    expect(db.stats().transactions).toBe(transactions);
  });

  it("the CLI creates a token with --expires-in and lists expiry and last use", { timeout: 60_000 }, async () => {
    const dataDir = tempDir();
    const app = await startApp({ dataDir });
    await app.close();
    const cli = (args: string[]) =>
      promisify(execFile)(process.execPath, ["--import", "tsx", "sandbox/cli.ts", "tokens", ...args], { cwd: path.resolve(import.meta.dirname, ".."), env: { ...process.env, SVC_DATA_DIR: dataDir } }).then(
        (r) => ({ code: 0, ...r }),
        (err: { code: number; stdout: string; stderr: string }) => ({ code: err.code, stdout: err.stdout, stderr: err.stderr }),
      );
    const created = await cli(["create", "--identity", "alice", "--name", "quarterly", "--expires-in", "90d"]);
    expect(created.code, created.stderr).toBe(0);
    const until = /working until (\S+)\. It is shown only now/.exec(created.stdout)?.[1];
    expect(Date.parse(until!) - Date.now()).toBeGreaterThan(90 * 86_400_000 - 60_000);
    const listed = await cli(["list"]);
    expect(listed.stdout).toMatch(new RegExp(`^tok_\\S+\\s+alice\\s+quarterly\\s+\\S+\\s+never\\s+expires ${until!.replace(/\./g, "\\.")}$`, "m"));
    const bad = await cli(["create", "--identity", "alice", "--expires-in", "soon"]);
    expect([bad.code, bad.stderr.trim()]).toEqual([2, '--expires-in takes a number of days or hours, such as 90d or 12h (got "soon")']);
  });
});
