import { createHash, randomBytes, scrypt as scryptCb, timingSafeEqual, type ScryptOptions } from "node:crypto";
import type { Database } from "../store/db";
import type { ProjectRegistry } from "../project/registry";
import type { Principal } from "./permissions";
import { ApiError } from "../errors";
import { newSecret, nowIso } from "../ids";
import type { Logger } from "../logger";
import { SignInThrottle } from "./sign-in-throttle";
import { basePathOf } from "../files/download-urls";

/** Name of the session cookie (HttpOnly, SameSite=Lax, Secure over https). */
export const SESSION_COOKIE = "svc_session";
/** Header carrying the session's CSRF token on mutating requests (spec 5). */
export const CSRF_HEADER = "x-svc-csrf";

const scrypt = (password: string, salt: Buffer, keylen: number, opts: ScryptOptions) =>
  new Promise<Buffer>((resolve, reject) => scryptCb(password, salt, keylen, opts, (err, key) => (err ? reject(err) : resolve(key))));
const SCRYPT = { N: 16384, r: 8, p: 1, keylen: 32 };

/** Hashes a password with scrypt (N=16384, r=8, p=1, 16-byte salt): `scrypt$N$r$p$salt$key`, base64url parts. */
export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const key = await scrypt(password, salt, SCRYPT.keylen, { N: SCRYPT.N, r: SCRYPT.r, p: SCRYPT.p });
  return ["scrypt", SCRYPT.N, SCRYPT.r, SCRYPT.p, salt.toString("base64url"), key.toString("base64url")].join("$");
}

/** Checks a password against a stored scrypt hash in constant time. */
export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const [scheme, n, r, p, salt, key] = stored.split("$");
  if (scheme !== "scrypt" || !salt || !key) return false;
  const expected = Buffer.from(key, "base64url");
  const actual = await scrypt(password, Buffer.from(salt, "base64url"), expected.length, { N: Number(n), r: Number(r), p: Number(p) });
  return timingSafeEqual(actual, expected);
}

const sha256 = (s: string) => createHash("sha256").update(s).digest("hex");

/** A live browser session. */
export interface Session {
  principal: Principal;
  csrfToken: string;
  /** Epoch ms. */
  expiresAt: number;
  /** True when this resolve moved `expiresAt` (HTTP use): the response should carry the cookie again with a fresh Max-Age. */
  renewed?: true;
}

/**
 * Browser sessions (spec 5): sign-in with a password checked against its scrypt hash, a random session
 * token in an HttpOnly cookie (only its SHA-256 is stored), a CSRF token per session, expiry after
 * `ttlMs` renewed by HTTP use (at most once a minute) but never by WebSocket traffic.
 */
export class SessionService {
  private dummyHash: Promise<string> | undefined;

  /**
   * @param ttlMs a session's lifetime (`SVC_SESSION_TTL_MS`)
   * @param publicOrigin the API's public origin (`SVC_API_PUBLIC_ORIGIN`): its cookies are `Secure` when it
   *   is https, and their `Path` is its path (the prefix a proxy serves the service under), else `/`
   */
  constructor(
    private readonly db: Database,
    private readonly project: ProjectRegistry,
    private readonly ttlMs: number,
    private readonly publicOrigin = "",
    private readonly log?: Logger,
    private readonly throttle = new SignInThrottle(),
  ) {
    this.cookiePath = basePathOf(publicOrigin) || "/";
  }

  /** The session cookie's `Path`: the public origin's path prefix, or `/`. */
  private readonly cookiePath: string;

  /**
   * The `Set-Cookie` of a live session's token answering `req`: Max-Age a full TTL (at sign-in, and when
   * HTTP use renewed it), `Secure` when `req` came over https or the public origin is https, `Path` the
   * public origin's path prefix (else `/`).
   */
  cookie(token: string, req: Request): string {
    return sessionCookie(token, Math.floor(this.ttlMs / 1000), this.secure(req), this.cookiePath);
  }

  /** The `Set-Cookie` that clears the session cookie (sign-out). */
  clearingCookie(req: Request): string {
    return sessionCookie("", 0, this.secure(req), this.cookiePath);
  }

  private secure(req: Request): boolean {
    return req.url.startsWith("https:") || this.publicOrigin.startsWith("https:");
  }

