import { hash } from "node:crypto";
import { inject, injectable } from "../di";
import { Database } from "../store/db";
import { ProjectRegistry } from "../project/registry";
import type { Principal } from "./permissions";
import { newId, newSecret, nowIso } from "../ids";
import { ApiError, unauthorized } from "../errors";

/** A token as listed (never with its secret). Times are ISO 8601 UTC. */
export interface TokenInfo {
  id: string;
  identityId: string;
  name: string;
  createdAt: string;
  /** When it stops working (none: it works until revoked). */
  expiresAt?: string;
  revokedAt?: string;
  /** When it last authenticated a request, to the hour ({@link TokenService.LAST_USED_EVERY_MS}); none: never. */
  lastUsedAt?: string;
}

/**
 * Whether a token works at `nowMs` (`active`), or why not: `revoked` (whatever its expiry), `expired`.
 * The one rule of the CLI's list, the tokens page and the count of working tokens (SQL, below).
 */
export function tokenState(token: Pick<TokenInfo, "expiresAt" | "revokedAt">, nowMs = Date.now()): "active" | "expired" | "revoked" {
  return token.revokedAt ? "revoked" : token.expiresAt && Date.parse(token.expiresAt) <= nowMs ? "expired" : "active";
}

/** How many tokens of `[identity, now (ISO 8601)]` still work ({@link tokenState} `active`). */
const ACTIVE_COUNT = "SELECT count(*) AS n FROM api_tokens WHERE identity_id = ? AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > ?)";

/** How many of an identity's tokens {@link TokenService.listFor} answers, newest first. */
export const LIST_FOR_MAX = 200;

/** The longest a token may be created for (ms): 10 years. */
export const MAX_TOKEN_LIFETIME_MS = 3650 * 86_400_000;

/**
 * SHA-256 of a token, hex. API tokens are 256-bit random secrets, so a fast hash is the right one. Every
 * bearer request hashes its token: `crypto.hash` (one shot) takes ~1 µs against ~2.4 µs for
 * `createHash().update().digest()`, which showed at 2–4 % of the service's main thread under action runs.
 */
export function hashToken(token: string): string {
  return hash("sha256", token, "hex");
}

/**
 * API tokens (spec 5, bearer): stored as SHA-256 hashes only, each carrying an identity of the
 * project, whose permissions it grants. Lookups are cached for {@link TokenService.CACHE_MS} so a
 * revocation made by another process takes effect within that time.
 */
@injectable()
export class TokenService {
  static readonly CACHE_MS = 10_000;
  /** How stale a token's stored `lastUsedAt` may get before a request updates it (ms): an hour, so that use costs at most a write an hour per token. */
  static readonly LAST_USED_EVERY_MS = 3_600_000;
  private readonly cache = new Map<string, { principal: Principal | null; until: number; expiresAt?: string }>();
  /** The hour (epoch ms) this process last stored as each token's `lastUsedAt`, by token id: concurrent lookups write it once. */
  private readonly marked = new Map<string, number>();

  constructor(
    @inject(Database) private readonly db: Database,
    @inject(ProjectRegistry) private readonly project: ProjectRegistry,
  ) {}

  /**
   * Creates a token for an identity and answers the secret (shown once; only its hash is kept).
   * @param opts.expiresInMs how long it works (ms, 1 to {@link MAX_TOKEN_LIFETIME_MS}); none: until revoked
   * @param opts.maxActive refuse when the identity already holds this many working tokens (counted in
   *   the transaction that inserts, so concurrent creations cannot pass it)
   * @throws Error for an identity the project does not define, or a lifetime out of range;
   *   {@link ApiError} conflict (details `{ limit }`) past `maxActive`
   */
  async create(identityId: string, name = identityId, opts: { expiresInMs?: number; maxActive?: number } = {}): Promise<{ token: string; info: TokenInfo }> {
    if (!this.project.identityPermissions(identityId)) throw new Error(`Unknown identity "${identityId}". Identities: ${Object.keys(this.project.definition.identities).join(", ")}`);
    const ttl = opts.expiresInMs;
    if (ttl !== undefined && (!Number.isSafeInteger(ttl) || ttl < 1 || ttl > MAX_TOKEN_LIFETIME_MS)) throw new Error(`A token's lifetime must be from 1 ms to ${MAX_TOKEN_LIFETIME_MS / 86_400_000} days`);
    const token = newSecret("svc");
    const createdAt = nowIso();
    const info: TokenInfo = { id: newId("tok"), identityId, name, createdAt, ...(ttl !== undefined ? { expiresAt: new Date(Date.parse(createdAt) + ttl).toISOString() } : {}) };
    await this.db.transaction(async (tx) => {
      if (opts.maxActive !== undefined && (await tx.get<{ n: number }>(ACTIVE_COUNT, [identityId, createdAt]))!.n >= opts.maxActive) {
        throw new ApiError("conflict", `You hold ${opts.maxActive} working API tokens: revoke one you no longer use first`, { limit: opts.maxActive });
      }
      await tx.run("INSERT INTO api_tokens (id, token_hash, identity_id, name, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?)", [info.id, hashToken(token), identityId, name, info.createdAt, info.expiresAt ?? null]);
    });
    return { token, info };
  }

