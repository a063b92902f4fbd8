import * as v from "valibot";
import { ApiError, SESSION_COOKIE, SessionService, TokenService, assertAllowedOrigin, definePlugin, jsonResponse, readCookie, readCookies } from "../../core/plugin-api";

const SessionSchema = v.object({ identity: v.object({ type: v.string(), id: v.string() }), csrfToken: v.string(), expiresAt: v.string() });

/** A personal token's default lifetime over HTTP (ms): 90 days. */
export const PERSONAL_TOKEN_DEFAULT_MS = 90 * 86_400_000;
/** The longest lifetime a personal token can be given over HTTP (ms): a year (the CLI may give longer, or none). */
export const PERSONAL_TOKEN_MAX_MS = 365 * 86_400_000;
/** How many working personal tokens one identity may hold. */
export const PERSONAL_TOKENS_MAX = 50;

const TokenInfoSchema = v.object({
  id: v.pipe(v.string(), v.description("The token's id (`tok_…`): not the secret")),
  identityId: v.string(),
  name: v.string(),
  createdAt: v.string(),
  expiresAt: v.optional(v.pipe(v.string(), v.description("When it stops working (absent: it works until revoked; CLI-made tokens only)"))),
  revokedAt: v.optional(v.string()),
  lastUsedAt: v.optional(v.pipe(v.string(), v.description("When it last authenticated a request, to the hour (absent: never)"))),
});

/**
 * Browser sessions (spec 5): sign in with an identity and password (scrypt), sign out, read the
 * session (and its CSRF token). The session cookie is HttpOnly, SameSite=Lax, and Secure over https.
 */
