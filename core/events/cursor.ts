import { ApiError } from "../errors";

/**
 * Opaque stream cursors. A cursor encodes the stream's epoch (a random id made when the database was
 * created) and the position, base64url-encoded, so clients cannot do arithmetic on it and a cursor of
 * another database is refused instead of silently meaning something else.
 */
export function encodeCursor(epoch: string, seq: number): string {
  let prefix = prefixes.get(epoch);
  if (!prefix) {
    const text = `c1:${epoch}:`;
    if (!/^[\x00-\x7f]*$/.test(text)) return Buffer.from(`${text}${seq}`).toString("base64url"); // not one byte per character
    // whole 3-byte groups of the prefix encode the same in every cursor: encoded once per epoch
    const whole = text.length - (text.length % 3);
    prefix = { head: Buffer.from(text.slice(0, whole)).toString("base64url"), rest: text.slice(whole) };
    if (prefixes.size >= 16) prefixes.clear();
    prefixes.set(epoch, prefix);
  }
  // per cursor only the last bytes of the prefix and the position's digits (what `GET /api/events`
  // does for each of up to 1,000 events; Buffer.from + toString cost a third of that route's time)
  return prefix.head + base64urlAscii(`${prefix.rest}${seq}`);
}

/** Per stream epoch, the base64url of the cursor prefix's whole 3-byte groups and the bytes left over. */
const prefixes = new Map<string, { head: string; rest: string }>();

const B64URL = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/** base64url (no padding, as Buffer's `base64url`) of a short ASCII string. */
function base64urlAscii(s: string): string {
  let out = "";
  let i = 0;
  for (; i + 2 < s.length; i += 3) {
    const n = (s.charCodeAt(i) << 16) | (s.charCodeAt(i + 1) << 8) | s.charCodeAt(i + 2);
    out += B64URL[(n >>> 18) & 63]! + B64URL[(n >>> 12) & 63]! + B64URL[(n >>> 6) & 63]! + B64URL[n & 63]!;
  }
  if (s.length - i === 1) {
    const n = s.charCodeAt(i) << 16;
    out += B64URL[(n >>> 18) & 63]! + B64URL[(n >>> 12) & 63]!;
  } else if (s.length - i === 2) {
    const n = (s.charCodeAt(i) << 16) | (s.charCodeAt(i + 1) << 8);
    out += B64URL[(n >>> 18) & 63]! + B64URL[(n >>> 12) & 63]! + B64URL[(n >>> 6) & 63]!;
  }
  return out;
}

/**
 * Decodes a cursor of this stream into its position.
 * @param of what the cursors are of, for the error: `event stream` (the default) or `log`
 * @throws {ApiError} invalid_request when the string is not a cursor of this stream
 */
export function decodeCursor(epoch: string, cursor: string, of = "event stream"): number {
  const parts = Buffer.from(cursor, "base64url").toString("utf8").split(":");
  const seq = Number(parts[2]);
  if (parts.length !== 3 || parts[0] !== "c1" || parts[1] !== epoch || !Number.isSafeInteger(seq) || seq < 0) {
    throw new ApiError("invalid_request", `afterCursor is not a cursor of this ${of}`, { afterCursor: cursor });
  }
  return seq;
}
