/** API tokens and permissions (spec 5), in-process and over HTTP. */
import { execFile } from "node:child_process";
import path from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { DEV_TOKEN, client, describeMatrix, eventually, sandboxSuite, startApp, tempDir } from "./helpers";
import { Database } from "../core/store/db";
import { TokenService, tokenState } from "../core/auth/tokens";
import { ProjectRegistry } from "../core/project/registry";

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
    expect([refused.status, refused.body.error.code, refused.body.error.message]).toEqual([401, "unauthorized", `The API token expired at ${info.expiresAt}: make a new one (POST /api/tokens when signed in, or npm run svc -- tokens create)`]);
    expect((await service.list()).find((t) => t.id === info.id)).toMatchObject({ expiresAt: info.expiresAt });
    await expect(service.create("alice", "forever", { expiresInMs: 0 })).rejects.toThrow("A token's lifetime must be from 1 ms to 3650 days");
  });

  it("stores when a token was last used, to the hour, writing at most once an hour per token", async () => {
    const service = suite.app.container.resolve(TokenService);
    const db = suite.app.container.resolve(Database);
    const { token, info } = await service.create("auditor", "used");
    const lastUsed = async () => (await service.list()).find((t) => t.id === info.id)!.lastUsedAt;
    expect(await lastUsed()).toBeUndefined();
    const hourOf = (ms: number) => new Date(ms - (ms % 3_600_000)).toISOString();
    const before = Date.now();
    expect((await client(suite.app, token).get("/api/project")).status).toBe(200);
    // the hour it was used in (the request may cross an hour's end)
    const hours = [hourOf(before), hourOf(Date.now())];
    await eventually(async () => hours.includes((await lastUsed()) ?? ""));
    const hour = (await lastUsed())!;
    // stored an hour ago or more (as by a process that used it then): a lookup of a fresh service (another process) writes it again
    const fresh = () => new TokenService(db, suite.app.container.resolve(ProjectRegistry));
    const lookup = (service: TokenService) => service.authenticate(new Request("http://svc.test/api/project", { headers: { authorization: `Bearer ${token}` } }));
    const old = new Date(Date.now() - 2 * 3_600_000).toISOString();
    await db.transaction((tx) => tx.run("UPDATE api_tokens SET last_used_at = ? WHERE id = ?", [old, info.id]));
    await lookup(fresh());
    await eventually(async () => (await lastUsed()) !== old);
    expect(Date.parse((await lastUsed())!)).toBeGreaterThanOrEqual(Date.parse(hour));
    // stored within the hour: a lookup writes nothing, not even a write that changes nothing
    const recent = new Date(Date.now() - 60_000).toISOString();
    await db.transaction((tx) => tx.run("UPDATE api_tokens SET last_used_at = ? WHERE id = ?", [recent, info.id]));
    let transactions = db.stats().transactions;
    await lookup(fresh());
    await new Promise((r) => setTimeout(r, 200));
    expect(await lastUsed()).toBe(recent);
    expect(db.stats().transactions).toBe(transactions);
    // and one process writes it once an hour, however many of its lookups find it old
    await db.transaction((tx) => tx.run("UPDATE api_tokens SET last_used_at = ? WHERE id = ?", [old, info.id]));
    const once = fresh();
    await lookup(once);
    await eventually(async () => (await lastUsed()) !== old);
    await db.transaction((tx) => tx.run("UPDATE api_tokens SET last_used_at = ? WHERE id = ?", [old, info.id]));
    transactions = db.stats().transactions;
    await once.revoke((await once.create("auditor", "to-clear-the-cache")).info.id);
    await lookup(once);
    await new Promise((r) => setTimeout(r, 200));
    expect(db.stats().transactions - transactions).toBe(2);
    expect(await lastUsed()).toBe(old);
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

describe("personal tokens over HTTP (GET/POST /api/tokens, POST /api/tokens/:tokenId/revoke)", () => {
  /** A browser session of `identity`: its cookie and CSRF token, as headers for fetch. */
  async function session(identity: string, password: string) {
    const res = await fetch(`${suite.app.url}/api/auth/sign-in`, { method: "POST", headers: { "content-type": "application/json", origin: suite.app.url }, body: JSON.stringify({ identity, password }) });
    expect(res.status).toBe(200);
    const cookie = (res.headers.get("set-cookie") ?? "").split(";")[0]!;
    const { csrfToken } = (await res.json()) as { csrfToken: string };
    const call = async (method: string, path: string, body?: unknown, opts: { csrf?: boolean } = {}) => {
      const r = await fetch(`${suite.app.url}${path}`, { method, headers: { cookie, origin: suite.app.url, ...(opts.csrf === false ? {} : { "x-svc-csrf": csrfToken }), ...(body === undefined ? {} : { "content-type": "application/json" }) }, body: body === undefined ? undefined : JSON.stringify(body) });
      return { status: r.status, body: (await r.json()) as any };
    };
    return { call };
  }

  it("a signed-in user makes a token of their own identity (90 days by default), lists and revokes it; a bearer token cannot", async () => {
    const alice = await session("alice", "alice-sandbox-password");
    const made = await alice.call("POST", "/api/tokens", { name: "  laptop script " });
    expect(made.status).toBe(201);
    expect(made.body).toMatchObject({ token: expect.stringMatching(/^svc_/), tokenInfo: { id: expect.stringMatching(/^tok_/), identityId: "alice", name: "laptop script" } });
    const info = made.body.tokenInfo;
    expect(Date.parse(info.expiresAt) - Date.parse(info.createdAt)).toBe(90 * 86_400_000);
    // it carries alice's permissions, no more
    expect((await client(suite.app, made.body.token).get("/api/objects?objectTypeId=invoice")).status).toBe(200);
    expect((await client(suite.app, made.body.token).post("/api/actions/diagnostics.noop", {})).status).toBe(403);
    // listed without its secret, newest first
    const listed = await alice.call("GET", "/api/tokens");
    expect(listed.body.tokens[0]).toEqual(expect.objectContaining({ id: info.id, name: "laptop script" }));
    expect(JSON.stringify(listed.body)).not.toContain(made.body.token);
    expect(listed.body.tokens.every((t: { identityId: string }) => t.identityId === "alice")).toBe(true);
    // a bearer token (even this one) can neither list nor make tokens
    for (const [method, body] of [["GET", undefined], ["POST", { name: "more" }]] as const) {
      const r = await client(suite.app, made.body.token)[method === "GET" ? "get" : "post"]("/api/tokens", body as never);
      expect([r.status, r.body.error.code]).toEqual([401, "unauthorized"]);
    }
    // another identity's token is not alice's to revoke
    const auditors = await suite.app.container.resolve(TokenService).create("auditor", "not-alices");
    const other = await alice.call("POST", `/api/tokens/${auditors.info.id}/revoke`);
    expect([other.status, other.body.error.code]).toEqual([404, "not_found"]);
    expect((await client(suite.app, auditors.token).get("/api/project")).status).toBe(200);
    // her own: revoked at once
    const revoked = await alice.call("POST", `/api/tokens/${info.id}/revoke`);
    expect(revoked.status).toBe(200);
    expect(revoked.body).toMatchObject({ id: info.id, revokedAt: expect.any(String) });
    expect((await client(suite.app, made.body.token).get("/api/project")).status).toBe(401);
    expect((await alice.call("POST", `/api/tokens/${info.id}/revoke`)).status).toBe(404);
  });

  it("refuses a lifetime out of range, a missing CSRF token, and a 51st working token, writing nothing", async () => {
    const auditor = await session("auditor", "auditor-sandbox-password");
    const service = suite.app.container.resolve(TokenService);
    const before = (await service.listFor("auditor")).length;
    for (const [body, message] of [
      [{ name: "x", expiresInMs: 60_000 }, "expiresInMs must be at least an hour (3600000)"],
      [{ name: "x", expiresInMs: 400 * 86_400_000 }, `expiresInMs must be at most a year (${365 * 86_400_000})`],
      [{ name: " " }, "name must not be empty"],
      [{ name: "x", scopes: ["all"] }, undefined],
    ] as const) {
      const r = await auditor.call("POST", "/api/tokens", body);
      expect([r.status, r.body.error.code], JSON.stringify(body)).toEqual([400, "invalid_request"]);
      if (message) expect(r.body.error.message).toContain(message);
    }
    // the session's cookie and an allowed Origin, without the CSRF token
    const noCsrf = await auditor.call("POST", "/api/tokens", { name: "x" }, { csrf: false });
    expect([noCsrf.status, noCsrf.body.error.code]).toEqual([403, "csrf_token_invalid"]);
    // no control characters in a name (it is shown in the CLI's list, on a terminal)
    const escape = await auditor.call("POST", "/api/tokens", { name: "ok\u001b[2Jhidden" });
    expect([escape.status, escape.body.error.message]).toEqual([400, expect.stringContaining("name must not hold control characters")]);
    expect((await service.listFor("auditor")).length).toBe(before);
    // up to 50 working tokens: the 51st is refused until one is revoked
    const working = (await service.listFor("auditor")).filter((t) => tokenState(t) === "active").length;
    const made = [];
    for (let i = working; i < 50; i++) made.push((await service.create("auditor", `bulk-${i}`, { expiresInMs: 3_600_000 })).info.id);
    const refused = await auditor.call("POST", "/api/tokens", { name: "one too many" });
    expect([refused.status, refused.body.error.code, refused.body.error.details]).toEqual([409, "conflict", { limit: 50 }]);
    await service.revoke(made[0]!);
    expect((await auditor.call("POST", "/api/tokens", { name: "one more" })).status).toBe(201);
    for (const id of made) await service.revoke(id);
  });
});
