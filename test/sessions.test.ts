import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startApp } from "./helpers";
import { Database } from "../core/store/db";
import { TokenService } from "../core/auth/tokens";
import { sandboxProject } from "../sandbox/project";
import type { App } from "../core/app";

let app: App;
let origin: string;
/** The app's log lines at warn and above, parsed. */
const logged: Array<Record<string, unknown>> = [];
beforeAll(async () => {
  app = await startApp({ logger: pino({ level: "warn" }, { write: (line: string) => void logged.push(JSON.parse(line)) }) });
  origin = app.url;
});
afterAll(() => app?.close());

async function signIn(identity: string, password: string, headers: Record<string, string> = {}) {
  const res = await fetch(`${app.url}/api/auth/sign-in`, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: JSON.stringify({ identity, password }) });
  const cookie = res.headers.get("set-cookie") ?? "";
  return { res, body: (await res.json()) as any, cookie, session: cookie.split(";")[0]! };
}

describe("browser sessions (spec 5)", () => {
  it("signs in with a password checked against its scrypt hash, setting an HttpOnly SameSite cookie", async () => {
    const { res, body, cookie } = await signIn("alice", "alice-sandbox-password", { origin });
    expect(res.status).toBe(200);
    expect(body).toMatchObject({ identity: { type: "user", id: "alice" }, csrfToken: expect.stringMatching(/^csrf_/), expiresAt: expect.any(String) });
    expect(cookie).toMatch(/^svc_session=svcs_[\w-]+; Path=\/; HttpOnly; SameSite=Lax; Max-Age=28800$/);
    const rows = await app.container.resolve(Database).all<{ hash: string }>("SELECT hash FROM passwords");
    expect(rows.length).toBeGreaterThanOrEqual(3);
    expect(rows.every((r) => r.hash.startsWith("scrypt$16384$8$1$") && !r.hash.includes("sandbox-password"))).toBe(true);
  });

  it("refuses wrong passwords, unknown identities, service accounts and foreign origins alike", async () => {
    for (const [identity, password] of [["alice", "wrong-password"], ["mallory", "whatever-password"], ["ops-bot", "anything-at-all"]]) {
      const { res, body } = await signIn(identity!, password!);
      expect(res.status).toBe(401);
      expect(body.error).toEqual({ code: "unauthorized", message: "Wrong identity or password" });
    }
    // each refusal is logged with the identity tried and the client's address, never the password
    const refused = logged.filter((l) => l.msg === "sign-in refused: wrong identity or password");
    expect(refused.map((l) => l.identity)).toEqual(["alice", "mallory", "ops-bot"]);
    for (const line of refused) expect(line).toMatchObject({ level: 40, clientAddress: expect.stringMatching(/^(::ffff:)?127\.0\.0\.1$/) });
    expect(JSON.stringify(refused)).not.toMatch(/wrong-password|whatever-password|anything-at-all/);
    expect((await signIn("alice", "alice-sandbox-password", { origin: "https://evil.example" })).res.status).toBe(403);
  });

  it("slows down guessing: past an identity's free failures, an attempt that comes too soon is 429 with Retry-After, its password unchecked", async () => {
    for (let i = 0; i < 5; i++) expect((await signIn("auditor", `wrong-guess-${i}`)).res.status).toBe(401);
    const refused = await signIn("auditor", "auditor-sandbox-password");
    expect(refused.res.status).toBe(429);
    expect(refused.res.headers.get("retry-after")).toBe("1");
    expect(refused.body.error).toMatchObject({ code: "too_many_requests", details: { retryAfterSeconds: 1 } });
    await new Promise((r) => setTimeout(r, 1100));
    expect((await signIn("auditor", "auditor-sandbox-password")).res.status).toBe(200);
  });

  it("authenticates API reads by cookie, and requires an allowed Origin and the CSRF token on mutating requests", async () => {
    const { body, session } = await signIn("dev", "dev-sandbox-password", { origin });
    const read = await fetch(`${app.url}/api/project`, { headers: { cookie: session } });
    expect(read.status).toBe(200);
    const run = (headers: Record<string, string>) => fetch(`${app.url}/api/actions/diagnostics.noop`, { method: "POST", headers: { "content-type": "application/json", cookie: session, ...headers }, body: JSON.stringify({ params: {} }) });
    const noCsrf = await run({ origin });
    expect(noCsrf.status).toBe(403);
    expect(((await noCsrf.json()) as any).error.code).toBe("csrf_token_invalid");
    const wrongCsrf = await run({ origin, "x-svc-csrf": body.csrfToken.slice(0, -1) + "x" });
    expect(((await wrongCsrf.json()) as any).error.code).toBe("csrf_token_invalid");
    const noOrigin = await run({ "x-svc-csrf": body.csrfToken });
    expect(((await noOrigin.json()) as any).error.code).toBe("origin_not_allowed");
    const evil = await run({ origin: "https://evil.example", "x-svc-csrf": body.csrfToken });
    expect(evil.status).toBe(403);
    const ok = await run({ origin, "x-svc-csrf": body.csrfToken });
    expect(ok.status).toBe(200);
    expect(((await ok.json()) as any).status).toBe("succeeded");
  });

  it("treats a session cookie that is not valid percent-encoding as no session (401, not 500)", async () => {
    for (const path of ["/api/project", "/api/auth/session"]) {
      for (const cookie of ["svc_session=%", "svc_session=%E0%A4%A"]) {
        const res = await fetch(`${app.url}${path}`, { headers: { cookie } });
        expect(res.status, `${path} ${cookie}`).toBe(401);
        expect(((await res.json()) as any).error.code).toBe("unauthorized");
      }
    }
  });

  it("refuses bearer tokens on session-only routes, and says so in /docs", async () => {
    const res = await fetch(`${app.url}/api/auth/session`, { headers: { authorization: "Bearer svc_dev_sandbox_token" } });
    expect(res.status).toBe(401);
    expect(((await res.json()) as any).error.message).toMatch(/does not accept bearer tokens/);
    const doc = (await (await fetch(`${app.url}/docs/openapi.json`)).json()) as any;
    expect(doc.paths["/api/auth/session"].get["x-svc-bearer-auth"]).toBe(false);
    expect(doc.paths["/api/auth/session"].get.security).toEqual([{ sessionCookie: [] }]);
  });

  it("renews sessions on HTTP use, expires them, and ends them at sign-out", async () => {
    const db = app.container.resolve(Database);
    const { body, session } = await signIn("auditor", "auditor-sandbox-password", { origin });
    await db.transaction((tx) => tx.run("UPDATE sessions SET expires_at = ? WHERE identity_id = 'auditor'", [Date.now() + 120_000]));
    const used = await fetch(`${app.url}/api/auth/session`, { headers: { cookie: session } });
    expect(used.status).toBe(200);
    const renewed = await db.get<{ expires_at: number }>("SELECT MAX(expires_at) AS expires_at FROM sessions WHERE identity_id = 'auditor'");
    expect(renewed!.expires_at).toBeGreaterThan(Date.now() + 8 * 3_600_000 - 60_000);
    // the browser gets the cookie again with a fresh Max-Age (else it drops it at sign-in + TTL however active the user is)
    expect(used.headers.get("set-cookie")).toBe(`${session}; Path=/; HttpOnly; SameSite=Lax; Max-Age=28800`);
    // not again within the renewal step (one write a minute at most)
    expect((await fetch(`${app.url}/api/project`, { headers: { cookie: session } })).headers.get("set-cookie")).toBeNull();
    // a page renews it too
    await db.transaction((tx) => tx.run("UPDATE sessions SET expires_at = ? WHERE identity_id = 'auditor' AND ended_at IS NULL", [Date.now() + 120_000]));
    const page = await fetch(`${app.url}/artifacts`, { headers: { cookie: session }, redirect: "manual" });
    expect(page.status).toBe(200);
    expect(page.headers.get("set-cookie")).toBe(`${session}; Path=/; HttpOnly; SameSite=Lax; Max-Age=28800`);

    // sign-out clears the cookie, and a renewal on the same request does not set it again
    await db.transaction((tx) => tx.run("UPDATE sessions SET expires_at = ? WHERE identity_id = 'auditor' AND ended_at IS NULL", [Date.now() + 120_000]));
    const out = await fetch(`${app.url}/api/auth/sign-out`, { method: "POST", headers: { cookie: session, origin, "x-svc-csrf": body.csrfToken } });
    expect(out.status).toBe(200);
    expect(out.headers.get("set-cookie")).toMatch(/^svc_session=; .*Max-Age=0$/);
    expect((await fetch(`${app.url}/api/project`, { headers: { cookie: session } })).status).toBe(401);

    const second = await signIn("auditor", "auditor-sandbox-password", { origin });
    await db.transaction((tx) => tx.run("UPDATE sessions SET expires_at = ? WHERE identity_id = 'auditor' AND ended_at IS NULL", [Date.now() - 1]));
    const expired = await fetch(`${app.url}/api/project`, { headers: { cookie: second.session } });
    expect(expired.status).toBe(401);
    expect(((await expired.json()) as any).error.message).toMatch(/expired/);
  });

  it("ends every session whose cookie the sign-out carries (a Path=/ cookie left from before the service moved under a proxy's prefix is sent beside the prefix's)", async () => {
    const older = await signIn("alice", "alice-sandbox-password", { origin });
    const newer = await signIn("auditor", "auditor-sandbox-password", { origin });
    // the browser sends the longer Path's cookie first: the newer session is the request's
    const both = `${newer.session}; ${older.session}`;
    expect(((await (await fetch(`${app.url}/api/auth/session`, { headers: { cookie: both } })).json()) as any).identity.id).toBe("auditor");
    const out = await fetch(`${app.url}/api/auth/sign-out`, { method: "POST", headers: { cookie: both, origin, "x-svc-csrf": newer.body.csrfToken } });
    expect(out.status).toBe(200);
    // the older cookie, still in the browser, no longer signs anyone in
    for (const session of [newer.session, older.session]) expect((await fetch(`${app.url}/api/project`, { headers: { cookie: session } })).status).toBe(401);
  });

  it("renews a one-minute session too (a quarter of the TTL behind, not a fixed minute that a one-minute TTL never reaches)", async () => {
    const short = await startApp({ env: { SVC_SESSION_TTL_MS: "60000" } });
    try {
      const res = await fetch(`${short.url}/api/auth/sign-in`, { method: "POST", headers: { "content-type": "application/json", origin: short.url }, body: JSON.stringify({ identity: "alice", password: "alice-sandbox-password" }) });
      const session = (res.headers.get("set-cookie") ?? "").split(";")[0]!;
      const db = short.container.resolve(Database);
      await db.transaction((tx) => tx.run("UPDATE sessions SET expires_at = ? WHERE identity_id = 'alice'", [Date.now() + 44_000])); // 16 s used
      const used = await fetch(`${short.url}/api/project`, { headers: { cookie: session } });
      expect(used.status).toBe(200);
      expect(used.headers.get("set-cookie")).toBe(`${session}; Path=/; HttpOnly; SameSite=Lax; Max-Age=60`);
      const row = await db.get<{ expires_at: number }>("SELECT expires_at FROM sessions WHERE identity_id = 'alice'");
      expect(row!.expires_at).toBeGreaterThan(Date.now() + 55_000);
    } finally {
      await short.close();
    }
  });

  it("serves the live event viewer without any external asset", async () => {
    const page = await fetch(`${app.url}/viewer`);
    expect(page.status).toBe(200);
    const html = await page.text();
    expect(html).not.toMatch(/https?:\/\//);
    const script = await (await fetch(`${app.url}/viewer/app.js`)).text();
    expect(script).toContain("/ws/events");
    expect(script).toContain("x-svc-csrf");
  });

  it("answers 403 on GET /api/events to a caller with no view permission at all", async () => {
    const project = { ...sandboxProject, identities: { ...sandboxProject.identities, "log-reader": { type: "serviceAccount" as const, permissions: ["observe:logs"] } } };
    const other = await startApp({ project });
    try {
      const token = (await other.container.resolve(TokenService).create("log-reader")).token;
      const res = await fetch(`${other.url}/api/events`, { headers: { authorization: `Bearer ${token}` } });
      expect(res.status).toBe(403);
      expect(((await res.json()) as any).error.code).toBe("forbidden");
    } finally {
      await other.close();
    }
  });
});