  /**
   * Stores `token` as the token of `identityId` under the fixed `name` (the sandbox's development token)
   * and answers whether it works. A token of that name with another value is replaced (deleted), unless
   * it was revoked: a revocation sticks, so `token` itself stays revoked (`"revoked"`) when it was
   * revoked before (`npm run svc -- tokens revoke`, or {@link revokeNamed}); a new value makes a new token.
   */
  async ensure(token: string, identityId: string, name: string): Promise<"active" | "revoked"> {
    const tokenHash = hashToken(token);
    const revokedAt = await this.db.transaction(async (tx) => {
      await tx.run("DELETE FROM api_tokens WHERE name = ? AND token_hash != ? AND revoked_at IS NULL", [name, tokenHash]);
      await tx.run("INSERT INTO api_tokens (id, token_hash, identity_id, name, created_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT (token_hash) DO UPDATE SET identity_id = excluded.identity_id", [newId("tok"), tokenHash, identityId, name, nowIso()]);
      return (await tx.get<{ revoked_at: string | null }>("SELECT revoked_at FROM api_tokens WHERE token_hash = ?", [tokenHash]))?.revoked_at ?? null;
    });
    this.cache.clear();
    return revokedAt === null ? "active" : "revoked";
  }

  /** Revokes every token stored under the fixed `name` (the development token, when it is disabled); answers how many were active. */
  async revokeNamed(name: string): Promise<number> {
    const { changes } = await this.db.transaction((tx) => tx.run("UPDATE api_tokens SET revoked_at = ? WHERE name = ? AND revoked_at IS NULL", [nowIso(), name]));
    this.cache.clear();
    return changes;
  }

  /** Every token, oldest first (revoked and expired ones too). */
  async list(): Promise<TokenInfo[]> {
    return this.infos("ORDER BY created_at", []);
  }

  /**
   * The tokens of one identity (a user's personal tokens, over HTTP: `GET /api/tokens`), newest first,
   * revoked and expired ones too: the newest {@link LIST_FOR_MAX}.
   */
  async listFor(identityId: string): Promise<TokenInfo[]> {
    return this.infos(`WHERE identity_id = ? ORDER BY created_at DESC, id DESC LIMIT ${LIST_FOR_MAX}`, [identityId]);
  }

  private async infos(clauses: string, params: string[]): Promise<TokenInfo[]> {
    const rows = await this.db.all<{ id: string; identity_id: string; name: string; created_at: string; expires_at: string | null; revoked_at: string | null; last_used_at: string | null }>(
      `SELECT id, identity_id, name, created_at, expires_at, revoked_at, last_used_at FROM api_tokens ${clauses}`,
      params,
    );
    return rows.map((r) => ({
      id: r.id,
      identityId: r.identity_id,
      name: r.name,
      createdAt: r.created_at,
      ...(r.expires_at ? { expiresAt: r.expires_at } : {}),
      ...(r.revoked_at ? { revokedAt: r.revoked_at } : {}),
      ...(r.last_used_at ? { lastUsedAt: r.last_used_at } : {}),
    }));
  }

