import { ApiError } from "../errors";

/**
 * Page tokens of keyset listings (`nextPageToken` of `GET /api/webhook-runs`, `GET /api/workflow-runs`, a
 * run's history, the artifacts and an artifact's versions, conversations and their messages, open
 * interventions, dead letters):
 * opaque to clients (base64url JSON of the listing's position and its filters as text), and bound to
 * the listing that issued them, so a token of other filters, or an edited one, is refused instead of
 * answering a page that looks right (a raw id was taken as is: garbage looked like the end of a list).
 */

/**
 * The token of `position` in the listing of `filters` (the listing's filters as one text, e.g. their JSON).
 * @param position what the listing needs to go on (JSON-serializable)
 */
export function encodeListingToken(position: unknown, filters: string): string {
  return Buffer.from(JSON.stringify({ position, filters })).toString("base64url");
}

/**
 * The position a token of this listing names.
 * @param isPosition checks the decoded position's shape
 * @param filterNames the listing's filter parameters, named in the refusal of a token of other filters;
 *   or `{ refusal }`, that refusal's whole message (a listing whose one "filter" is the caller)
 * @throws {ApiError} invalid_request when `token` is not one of this listing (not ours, edited, or a
 *   position of another shape), or belongs to the listing with other filters
 */
export function decodeListingToken<P>(token: string, filters: string, isPosition: (x: unknown) => x is P, filterNames: string | { refusal: string }): P {
  let decoded: { position?: unknown; filters?: unknown } | undefined;
  try {
    decoded = JSON.parse(Buffer.from(token, "base64url").toString("utf8")) as typeof decoded;
  } catch {
    decoded = undefined;
  }
  if (typeof decoded?.filters !== "string" || !isPosition(decoded.position)) throw new ApiError("invalid_request", "nextPageToken is not a token of this listing: send the one a page answered", { nextPageToken: token });
  if (decoded.filters !== filters) throw new ApiError("invalid_request", typeof filterNames === "string" ? `nextPageToken belongs to this listing with other filters: send the same ${filterNames}` : filterNames.refusal, { nextPageToken: token });
  return decoded.position;
}

/** {@link decodeListingToken}'s refusal for a listing whose one "filter" is the caller (a token of another caller's listing). */
export const ANOTHER_CALLERS_TOKEN = { refusal: "nextPageToken was answered to another caller: send one your own listing answered" };

/** A listing position of two texts (e.g. `[updated_at, id]` of a keyset), for {@link decodeListingToken}'s `isPosition`. */
export function isTextPair(x: unknown): x is [string, string] {
  return Array.isArray(x) && x.length === 2 && x.every((e) => typeof e === "string");
}

/** A listing position that is a whole number from 1 (a version number, a message's `seq`), for {@link decodeListingToken}'s `isPosition`. */
export function isPositiveInteger(x: unknown): x is number {
  return Number.isSafeInteger(x) && (x as number) >= 1;
}

/**
 * A page of a keyset listing whose statement read up to `pageSize + 1` rows: the first `pageSize` as
 * items, and when the extra row was there, the token of the last item's position (bound to `filters`).
 * @param positionOf the position after which the next page starts (JSON-serializable)
 */
export function keysetPage<R, T>(rows: readonly R[], pageSize: number, filters: string, toItem: (row: R) => T, positionOf: (item: T) => unknown): { data: T[]; nextPageToken?: string } {
  const data = rows.slice(0, pageSize).map(toItem);
  const last = rows.length > pageSize ? data.at(-1) : undefined;
  return { data, ...(last !== undefined ? { nextPageToken: encodeListingToken(positionOf(last), filters) } : {}) };
}