  /** Sets an identity's password. @throws Error for unknown identities or service accounts */
  async setPassword(identityId: string, password: string): Promise<void> {
    if (this.project.identityType(identityId) !== "user") throw new Error(`"${identityId}" is not a user identity of this project`);
    if (password.length < 8) throw new Error("Passwords need at least 8 characters");
    const hash = await hashPassword(password);
    await this.db.transaction((tx) => tx.run("INSERT INTO passwords (identity_id, hash, updated_at) VALUES (?, ?, ?) ON CONFLICT (identity_id) DO UPDATE SET hash = excluded.hash, updated_at = excluded.updated_at", [identityId, hash, nowIso()]));
  }

  /** Sets a password only when the identity has none (development passwords of a sandbox). */
  async ensurePassword(identityId: string, password: string): Promise<void> {
    if (!(await this.db.get("SELECT 1 AS x FROM passwords WHERE identity_id = ?", [identityId]))) await this.setPassword(identityId, password);
  }

  /**
   * Signs a user in. Answers the cookie token (shown once) and the session. A refused sign-in is logged
   * at warn with the identity tried and `clientAddress` (never the password), so that guessing shows,
   * and guessing is slowed down ({@link SignInThrottle}: per identity and per address).
   * @param clientAddress the client's IP address as the server saw it, for that log line and the throttle
   * @throws {ApiError} unauthorized with one message for any wrong identity or password;
   *   too_many_requests (429, `Retry-After`) when the identity or address must wait after failures
   */
  async signIn(identityId: string, password: string, clientAddress?: string): Promise<{ token: string; session: Session }> {
    this.throttle.check(identityId, clientAddress);
    const row = await this.db.get<{ hash: string }>("SELECT hash FROM passwords WHERE identity_id = ?", [identityId]);
    const ok = row ? await verifyPassword(password, row.hash) : await verifyPassword(password, await (this.dummyHash ??= hashPassword("no such user"))).then(() => false);
    const permissions = this.project.identityPermissions(identityId);
    if (!ok || !permissions || this.project.identityType(identityId) !== "user") {
      this.throttle.failed(identityId, clientAddress);
      this.log?.warn({ identity: identityId, clientAddress }, "sign-in refused: wrong identity or password");
      throw new ApiError("unauthorized", "Wrong identity or password");
    }
    this.throttle.succeeded(identityId, clientAddress);
    const token = newSecret("svcs");
    const csrfToken = newSecret("csrf");
    const expiresAt = Date.now() + this.ttlMs;
    await this.db.transaction((tx) => tx.run("INSERT INTO sessions (id, identity_id, csrf_token, created_at, expires_at) VALUES (?, ?, ?, ?, ?)", [sha256(token), identityId, csrfToken, nowIso(), expiresAt]));
    return { token, session: { principal: { type: "user", id: identityId, permissions }, csrfToken, expiresAt } };
  }

  /**
   * How far a session's expiry must have fallen behind a full TTL before HTTP use moves it (ms): at most
   * one write per session a minute, and a quarter of the TTL when that is shorter (a one-minute TTL
   * renews every 15 s).
   */
  get renewStepMs(): number {
    return Math.min(60_000, this.ttlMs / 4);
  }

  /**
   * The live session of a cookie token, or undefined. `renew` extends its expiry to a full TTL from now
   * (HTTP use) once it has fallen {@link SessionService.renewStepMs} behind, and answers `renewed` then;
   * WebSocket connects pass false.
   */
  async resolve(token: string, renew: boolean): Promise<Session | undefined> {
    const id = sha256(token);
    const row = await this.db.get<{ identity_id: string; csrf_token: string; expires_at: number }>("SELECT identity_id, csrf_token, expires_at FROM sessions WHERE id = ? AND ended_at IS NULL", [id]);
    const permissions = row ? this.project.identityPermissions(row.identity_id) : undefined;
    if (!row || !permissions || row.expires_at <= Date.now()) return undefined;
    let expiresAt = row.expires_at;
    const renewing = renew && expiresAt - Date.now() <= this.ttlMs - this.renewStepMs;
    if (renewing) {
      expiresAt = Date.now() + this.ttlMs;
      await this.db.transaction((tx) => tx.run("UPDATE sessions SET expires_at = ? WHERE id = ?", [expiresAt, id]));
    }
    return { principal: { type: "user", id: row.identity_id, permissions }, csrfToken: row.csrf_token, expiresAt, ...(renewing ? { renewed: true as const } : {}) };
  }