export default definePlugin({
  name: "auth",
  deps: { sessions: SessionService, tokens: TokenService },
  setup({ routes, config, log }, { sessions, tokens }) {
    routes.add({
      method: "POST",
      path: "/api/auth/sign-in",
      summary: "Sign in (browser session)",
      description: "Checks the password and sets the session cookie. Answers the CSRF token to send as `x-svc-csrf` on mutating requests. A browser request must come from an allowed Origin.",
      tags: ["auth"],
      auth: "none",
      body: v.strictObject({ identity: v.pipe(v.string(), v.minLength(1)), password: v.pipe(v.string(), v.minLength(1), v.maxLength(1024)) }),
      responses: { 200: { description: "Signed in", schema: SessionSchema }, 401: { description: "`unauthorized`: wrong identity or password" }, 429: { description: "`too_many_requests`: too many failed sign-ins for the identity or from the address; retry after `Retry-After` seconds (`details.retryAfterSeconds`)" }, 403: { description: "`origin_not_allowed`: a browser request (with Origin) from an Origin not allowed" } },
      handler: async ({ event, body }) => {
        if (event.req.headers.has("origin")) assertAllowedOrigin(event.req, config.allowedOrigins);
        const { token, session } = await sessions.signIn(body.identity, body.password, event.req.ip);
        const answer = { identity: { type: session.principal.type, id: session.principal.id }, csrfToken: session.csrfToken, expiresAt: new Date(session.expiresAt).toISOString() };
        return jsonResponse(answer, 200, { "set-cookie": sessions.cookie(token, event.req), "cache-control": "no-store" });
      },
    });
    routes.add({
      method: "GET",
      path: "/api/auth/session",
      summary: "Read the browser session",
      description: "The signed-in identity, the CSRF token and the expiry (renewed by this request). Session only: bearer tokens are refused.",
      tags: ["auth"],
      auth: "session",
      responses: { 200: { description: "The session", schema: SessionSchema } },
      handler: async ({ event }) => {
        const session = (await sessions.resolve(readCookie(event.req.headers.get("cookie"), SESSION_COOKIE) ?? "", false))!;
        return { identity: { type: session.principal.type, id: session.principal.id }, csrfToken: session.csrfToken, expiresAt: new Date(session.expiresAt).toISOString() };
      },
    });
    routes.add({
      method: "POST",
      path: "/api/auth/sign-out",
      summary: "Sign out",
      description: "Ends the session, and every other session of this service whose cookie the request carries (a `Path=/` one left from before the service moved under a proxy's path prefix), and clears its cookie. Session only (with `x-svc-csrf`).",
      tags: ["auth"],
      auth: "session",
      responses: { 200: { description: "Signed out", schema: v.object({ signedOut: v.boolean() }) } },
      handler: async ({ event }) => {
        await sessions.signOut(readCookies(event.req.headers.get("cookie"), SESSION_COOKIE));
        return jsonResponse({ signedOut: true }, 200, { "set-cookie": sessions.clearingCookie(event.req) });
      },
    });

    // personal tokens (spec 5): a signed-in user makes, lists and revokes the API tokens of their own
    // identity; session only, so that a token cannot make more tokens
    routes.add({
      method: "GET",
      path: "/api/tokens",
      summary: "List your API tokens",
      description: "The API tokens of the signed-in identity, newest first (the newest 200), with revoked and expired ones (never their secrets). Session only: bearer tokens are refused.",
      tags: ["auth"],
      auth: "session",
      responses: { 200: { description: "Your tokens", schema: v.object({ tokens: v.array(TokenInfoSchema) }) } },
      handler: async ({ principal }) => ({ tokens: await tokens.listFor(principal!.id) }),
    });
    routes.add({
      method: "POST",
      path: "/api/tokens",
      summary: "Create an API token for yourself",
      description: `A personal token carrying the signed-in identity's permissions (spec 5), for scripts: send it as \`Authorization: Bearer <token>\`. The secret is in this answer only (only its hash is stored). It works for \`expiresInMs\` (default 90 days, at most a year) or until revoked. At most ${PERSONAL_TOKENS_MAX} working tokens per identity. Session only (with \`x-svc-csrf\`): a bearer token cannot make tokens.`,
      tags: ["auth"],
      auth: "session",
      body: v.strictObject({
        name: v.pipe(v.string(), v.trim(), v.minLength(1, "name must not be empty"), v.maxLength(100, "name must be at most 100 characters"), v.regex(/^[^\u0000-\u001f\u007f-\u009f]*$/, "name must not hold control characters"), v.description("What the token is for, to tell it apart in the list")),
        expiresInMs: v.optional(v.pipe(v.number(), v.integer("expiresInMs must be a whole number of milliseconds"), v.minValue(3_600_000, "expiresInMs must be at least an hour (3600000)"), v.maxValue(PERSONAL_TOKEN_MAX_MS, `expiresInMs must be at most a year (${PERSONAL_TOKEN_MAX_MS})`), v.description("How long it works (ms; default 90 days)"))),
      }),
      responses: {
        201: { description: "Created: the secret (shown once) and the token's record", schema: v.object({ token: v.pipe(v.string(), v.description("The secret, `svc_…`: shown only now")), tokenInfo: TokenInfoSchema }) },
        409: { description: `\`conflict\`: the identity already holds ${PERSONAL_TOKENS_MAX} working tokens; revoke one first` },
      },
      handler: async ({ principal, body }) => {
        const { token, info } = await tokens.create(principal!.id, body.name, { expiresInMs: body.expiresInMs ?? PERSONAL_TOKEN_DEFAULT_MS, maxActive: PERSONAL_TOKENS_MAX });
        log.info({ identity: principal!.id, tokenId: info.id, expiresAt: info.expiresAt }, "personal API token created");
        return jsonResponse({ token, tokenInfo: info }, 201, { "cache-control": "no-store" });
      },
    });
    routes.add({
      method: "POST",
      path: "/api/tokens/:tokenId/revoke",
      summary: "Revoke one of your API tokens",
      description: "It stops working at once on this server (within 10 s on others). Only your own tokens: another's answers 404. Session only (with `x-svc-csrf`).",
      tags: ["auth"],
      auth: "session",
      params: v.object({ tokenId: v.string() }),
      responses: { 200: { description: "Revoked", schema: TokenInfoSchema }, 404: { description: "`not_found`: no working token of yours has this id (revoked already, or not yours)" } },
      handler: async ({ principal, params }) => {
        const revoked = await tokens.revokeOwn(principal!.id, params.tokenId);
        if (!revoked) throw new ApiError("not_found", `You hold no working API token "${params.tokenId}"`);
        log.info({ identity: principal!.id, tokenId: params.tokenId }, "personal API token revoked");
        return revoked;
      },
    });
  },
});
