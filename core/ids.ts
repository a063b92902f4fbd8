import { decodeTime, encodeTime, monotonicFactory } from "ulid";
import { randomBytes, randomFillSync } from "node:crypto";

/**
 * ulid's PRNG, from the same CSPRNG as ulid's default but filled 4 KiB at a time: the default asks
 * `crypto.randomBytes(1)` once per character (16 calls per id), which was 4 % of the service's CPU under
 * load (issue 15 profile). Answers a byte / 256, in [0, 1): uniform over ulid's 32 symbols.
 */
const pool = Buffer.alloc(4096);
let poolAt = pool.length;
function pooledRandom(): number {
  if (poolAt === pool.length) {
    randomFillSync(pool);
    poolAt = 0;
  }
  return pool[poolAt++]! / 256;
}

const nextUlid = monotonicFactory(pooledRandom);

/**
 * Creates a prefixed, lexicographically sortable id such as `evt_01JB…` (a ULID: 48-bit millisecond
 * time + randomness, monotonic within a millisecond in this process).
 *
 * @param prefix short lowercase tag of the resource: `evt`, `run`, `commit`, `tok`, ...
 */
export function newId(prefix: string): string {
  return `${prefix}_${nextUlid()}`;
}

/**
 * When an id {@link newId} made was made (epoch ms: its ULID's time), or undefined for any other text.
 * @param prefix the id's prefix, e.g. `dl`
 */
export function idTime(id: string, prefix: string): number | undefined {
  if (!id.startsWith(`${prefix}_`) || id.length !== prefix.length + 27) return undefined;
  try {
    return decodeTime(id.slice(prefix.length + 1));
  } catch {
    return undefined;
  }
}

/** The smallest id {@link newId} makes with `prefix` at `ms` (epoch ms): every id below it was made before `ms`. */
export function firstIdAt(prefix: string, ms: number): string {
  return `${prefix}_${encodeTime(Math.max(0, ms), 10)}`;
}

/** A random secret with a readable prefix, e.g. an API token `svc_…` (32 random bytes, base64url). */
export function newSecret(prefix: string): string {
  return `${prefix}_${randomBytes(32).toString("base64url")}`;
}

/** The current time as ISO 8601 UTC with milliseconds, the only timestamp format of the API. */
export function nowIso(): string {
  const ms = Date.now();
  // a run of calls in one millisecond (a group commit's records) formats it once
  if (ms !== isoAt) {
    isoAt = ms;
    iso = new Date(ms).toISOString();
  }
  return iso;
}
let isoAt = Number.NaN;
let iso = "";