  /** The working tokens that have an expiry (not revoked, not expired yet): their ids, identities and expiries (for the metrics). */
  async expiring(): Promise<Array<{ id: string; identityId: string; expiresAt: string }>> {
    const rows = await this.db.all<{ id: string; identity_id: string; expires_at: string }>("SELECT id, identity_id, expires_at FROM api_tokens WHERE revoked_at IS NULL AND expires_at > ? ORDER BY expires_at", [nowIso()]);
    return rows.map((r) => ({ id: r.id, identityId: r.identity_id, expiresAt: r.expires_at }));
  }

  /**
   * Revokes a token of `identityId` by id (a user revoking one of their own).
   * @returns the revoked token, or undefined when `identityId` holds no unrevoked token of that id
   */
  async revokeOwn(identityId: string, id: string): Promise<TokenInfo | undefined> {
    const { changes } = await this.db.transaction((tx) => tx.run("UPDATE api_tokens SET revoked_at = ? WHERE id = ? AND identity_id = ? AND revoked_at IS NULL", [nowIso(), id, identityId]));
    this.cache.clear();
    return changes > 0 ? (await this.infos("WHERE id = ?", [id]))[0] : undefined;
  }

  /** Revokes a token by id; answers whether it existed. */
  async revoke(id: string): Promise<boolean> {
    const { changes } = await this.db.transaction((tx) => tx.run("UPDATE api_tokens SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL", [nowIso(), id]));
    this.cache.clear();
    return changes > 0;
  }

  /**
   * Resolves the caller of a request from `Authorization: Bearer <token>`. A token's use is stored
   * (`lastUsedAt`) when the stored one is an hour old or more, by a write the request does not wait for.
   * @throws {ApiError} unauthorized (401) when the header is missing, or the token unknown, revoked or expired
   */
  async authenticate(req: Request): Promise<Principal> {
    const header = req.headers.get("authorization");
    const match = header ? /^Bearer\s+(\S+)\s*$/i.exec(header) : null;
    if (!match) throw unauthorized("Send an API token as Authorization: Bearer <API_TOKEN>");
    const hash = hashToken(match[1]!);
    const now = Date.now();
    let entry = this.cache.get(hash);
    if (!entry || entry.until < now) {
      const row = await this.db.get<{ id: string; identity_id: string; expires_at: string | null; last_used_at: string | null }>("SELECT id, identity_id, expires_at, last_used_at FROM api_tokens WHERE token_hash = ? AND revoked_at IS NULL", [hash]);
      const permissions = row ? this.project.identityPermissions(row.identity_id) : undefined;
      const type = row ? this.project.identityType(row.identity_id) : undefined;
      entry = { principal: row && permissions && type ? { type, id: row.identity_id, permissions } : null, until: now + TokenService.CACHE_MS, ...(row?.expires_at ? { expiresAt: row.expires_at } : {}) };
      if (this.cache.size > 10_000) this.cache.clear();
      this.cache.set(hash, entry);
      if (entry.principal && (row!.last_used_at === null || Date.parse(row!.last_used_at) <= now - TokenService.LAST_USED_EVERY_MS) && !(row!.expires_at && Date.parse(row!.expires_at) <= now)) this.markUsed(row!.id, now);
    }
    if (!entry.principal) throw unauthorized("The API token is not valid");
    if (entry.expiresAt !== undefined && Date.parse(entry.expiresAt) <= now) throw unauthorized(`The API token expired at ${entry.expiresAt}: make a new one (POST /api/tokens when signed in, or npm run svc -- tokens create)`);
    return entry.principal;
  }

  /** Stores that token `id` was used at `nowMs`, to the hour, once an hour per token in this process; the request does not wait for it, and a failed write is only lost. */
  private markUsed(id: string, nowMs: number): void {
    const hour = nowMs - (nowMs % TokenService.LAST_USED_EVERY_MS);
    if (this.marked.get(id) === hour) return;
    if (this.marked.size > 10_000) this.marked.clear();
    this.marked.set(id, hour);
    const at = new Date(hour).toISOString();
    this.db.transaction((tx) => tx.run("UPDATE api_tokens SET last_used_at = ? WHERE id = ? AND (last_used_at IS NULL OR last_used_at < ?)", [at, id, at])).catch(() => undefined);
  }
}
