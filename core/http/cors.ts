/**
 * Cross-origin browser apps (spec 5: "the browser origin must be allowed by the API"): the origins in
 * `SVC_ALLOWED_ORIGINS` may call the API from their pages with the browser's credentials (a session
 * cookie, or a bearer token the app holds). Built on h3's CORS helpers; `RouteRegistry` applies them to
 * every route's answer and to a preflight of a known path.
 */
import { appendCorsPreflightHeaders, isPreflightRequest, noContent, type H3Event, type HTTPResponse } from "h3";
import { ApiError } from "../errors";

/** The answer headers a cross-origin app may read besides the CORS-safelisted ones. */
export const EXPOSED_HEADERS = ["Link", "Location", "Retry-After", "Deprecation", "Sunset", "ETag", "Content-Disposition", "Content-Range", "Accept-Ranges"];

/** {@link EXPOSED_HEADERS} as a header's value. */
const EXPOSED_LIST = EXPOSED_HEADERS.join(", ");

/** How long a browser may keep a preflight's answer (s). */
export const PREFLIGHT_MAX_AGE_S = 600;

/**
 * The CORS of the allowed origins. `allowedOrigins` is read per request (with PORT=0 the service's own
 * origins are known only once it listens, and `createApp` completes the list then).
 */
export class Cors {
  constructor(private readonly allowedOrigins: readonly string[]) {}

  /**
   * The allowed origin of a request, or undefined (no `Origin`, or one not allowed: its answer gets no
   * CORS header, and a browser keeps it from the page).
   */
  allowedOrigin(req: Request): string | undefined {
    const origin = req.headers.get("origin");
    return origin && this.allowedOrigins.includes(origin) ? origin : undefined;
  }

  /**
   * The headers that make `response` readable by a page of `origin` (an allowed one), to append to it:
   * `Access-Control-Allow-Origin` and `…-Allow-Credentials` unless the response set its own (the tus
   * server does), {@link EXPOSED_HEADERS} beside any it exposes, and `Vary: Origin`. Appended, never set
   * over the response's own (h3's `appendCorsHeaders` goes through `event.res`, whose headers h3 sets
   * over the handler's: a tus answer's exposed headers and a file's `Vary` would be lost).
   */
  answerHeaders(origin: string, response: Response): Array<[string, string]> {
    const headers: Array<[string, string]> = [["access-control-expose-headers", EXPOSED_LIST], ["vary", "Origin"]];
    if (!response.headers.has("access-control-allow-origin")) headers.push(["access-control-allow-origin", origin]);
    if (!response.headers.has("access-control-allow-credentials")) headers.push(["access-control-allow-credentials", "true"]);
    return headers;
  }

  /**
   * Answers a CORS preflight (`OPTIONS` with `Origin` and `Access-Control-Request-Method`) of a path whose
   * methods are `methods`: 204 with what the browser may send, for an allowed origin; undefined when the
   * request is no preflight.
   * @throws {ApiError} origin_not_allowed (403) for an origin not in `SVC_ALLOWED_ORIGINS`
   */
  preflight(event: H3Event, methods: readonly string[]): HTTPResponse | undefined {
    if (!isPreflightRequest(event)) return undefined;
    const origin = this.allowedOrigin(event.req);
    if (!origin) {
      const refused = event.req.headers.get("origin");
      throw new ApiError("origin_not_allowed", `Origin ${refused} is not allowed to call this API from a browser (SVC_ALLOWED_ORIGINS)`, { origin: refused });
    }
    appendCorsPreflightHeaders(event, { origin: [origin], credentials: true, methods: [...methods], maxAge: String(PREFLIGHT_MAX_AGE_S) });
    return noContent(204);
  }
}
