/**
 * A refused artifact address or A1 range (spec 7, 9): {@link AddressError}, thrown by the parsers of
 * ./address.ts and ./cell-range.ts, and {@link toApiError}, its 400 `invalid_request`. Also the
 * character classes both parsers share: the message shows a character by its class (an unsafe one as
 * its code point, see the module comment of ./address.ts).
 */
import { ApiError } from "../errors";

/**
 * A refused address: `position` is the 0-based index into `input` where it went wrong (the input's
 * length when it ended too early), `expected` says what would have been valid there.
 */
export class AddressError extends Error {
  readonly position: number;
  readonly expected: string;
  readonly input: string;

  constructor(input: string, position: number, expected: string) {
    super(`Invalid artifact address: expected ${expected} at position ${position}, found ${found(input, position)}`);
    this.name = "AddressError";
    this.input = input;
    this.position = position;
    this.expected = expected;
  }
}

/**
 * The 400 `invalid_request` for a refused address (spec 7), with `details: { position, expected, input }`.
 *
 * @example try { parseAddress(q) } catch (err) { throw err instanceof AddressError ? toApiError(err) : err }
 */
export function toApiError(err: AddressError): ApiError {
  return new ApiError("invalid_request", err.message, { position: err.position, expected: err.expected, input: err.input });
}

// ---------------------------------------------------------------------------------------------------
// characters

const UNSAFE_ASCII = new Set(Array.from(' "<>\\^`{|}?', (c) => c.charCodeAt(0)));
const UNSAFE_UNICODE = /^[\p{Z}\u061C\u200E\u200F\u202A-\u202E\u2066-\u2069\uFEFF]$/u;

/** Characters refused raw anywhere and always encoded (see the module comment of ./address.ts); `%` is handled apart. */
export function isUnsafe(cp: number): boolean {
  if (cp < 0x20 || (cp >= 0x7f && cp <= 0x9f)) return true;
  if (cp < 0x80) return UNSAFE_ASCII.has(cp);
  return UNSAFE_UNICODE.test(String.fromCodePoint(cp));
}

/** A UTF-16 surrogate (half of a pair: not a character on its own). */
export const isSurrogate = (cp: number) => cp >= 0xd800 && cp <= 0xdfff;
/** An ASCII digit `0`..`9` (a UTF-16 code unit). */
export const isDigit = (c: number) => c >= 0x30 && c <= 0x39;
/** An uppercase ASCII letter `A`..`Z` (a UTF-16 code unit). */
export const isUpper = (c: number) => c >= 0x41 && c <= 0x5a;

/** How the character at `position` is shown in a message. */
function found(input: string, position: number): string {
  if (position >= input.length) return "the end of the address";
  const cp = input.codePointAt(position)!;
  if (isSurrogate(cp) || isUnsafe(cp)) return `U+${cp.toString(16).toUpperCase().padStart(4, "0")}`;
  return JSON.stringify(String.fromCodePoint(cp));
}

/** Refuses the input being parsed: throws an {@link AddressError} at `position` saying what was `expected` there. */
export type Fail = (position: number, expected: string) => never;
