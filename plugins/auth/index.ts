import * as v from "valibot";
import { SESSION_COOKIE, SessionService, assertAllowedOrigin, definePlugin, jsonResponse, readCookie } from "../../core/plugin-api";

const SessionSchema = v.object({ identity: v.object({ type: v.string(), id: v.string() }), csrfToken: v.string(), expiresAt: v.string() });

/**
 * Browser sessions (spec 5): sign in with an identity and password (scrypt), sign out, read the
 * session (and its CSRF token). The session cookie is HttpOnly, SameSite=Lax, and Secure over https.
 */
export default definePlugin({
  name: "auth",
  deps: { sessions: SessionService },
  setup({ routes, config }, { sessions }) {
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
      description: "Ends the session and clears its cookie. Session only (with `x-svc-csrf`).",
      tags: ["auth"],
      auth: "session",
      responses: { 200: { description: "Signed out", schema: v.object({ signedOut: v.boolean() }) } },
      handler: async ({ event }) => {
        await sessions.signOut(readCookie(event.req.headers.get("cookie"), SESSION_COOKIE) ?? "");
        return jsonResponse({ signedOut: true }, 200, { "set-cookie": sessions.clearingCookie(event.req) });
      },
    });
  },
});
