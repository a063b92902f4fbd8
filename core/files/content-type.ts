/**
 * Content types (spec 2.6, issue 10): the uploader's declared media type, normalized, and the stored
 * type decided from it and what the bytes were detected as.
 */
import { isUtf8 } from "node:buffer";
import { ApiError } from "../errors";

const TOKEN = "[!#$%&'*+.^_`|~0-9A-Za-z-]+";
const MEDIA_TYPE = new RegExp(`^(${TOKEN})/(${TOKEN})((?:\\s*;\\s*${TOKEN}=(?:${TOKEN}|"(?:[^"\\\\\\p{Cc}]|\\\\[^\\p{Cc}])*"))*)\\s*;?\\s*$`, "u");

/**
 * Normalizes a declared media type: lowercases type, subtype and parameter names, and spaces the
 * parameters as `type/subtype; name=value`. Empty or missing answers undefined.
 *
 * @throws {ApiError} `invalid_request` (details `{ field: "contentType" }`) when it is not a media type
 *   (`type/subtype` with optional `; name=value` parameters, at most 255 characters)
 */
export function normalizeContentType(value: string | undefined): string | undefined {
  const s = value?.trim();
  if (!s) return undefined;
  const m = s.length <= 255 ? MEDIA_TYPE.exec(s) : null;
  if (!m) throw new ApiError("invalid_request", "The declared content type is not a media type such as image/png", { field: "contentType" });
  const params = [...(m[3] ?? "").matchAll(new RegExp(`;\\s*(${TOKEN})=(${TOKEN}|"(?:[^"\\\\]|\\\\.)*")`, "gu"))].map(([, k, v]) => `; ${k!.toLowerCase()}=${v}`);
  return `${m[1]!.toLowerCase()}/${m[2]!.toLowerCase()}${params.join("")}`;
}

/** The `type/subtype` part of a media type, without parameters. */
function essence(mediaType: string): string {
  return mediaType.split(";")[0]!.trim();
}

/**
 * Container formats that `file-type` reports generically: a declared type of that family agrees with
 * the bytes (an SVG is XML, an EPUB a zip, a .doc a compound file), so it is kept.
 */
const CONTAINER_FAMILIES: Record<string, RegExp> = {
  "application/xml": /^(text\/xml|application\/xml|[a-z]+\/[^;]*\+xml)$/,
  "application/zip": /^(application\/zip|[a-z]+\/[^;]*\+zip|application\/epub\+zip|application\/java-archive|application\/vnd\.(oasis\.opendocument|openxmlformats-officedocument|android\.package-archive)[^;]*)$/,
  "application/x-cfb": /^(application\/x-cfb|application\/msword|application\/vnd\.ms-[^;]+|application\/vnd\.visio|application\/x-msi)$/,
};

/**
 * Decides the stored content type from the declared one and what the bytes were detected as
 * (issue 10: "a mismatch is stored as what the bytes are, and the reference says so").
 *
 * @returns `contentType`, and `declaredContentType` only when it was overridden
 */
export function decideContentType(declared: string | undefined, detected: string | undefined): { contentType: string; declaredContentType?: string } {
  if (!detected) return { contentType: declared ?? "application/octet-stream" };
  if (!declared) return { contentType: detected };
  const d = essence(declared);
  if (d === detected || CONTAINER_FAMILIES[detected]?.test(d)) return { contentType: declared };
  return { contentType: detected, declaredContentType: declared };
}

/**
 * Whether the first bytes of a file are not text: a NUL byte, or bytes that are not UTF-8 (a sequence
 * cut by the end of `head` is allowed when `truncated`: the file goes on). A file declared `text/*`
 * whose bytes look so is stored as `application/octet-stream` (a multipart part without a type of its
 * own is `text/plain` by RFC 7578, whatever it holds).
 * @param head the file's first bytes
 * @param truncated whether the file is longer than `head`
 * @param charset the declared `charset` parameter: one other than UTF-8 checks for NUL bytes only; a
 *   UTF-16 byte order mark is text
 */
export function looksBinary(head: Uint8Array, truncated: boolean, charset?: string): boolean {
  // UTF-16 text (with its byte order mark) holds NULs: it is text
  if ((head[0] === 0xff && head[1] === 0xfe) || (head[0] === 0xfe && head[1] === 0xff)) return false;
  if (head.includes(0)) return true;
  // a declared charset other than UTF-8 (Windows-1252, Latin-1 exports): any byte but NUL is text
  if (charset !== undefined && !/^utf-?8$/i.test(charset)) return false;
  if (isUtf8(head)) return false;
  if (!truncated) return true;
  // drop an incomplete last sequence (up to 3 bytes: a lead byte and what followed it)
  for (let cut = 1; cut <= 3 && cut < head.length; cut++) {
    if ((head[head.length - cut]! & 0xc0) === 0xc0) return !isUtf8(head.subarray(0, head.length - cut));
  }
  return true;
}
