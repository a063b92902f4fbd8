/** File names (spec 2.6): what is kept of an uploader's file name. */
import { MAX_FILE_NAME_BYTES } from "./limits";

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;
// control characters, bidirectional overrides and isolates (used to disguise extensions), line and
// paragraph separators, and the byte order mark; joiners and other format characters stay (emoji)
const UNSAFE_CHARS = /[\p{Cc}\u061C\u200E\u200F\u202A-\u202E\u2066-\u2069\u2028\u2029\uFEFF]/gu;

/** Cuts `s` to at most `maxBytes` UTF-8 bytes without splitting a code point. */
function cutUtf8(s: string, maxBytes: number): string {
  if (Buffer.byteLength(s, "utf8") <= maxBytes) return s;
  let out = "";
  let bytes = 0;
  for (const ch of s) {
    const n = Buffer.byteLength(ch, "utf8");
    if (bytes + n > maxBytes) break;
    out += ch;
    bytes += n;
  }
  return out;
}

/**
 * Makes an uploader's file name safe to store and to send back in `Content-Disposition`: keeps only the
 * last path segment (`/` and `\` both separate), removes control characters and bidirectional
 * overrides, normalizes to NFC, trims spaces and trailing dots, and caps it at 255 UTF-8 bytes keeping
 * the extension. Unicode letters, emoji and spaces inside the name stay.
 *
 * @param name what the uploader sent (may be undefined)
 * @param fallback used when nothing is left (e.g. `..` or an empty name): `file`
 * @example sanitizeFileName("../../etc/passwd") === "passwd"
 */
export function sanitizeFileName(name: string | undefined, fallback = "file"): string {
  let s = (name ?? "").replace(LONE_SURROGATE, "").normalize("NFC");
  s = s.split(/[/\\]/).pop() ?? "";
  s = s.replace(/[\t\n\v\f\r]/g, " ").replace(UNSAFE_CHARS, "").replace(/\s+/gu, " ").trim().replace(/[.\s]+$/u, "");
  if (s === "" || s === "." || s === "..") return fallback;
  if (Buffer.byteLength(s, "utf8") > MAX_FILE_NAME_BYTES) {
    const dot = s.lastIndexOf(".");
    const ext = dot > 0 && s.length - dot <= 20 ? s.slice(dot) : "";
    s = cutUtf8(s.slice(0, s.length - ext.length), MAX_FILE_NAME_BYTES - Buffer.byteLength(ext, "utf8")).trimEnd() + ext;
  }
  return s;
}
