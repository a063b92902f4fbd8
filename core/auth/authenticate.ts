import { timingSafeEqual } from "node:crypto";
import type { Principal } from "./permissions";
import type { TokenService } from "./tokens";
import { CSRF_HEADER, SESSION_COOKIE, readCookie, type SessionService, type SessionWatch } from "./sessions";
import { ApiError, unauthorized } from "../errors";
import { errorResponse } from "../http/response";

const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);

/**
 * Resolves the caller of a request (spec 5):
 * - `Authorization: Bearer <token>` on routes that support bearer tokens (`mode` "bearer"); a route
 *   that does not ("session") refuses it with 401;
 * - otherwise the session cookie. A mutating request authenticated by cookie must come from an allowed
 *   origin (`origin_not_allowed`, 403) and carry the session's CSRF token in `x-svc-csrf`
 *   (`csrf_token_invalid`, 403). HTTP use renews the session: `renewedCookie` is then the session
 *   cookie again with a fresh Max-Age, for the response (else the browser would drop it at sign-in + TTL
 *   however active the user is).
 *
 * @throws {ApiError} unauthorized, origin_not_allowed, csrf_token_invalid
 */
export async function authenticateRequest(
  req: Request,
  mode: "bearer" | "session",
  deps: { tokens: TokenService; sessions: SessionService; allowedOrigins: readonly string[] },
): Promise<{ principal: Principal; renewedCookie?: string }> {
  if (req.headers.has("authorization")) {
    if (mode !== "bearer") throw unauthorized("This route does not accept bearer tokens; sign in for a browser session");
    return { principal: await deps.tokens.authenticate(req) };
  }
  const token = readCookie(req.headers.get("cookie"), SESSION_COOKIE);
  if (!token) throw unauthorized(mode === "bearer" ? "Send an API token as Authorization: Bearer <API_TOKEN>, or sign in" : "Sign in first: this route needs a browser session");
  const session = await deps.sessions.resolve(token, true);
  if (!session) throw unauthorized("The session has expired or ended; sign in again");
  if (!SAFE_METHODS.has(req.method)) {
    assertAllowedOrigin(req, deps.allowedOrigins);
    const sent = Buffer.from(req.headers.get(CSRF_HEADER) ?? "");
    const expected = Buffer.from(session.csrfToken);
    if (sent.length !== expected.length || !timingSafeEqual(sent, expected)) {
      throw new ApiError("csrf_token_invalid", `Send the session's CSRF token in the ${CSRF_HEADER} header`);
    }
  }
  return { principal: session.principal, ...(session.renewed ? { renewedCookie: deps.sessions.cookie(token, req) } : {}) };
}

/**
 * Refuses a browser request whose Origin is not in the allowed list.
 * @throws {ApiError} origin_not_allowed (403)
 */
export function assertAllowedOrigin(req: Request, allowed: readonly string[]): void {
  const origin = req.headers.get("origin");
  if (!origin || !allowed.includes(origin)) throw new ApiError("origin_not_allowed", origin ? `Origin ${origin} is not allowed` : "The request has no Origin header", { origin });
}

/**
 * Authenticates a WebSocket upgrade (spec 5): an allowed Origin and a live browser session; bearer
 * tokens are refused. The session is not renewed (WebSocket traffic never renews it) and the identity
 * is fixed for the life of the socket, which must not outlive the session: the principal carries the
 * session's {@link SessionWatch} (`session`), which `subscriptionSocket` (core/http/socket.ts) follows.
 *
 * @throws {Response} 401 or 403 with the structured error body, which aborts the upgrade
 */
export async function authenticateUpgrade(req: Request, deps: { sessions: SessionService; allowedOrigins: readonly string[] }): Promise<SocketPrincipal> {
  if (req.headers.has("authorization")) throw errorResponse(new ApiError("unauthorized", "WebSockets do not accept bearer tokens; connect with a browser session"));
  try {
    assertAllowedOrigin(req, deps.allowedOrigins);
  } catch (err) {
    throw errorResponse(err);
  }
  const token = readCookie(req.headers.get("cookie"), SESSION_COOKIE);
  const session = token ? await deps.sessions.resolve(token, false) : undefined;
  if (!session) throw errorResponse(new ApiError("unauthorized", "Sign in first: WebSockets need a browser session"));
  return { ...session.principal, session: deps.sessions.watch(token!, session.expiresAt) };
}

/** A WebSocket's principal: the session's identity, with the session it was opened with (see {@link authenticateUpgrade}). */
export type SocketPrincipal = Principal & { session?: SessionWatch };
