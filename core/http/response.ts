import { FastResponse } from "srvx";
import type { H3Event, HTTPError } from "h3";
import { ApiError, isApiError } from "../errors";
import type { Logger } from "../logger";

/**
 * srvx's `FastResponse` (the class h3 itself answers with): a `Response` in every way (`status`,
 * `headers`, `json()`, `text()`, `instanceof Response`), but when the server writes it to a Node
 * socket, a string or byte body goes out in one `write` with its `Content-Length`, and a Node
 * `Readable` is piped as is. A `Response` of Node's own (undici's) class is sent by reading its body
 * as a web `ReadableStream` chunk by chunk instead: for a JSON answer that reading costs more than
 * building the answer (POST /api/actions/diagnostics.noop: ~14 % more runs per second with this
 * class). The routes' JSON answers use it ({@link jsonResponse}, {@link jsonText}, {@link errorResponse}).
 */
export { FastResponse };

/**
 * A JSON answer from its text: `Content-Type: application/json; charset=utf-8`, written to the
 * socket as it is (see {@link FastResponse}).
 * @param text JSON text, or its UTF-8 bytes (sent as they are: no encoding, no length to count); not checked
 * @param status HTTP status, 200 by default
 * @param headers more headers (a `Content-Type` among them, in any case, replaces the default)
 */
export function jsonText(text: string | Uint8Array, status = 200, headers?: Record<string, string>): Response {
  const typed = headers !== undefined && Object.keys(headers).some((name) => name.toLowerCase() === "content-type");
  return new FastResponse(text, { status, headers: typed ? headers : { "content-type": "application/json; charset=utf-8", ...headers } });
}

/**
 * A JSON answer: `value` as `JSON.stringify` writes it (see {@link jsonText}).
 * @throws {TypeError} for a value JSON cannot write (a BigInt, a cycle)
 */
export function jsonResponse(value: unknown, status = 200, headers?: Record<string, string>): Response {
  return jsonText(JSON.stringify(value), status, headers);
}

/**
 * The structured error answer (spec 7): `{error: {code, message, details?}}` with the code's status
 * and the error's own headers. Anything but an {@link ApiError} becomes `internal` with a fixed
 * message, so no stack trace, SQL or secret reaches the client.
 */
export function errorResponse(err: unknown): Response {
  const apiError = isApiError(err) ? err : new ApiError("internal", "Internal server error");
  return jsonResponse(apiError.toBody(), apiError.status, apiError.headers);
}

/**
 * Headers of an HTML page of ours that no other site may frame (clickjacking: `/viewer` has buttons that
 * act as the signed-in reader, `/docs` sends requests): CSP `frame-ancestors 'self'`, and
 * `X-Frame-Options: SAMEORIGIN` for browsers without CSP level 2. The artifact pages set the same in
 * their own CSP.
 */
export const NOT_FRAMED: Readonly<Record<string, string>> = { "content-security-policy": "frame-ancestors 'self'", "x-frame-options": "SAMEORIGIN", "x-content-type-options": "nosniff" };

/**
 * `response` with `headers` appended; a response whose headers are immutable (`Response.redirect`) is
 * copied first.
 */
export function withHeaders(response: Response, headers: Array<[string, string]>): Response {
  try {
    for (const [name, value] of headers) response.headers.append(name, value);
    return response;
  } catch {
    const copy = new Headers(response.headers);
    for (const [name, value] of headers) copy.append(name, value);
    return new Response(response.body, { status: response.status, statusText: response.statusText, headers: copy });
  }
}

/** h3's mark on an event whose path does not percent-decode (`kMalformedURL`, a registered symbol h3 v2 does not export). */
const MALFORMED_URL = Symbol.for("h3.internal.event.malformed");

/**
 * The structured answer (spec 7) to an error h3 raised itself (no route: 404 `not_found`; a method the
 * path lacks: 405 `method_not_allowed`; a malformed path: 400 `invalid_request`) or one no route caught
 * (logged at error when it is a 5xx).
 */
export function h3ErrorResponse(error: HTTPError, event: H3Event, log: Pick<Logger, "error">): Response {
  const cause = (error as { cause?: unknown }).cause;
  if (error.status === 404) return errorResponse(new ApiError("not_found", `No route ${event.req.method} ${event.url.pathname}`));
  if (error.status === 405) return errorResponse(new ApiError("method_not_allowed", `Method ${event.req.method} is not allowed here`));
  if (error.status >= 500) log.error({ err: cause ?? error, path: event.url.pathname }, "request failed");
  // h3 refuses a path whose percent-escapes do not decode (`%zz`, `%E0%A4%A`, a lone `%`) before routing, as a bare "Bad Request"
  if (error.status === 400 && (event as unknown as Record<symbol, unknown>)[MALFORMED_URL]) {
    return errorResponse(new ApiError("invalid_request", `The request path ${event.url.pathname} has a malformed percent-escape: each % must start %XX (two hex digits) and the bytes must be UTF-8`));
  }
  return errorResponse(error.status === 400 ? new ApiError("invalid_request", error.message) : cause ?? error);
}
