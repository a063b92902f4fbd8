/**
 * Cross-origin browser apps (spec 5: "the browser origin must be allowed by the API"): the origins in
 * `SVC_ALLOWED_ORIGINS` may call the API from their pages with the browser's credentials (a session
 * cookie, or a bearer token the app holds). Built on h3's CORS helpers; `RouteRegistry` applies them to
 * every route's answer and to a preflight of a known path.
 */
import { appendCorsHeaders, appendCorsPreflightHeaders, isPreflightRequest, noContent, type CorsOptions, type H3Event, type HTTPResponse } from "h3";
import { ApiError } from "../errors";

/** The answer headers a cross-origin app may read besides the CORS-safelisted ones. */
export const EXPOSED_HEADERS = ["Link", "Location", "Retry-After", "Deprecation", "Sunset", "ETag", "Content-Disposition", "Content-Range", "Accept-Ranges"];

/** How long a browser may keep a preflight's answer (s). */
export const PREFLIGHT_MAX_AGE_S = 600;

/**
 * The CORS of the allowed origins. `allowedOrigins` is read per request (with PORT=0 the service's own
 * origins are known only once it listens, and `createApp` completes the list then).
 */
export class Cors {
  private readonly options: CorsOptions;

  constructor(private readonly allowedOrigins: readonly string[]) {
    this.options = { origin: (origin) => this.allowedOrigins.includes(origin), credentials: true, exposeHeaders: EXPOSED_HEADERS, maxAge: String(PREFLIGHT_MAX_AGE_S) };
  }

  /**
   * Adds the CORS headers to the answer of a request from an allowed origin (h3 merges `event.res`'s
   * headers into the handler's `Response`, errors included); nothing for other requests: a browser then
   * does not hand the answer to another origin's page.
   */
  answer(event: H3Event): void {
    const origin = event.req.headers.get("origin");
    if (origin && this.allowedOrigins.includes(origin)) appendCorsHeaders(event, this.options);
  }

  /**
   * Answers a CORS preflight (`OPTIONS` with `Origin` and `Access-Control-Request-Method`) of a path whose
   * methods are `methods`: 204 with what the browser may send, for an allowed origin; undefined when the
   * request is no preflight.
   * @throws {ApiError} origin_not_allowed (403) for an origin not in `SVC_ALLOWED_ORIGINS`
   */
  preflight(event: H3Event, methods: readonly string[]): HTTPResponse | undefined {
    if (!isPreflightRequest(event)) return undefined;
    const origin = event.req.headers.get("origin")!;
    if (!this.allowedOrigins.includes(origin)) {
      throw new ApiError("origin_not_allowed", `Origin ${origin} is not allowed to call this API from a browser (SVC_ALLOWED_ORIGINS)`, { origin });
    }
    appendCorsPreflightHeaders(event, { ...this.options, methods: [...methods] });
    return noContent(204);
  }
}
