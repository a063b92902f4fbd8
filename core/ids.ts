import { monotonicFactory } from "ulid";
import { randomBytes } from "node:crypto";

const nextUlid = monotonicFactory();

/**
 * Creates a prefixed, lexicographically sortable id such as `evt_01JB…` (a ULID: 48-bit millisecond
 * time + randomness, monotonic within a millisecond in this process).
 *
 * @param prefix short lowercase tag of the resource: `evt`, `run`, `commit`, `tok`, ...
 */
export function newId(prefix: string): string {
  return `${prefix}_${nextUlid()}`;
}

/** A random secret with a readable prefix, e.g. an API token `svc_…` (32 random bytes, base64url). */
export function newSecret(prefix: string): string {
  return `${prefix}_${randomBytes(32).toString("base64url")}`;
}

/** The current time as ISO 8601 UTC with milliseconds, the only timestamp format of the API. */
export function nowIso(): string {
  return new Date().toISOString();
}
