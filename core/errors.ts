/**
 * Structured API errors (spec section 7).
 *
 * Every non-2xx answer has the body `{ "error": { "code", "message", "details"? } }`. Clients branch
 * on `code`, never on `message`. The codes below are stable; adding one is a minor change, renaming
 * one is a breaking change.
 */

/** Stable error codes and the HTTP status each maps to. */
export const ERROR_STATUS = {
  invalid_request: 400,
  unauthorized: 401,
  forbidden: 403,
  csrf_token_invalid: 403,
  origin_not_allowed: 403,
  not_found: 404,
  method_not_allowed: 405,
  run_in_progress: 409,
  conflict: 409,
  cursor_expired: 410,
  download_url_expired: 410,
  download_url_revoked: 410,
  upload_expired: 410,
  precondition_failed: 412,
  payload_too_large: 413,
  upgrade_required: 426,
  unsupported_media_type: 415,
  range_not_satisfiable: 416,
  artifact_invalid: 422,
  too_many_requests: 429,
  internal: 500,
  not_implemented: 501,
  shutting_down: 503,
  not_configured: 503,
  unavailable: 503,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

/** The JSON body of every error response. */
export interface ErrorBody {
  error: { code: ErrorCode; message: string; details?: unknown };
}

/**
 * An error meant for the caller: its code, message and details are sent as they are.
 * Throw it from route handlers, plugins and the runtime; anything else that escapes becomes a
 * generic `internal` 500 whose details stay in the server log.
 *
 * @example throw new ApiError("not_found", `No object type "${id}"`)
 */
export class ApiError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly details?: unknown;
  readonly headers?: Record<string, string>;

  constructor(code: ErrorCode, message: string, details?: unknown, headers?: Record<string, string>) {
    super(message);
    this.name = "ApiError";
    this.code = code;
    this.status = ERROR_STATUS[code];
    this.details = details;
    this.headers = headers;
  }

  /** The response body for this error. */
  toBody(): ErrorBody {
    const error: ErrorBody["error"] = { code: this.code, message: this.message };
    if (this.details !== undefined) error.details = this.details;
    return { error };
  }
}

/**
 * True when `err` is an {@link ApiError} (also across module copies: an Error named `ApiError` whose
 * `code` is one of {@link ERROR_STATUS}'s; an Error that only looks like one, with a code of its own, is not).
 */
export function isApiError(err: unknown): err is ApiError {
  if (err instanceof ApiError) return true;
  const code = (err as { code?: unknown } | undefined)?.code;
  return err instanceof Error && err.name === "ApiError" && typeof code === "string" && Object.hasOwn(ERROR_STATUS, code);
}

/** The string `code` of an error (Node's system errors: `EACCES`, …; sqlite3's: `SQLITE_BUSY`, …), if it has one. */
export function errorCode(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null | undefined)?.code;
  return typeof code === "string" ? code : undefined;
}

/**
 * The message of anything thrown, as a run's error shows it: an Error's `message` (its name when empty),
 * a string as it is, an object's string `message`, else its JSON text; `undefined`/`null` say they were
 * thrown. (workflows/ keeps its own copy: the workflow isolate may not import this module.)
 */
export function messageOf(err: unknown): string {
  if (err instanceof Error) return err.message || err.name;
  if (typeof err === "string") return err;
  if (typeof err === "object" && err !== null && typeof (err as { message?: unknown }).message === "string") return (err as { message: string }).message;
  if (err === undefined || err === null) return `${err} was thrown (throw an Error with a message)`;
  try {
    const json = JSON.stringify(err);
    if (json !== undefined) return json;
  } catch {
    // a BigInt or a cycle: its String below
  }
  return String(err);
}

/** `unauthorized` (401) with the `WWW-Authenticate: Bearer` challenge. */
export function unauthorized(message: string): ApiError {
  return new ApiError("unauthorized", message, undefined, { "www-authenticate": 'Bearer realm="svc"' });
}