  /**
   * Ends the sessions of `tokens` (a sign-out's every session cookie: a browser holding a `Path=/`
   * cookie from before the service moved under a proxy's prefix sends it beside the prefix's, and
   * would be signed in by it after the prefix's went). A token of no session of this service is ignored.
   */
  async signOut(tokens: readonly string[]): Promise<void> {
    const ids = [...new Set(tokens.map(sha256))];
    if (ids.length === 0) return;
    await this.db.transaction((tx) => tx.run("UPDATE sessions SET ended_at = ? WHERE id IN (SELECT value FROM json_each(?)) AND ended_at IS NULL", [nowIso(), JSON.stringify(ids)]));
    for (const id of ids) for (const listener of [...(this.endListeners.get(id) ?? [])]) listener();
  }

  /** Listeners of sessions' sign-out, by session id (the token's hash): the WebSockets opened with them. */
  private readonly endListeners = new Map<string, Set<() => void>>();

  /**
   * A handle on a live session for a WebSocket opened with it (spec 5: WebSocket traffic never renews a
   * session, and a socket must not outlive it): `expiresAt` as resolved at the upgrade (ms since the
   * epoch), `active()` resolving it again (false once signed out, expired, or its identity is gone; HTTP
   * use may have renewed it meanwhile: then its new `expiresAt`), and `onEnded(fn)` telling `fn` when
   * this process signs it out (answers the function that stops telling).
   */
  watch(token: string, expiresAt: number): SessionWatch {
    const id = sha256(token);
    return {
      expiresAt,
      active: async () => (await this.resolve(token, false))?.expiresAt,
      onEnded: (fn) => {
        let listeners = this.endListeners.get(id);
        if (!listeners) this.endListeners.set(id, (listeners = new Set()));
        listeners.add(fn);
        return () => {
          listeners.delete(fn);
          if (listeners.size === 0) this.endListeners.delete(id);
        };
      },
    };
  }
}

/** See {@link SessionService.watch}. */
export interface SessionWatch {
  /** When the session expires unless HTTP use renews it (ms since the epoch). */
  expiresAt: number;
  /** Its expiry now, or undefined when it has ended (signed out, expired, identity gone). */
  active(): Promise<number | undefined>;
  /** Calls `fn` when this process signs the session out; answers the unsubscribe function. */
  onEnded(fn: () => void): () => void;
}

/**
 * The `Set-Cookie` value of the session cookie (spec 5): HttpOnly, SameSite=Lax, Secure over https; an
 * empty value with max age 0 clears it.
 * @param maxAgeSec seconds
 * @param path the cookie's `Path`: `/`, or the prefix a proxy serves the service under (`/svc`), so the
 *   browser sends it to this service only, not to others on the same host
 */
export function sessionCookie(value: string, maxAgeSec: number, secure: boolean, path = "/"): string {
  return `${SESSION_COOKIE}=${encodeURIComponent(value)}; Path=${path}; HttpOnly; SameSite=Lax; Max-Age=${maxAgeSec}${secure ? "; Secure" : ""}`;
}

/**
 * Reads one cookie from a Cookie header: its percent-decoded value, or undefined when the cookie is
 * absent or its value is not valid percent-encoding (a value this server never set: the caller is then
 * treated as having no such cookie, never answered 500).
 */
export function readCookie(header: string | null, name: string): string | undefined {
  for (const value of cookieValues(header, name)) return value;
  return undefined;
}

/**
 * Reads every cookie named `name` from a Cookie header, in its order (a browser sends the cookie of the
 * longest `Path` first; {@link readCookie} answers that one): their percent-decoded values, skipping
 * values that are not valid percent-encoding.
 */
export function readCookies(header: string | null, name: string): string[] {
  return [...cookieValues(header, name)].filter((v) => v !== undefined);
}

/** The values of the cookies named `name` in a Cookie header, in its order: each percent-decoded, or undefined when it is not valid percent-encoding. */
function* cookieValues(header: string | null, name: string): Generator<string | undefined> {
  for (const part of (header ?? "").split(";")) {
    const [k, ...v] = part.trim().split("=");
    if (k !== name) continue;
    try {
      yield decodeURIComponent(v.join("="));
    } catch {
      yield undefined; // not a value this server set
    }
  }
}
