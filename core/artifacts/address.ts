/**
 * Artifact addresses (spec 2.7, 2.9, 2.10, 9): the one parser and the one formatter for
 *
 *     artifact:<id>[@<version>][/<file>][#<part>]
 *
 * Pure: no I/O, nothing about what exists. Whether an address names something (the artifact, the
 * version, the file, the sheet, the chart, the section, the slide) is the resolver's question.
 *
 * ## Grammar
 *
 * - `artifact:` — lowercase, exactly (no leading or trailing whitespace is skipped).
 * - `<id>` — `art_` followed by one or more ASCII letters or digits (ours are `art_<ULID>`).
 * - `@<version>` — a positive integer without leading zeros, at most `Number.MAX_SAFE_INTEGER`. Absent:
 *   the address follows the latest version; present: it stays on that version forever (spec 9).
 * - `/<file>` — a relative path inside the artifact: segments separated by `/`, no empty segment, no
 *   `.` or `..` segment (also when spelled `%2E`), and no `/` inside a segment (`%2F` is refused in a
 *   path: a file name cannot contain `/`). The parsed `file` is the decoded segments joined by `/`.
 * - `#<part>` — the rest of the address, one of (decided on the raw, undecoded text):
 *   1. `chart=<chart_name>` — the part starts with the five raw characters `chart=`; the chart name is
 *      what follows (non-empty; `=` inside it needs no escape; a raw `!` is refused in it to avoid
 *      reading `chart=x!A1` as a range — write `%21`). → `{ kind: "chart", chart }`.
 *   2. `<sheet_name>!<range>` — the part contains a raw `!`; the first one separates the (non-empty)
 *      sheet name from the range. → `{ kind: "range", sheet, range }`.
 *   3. `<name>` — anything else: a sheet name (sheets), a heading slug (documents) or a slide number
 *      (slides; a slide number is simply a name made of digits, `#3`, and the resolver reads it as the
 *      third slide). The parser cannot know the artifact's kind. → `{ kind: "name", name }`.
 *   A sheet or a bare name that itself starts with `chart=` is written with its `=` escaped (`chart%3Dx`).
 *
 * ## Ranges
 *
 * The `<range>` of a `<sheet_name>!<range>` part is in A1 notation (`C5`, `A2:C10`, `B:D`, `B`): its
 * grammar, parser and formatter are in ./cell-range.ts.
 *
 * ## Escaping (RFC 3986-style percent-encoding of UTF-8, IRI-style raw Unicode)
 *
 * Applies to file path segments, sheet names, chart names and bare names ("components").
 *
 * Decoding (parser):
 * - `%` must start `%XX` (two hex digits, either case); consecutive escapes form one character in
 *   UTF-8, which must be well formed (no stray continuation byte, no truncated sequence, no overlong
 *   form, no surrogate, nothing above U+10FFFF). A malformed escape is refused at its `%` (the lead
 *   `%` of the sequence when the UTF-8 is wrong; the `%` of a continuation escape that lacks hex digits).
 * - Any character may be percent-encoded (`%41` reads as `A`); other non-ASCII characters may be raw.
 * - These characters are refused when raw, anywhere in an address ("unsafe"): the controls
 *   U+0000–U+001F and U+007F–U+009F; space and every other Unicode separator (general category Z:
 *   U+00A0, U+1680, U+2000–U+200A, U+2028, U+2029, U+202F, U+205F, U+3000); the bidirectional controls
 *   U+061C, U+200E, U+200F, U+202A–U+202E, U+2066–U+2069; U+FEFF; the ASCII characters
 *   `"` `<` `>` `\` `^` `` ` `` `{` `|` `}` `?`; a `%` that does not start a valid escape; and an
 *   unpaired surrogate (JavaScript strings can hold one; it is not a character).
 * - Raw delimiters by place: `#` only once, to start the part; `/` only between path segments (raw `/`
 *   in a part is refused); `!` in the part only as the sheet/range separator (in a file path a raw `!`
 *   is an ordinary character; in a chart name it is refused); `@` is an ordinary character anywhere
 *   after the version's place (raw `@` in a path or a name is accepted); `=` is an ordinary character
 *   except in the leading `chart=`.
 *
 * Encoding (formatter, canonical form): a character is percent-encoded as its UTF-8 bytes, uppercase
 * hex, exactly when it is
 * - unsafe (the list above), or `%`, `#`, `@`, `!`, `/` — in every component;
 * - `=` — in sheet names and bare names only (never in chart names or file paths).
 *
 * Everything else is written as it is, non-ASCII included (`artifact:art_1/Données/été.csv`). So the
 * canonical form of an address is unique: `formatAddress(parseAddress(s))` is the same string for
 * every spelling `s` of one address, and `parseAddress(formatAddress(a))` is `a`.
 *
 * Errors: parsing throws {@link AddressError} (./address-error.ts) with the 0-based position in the
 * input where it went wrong and what was expected there; {@link toApiError} (there too) turns it into a
 * 400 `invalid_request`. Formatting a value that is not a valid address throws a `TypeError` naming the
 * field.
 */
import { AddressError, isDigit, isSurrogate, isUnsafe, isUpper, type Fail } from "./address-error";
import { formatRange, readRange, type CellRange } from "./cell-range";

/** The scheme every artifact address starts with. */
export const ADDRESS_SCHEME = "artifact:";

/**
 * What follows `#` (spec 2.7, 2.10): a chart of a workbook, a range of a sheet, or a name the resolver
 * interprets by the artifact's kind (a sheet, a heading slug, or a slide number such as `"3"`).
 */
export type AddressPart = { kind: "chart"; chart: string } | { kind: "range"; sheet: string; range: CellRange } | { kind: "name"; name: string };

/**
 * A parsed address (spec 2.7, 9). Absent keys are omitted (never set to `undefined`) by the parser.
 * No `version`: the address follows the latest version. `file` is decoded (`"images/Q1 chart.png"`).
 */
export interface ArtifactAddress {
  artifactId: string;
  version?: number;
  file?: string;
  part?: AddressPart;
}

/**
 * True when `input` starts with `artifact:` (case-sensitive). A link cell, a markdown link or an
 * `href`/`src` holding such a value is an artifact address (and must then parse); anything else is not.
 */
export function isArtifactAddress(input: string): boolean {
  return typeof input === "string" && input.startsWith(ADDRESS_SCHEME);
}

// ---------------------------------------------------------------------------------------------------
// characters

const isAlnum = (c: number) => isDigit(c) || isUpper(c) || (c >= 0x61 && c <= 0x7a);
const hexValue = (c: number) => (isDigit(c) ? c - 0x30 : c >= 0x41 && c <= 0x46 ? c - 0x37 : c >= 0x61 && c <= 0x66 ? c - 0x57 : -1);

const ID_RE = /^art_[0-9A-Za-z]+$/;

/** Components and what each refuses raw beyond the unsafe characters, and what it encodes beyond them. */
interface Component {
  label: string;
  /** Raw delimiters refused inside the component, each with the escape to use. */
  refusedRaw: string;
  /** Characters the formatter encodes in this component besides the unsafe ones and `%`. */
  encoded: string;
  /** A decoded `/` is refused (file path segments). */
  noSlash: boolean;
}
const FILE: Component = { label: "file path", refusedRaw: "#", encoded: "#@!/", noSlash: true };
const NAME: Component = { label: "name", refusedRaw: "#/", encoded: "#@!/=", noSlash: false };
const SHEET: Component = { label: "sheet name", refusedRaw: "#/", encoded: "#@!/=", noSlash: false };
const CHART: Component = { label: "chart name", refusedRaw: "#/!", encoded: "#@!/", noSlash: false };

const pct = (byte: number) => `%${byte.toString(16).toUpperCase().padStart(2, "0")}`;

/**
 * Reads one percent-encoded UTF-8 character starting at the `%` at `i` (before `end`).
 * Refuses a malformed escape at its `%`, and malformed UTF-8 at the sequence's first `%`.
 */
function readEscaped(input: string, i: number, end: number, fail: Fail): { cp: number; next: number } {
  const byteAt = (j: number): number => {
    const hi = j + 1 < end ? hexValue(input.charCodeAt(j + 1)) : -1;
    const lo = j + 2 < end ? hexValue(input.charCodeAt(j + 2)) : -1;
    if (hi < 0 || lo < 0) fail(j, "two hexadecimal digits after '%' (a percent-encoded byte such as %20)");
    return hi * 16 + lo;
  };
  const utf8 = "well-formed percent-encoded UTF-8 (e.g. %C3%A9 for é)";
  const b0 = byteAt(i);
  if (b0 < 0x80) return { cp: b0, next: i + 3 };
  let length: number;
  let lo = 0x80;
  let hi = 0xbf;
  let cp: number;
  if (b0 >= 0xc2 && b0 <= 0xdf) [length, cp] = [2, b0 & 0x1f];
  else if (b0 >= 0xe0 && b0 <= 0xef) {
    [length, cp] = [3, b0 & 0x0f];
    if (b0 === 0xe0) lo = 0xa0;
    if (b0 === 0xed) hi = 0x9f;
  } else if (b0 >= 0xf0 && b0 <= 0xf4) {
    [length, cp] = [4, b0 & 0x07];
    if (b0 === 0xf0) lo = 0x90;
    if (b0 === 0xf4) hi = 0x8f;
  } else return fail(i, utf8);
  for (let k = 1; k < length; k++) {
    const j = i + 3 * k;
    if (j >= end || input.charCodeAt(j) !== 0x25) fail(i, utf8);
    const b = byteAt(j);
    if (b < lo || b > hi) fail(i, utf8);
    cp = (cp << 6) | (b & 0x3f);
    lo = 0x80;
    hi = 0xbf;
  }
  return { cp, next: i + 3 * length };
}

/** Decodes `input[start, end)` as one component, refusing what the module comment says. */
function decodeComponent(input: string, start: number, end: number, kind: Component, fail: Fail): string {
  let out = "";
  let i = start;
  while (i < end) {
    const c = input.charCodeAt(i);
    if (c === 0x25) {
      const { cp, next } = readEscaped(input, i, end, fail);
      if (kind.noSlash && cp === 0x2f) fail(i, "a file name character ('/' separates path segments; %2F cannot be in a file name)");
      out += String.fromCodePoint(cp);
      i = next;
      continue;
    }
    const cp = input.codePointAt(i)!;
    if (isSurrogate(cp)) fail(i, "a Unicode character (this is half of a surrogate pair)");
    const ch = String.fromCodePoint(cp);
    if (isUnsafe(cp) || kind.refusedRaw.includes(ch)) {
      fail(i, `a ${kind.label} character (write ${ch === " " ? "a space" : `'${ch}'`} as ${Array.from(utf8Bytes(cp), pct).join("")})`);
    }
    out += ch;
    i += ch.length;
  }
  return out;
}

function utf8Bytes(cp: number): number[] {
  if (cp < 0x80) return [cp];
  if (cp < 0x800) return [0xc0 | (cp >> 6), 0x80 | (cp & 0x3f)];
  if (cp < 0x10000) return [0xe0 | (cp >> 12), 0x80 | ((cp >> 6) & 0x3f), 0x80 | (cp & 0x3f)];
  return [0xf0 | (cp >> 18), 0x80 | ((cp >> 12) & 0x3f), 0x80 | ((cp >> 6) & 0x3f), 0x80 | (cp & 0x3f)];
}

/** The canonical spelling of one component (see "Encoding" in the module comment). */
function encodeComponent(value: string, kind: Component, field: string): string {
  let out = "";
  for (const ch of value) {
    const cp = ch.codePointAt(0)!;
    if (isSurrogate(cp)) throw new TypeError(`formatAddress: ${field} holds an unpaired surrogate (U+${cp.toString(16).toUpperCase()}), which has no UTF-8 form`);
    out += isUnsafe(cp) || ch === "%" || kind.encoded.includes(ch) ? utf8Bytes(cp).map(pct).join("") : ch;
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------
// addresses

/**
 * Parses an artifact address (spec 2.7; grammar and escaping in the module comment).
 *
 * @example parseAddress("artifact:art_01J@3/sheets/Q1%20Sales.csv")
 *   // { artifactId: "art_01J", version: 3, file: "sheets/Q1 Sales.csv" }
 * @example parseAddress("artifact:art_01J#Revenue!A2:C10")
 *   // { artifactId: "art_01J", part: { kind: "range", sheet: "Revenue", range: { start: { column: 0, row: 2 }, end: { column: 2, row: 10 } } } }
 * @throws AddressError with the 0-based `position` where the input went wrong and what was `expected`
 */
export function parseAddress(input: string): ArtifactAddress {
  if (typeof input !== "string") throw new TypeError("parseAddress: expected a string");
  const fail: Fail = (position, expected) => {
    throw new AddressError(input, position, expected);
  };
  const n = input.length;
  for (let i = 0; i < ADDRESS_SCHEME.length; i++) if (input[i] !== ADDRESS_SCHEME[i]) fail(i, `"${ADDRESS_SCHEME}" at the start of an artifact address`);

  let pos = ADDRESS_SCHEME.length;
  for (let i = 0; i < 4; i++) if (input[pos + i] !== "art_"[i]) fail(pos + i, 'an artifact id ("art_" followed by letters and digits)');
  const idStart = pos;
  pos += 4;
  while (pos < n && isAlnum(input.charCodeAt(pos))) pos++;
  if (pos === idStart + 4) fail(pos, 'letters or digits of the artifact id after "art_"');
  const address: ArtifactAddress = { artifactId: input.slice(idStart, pos) };

  if (input[pos] === "@") {
    const start = ++pos;
    while (pos < n && isDigit(input.charCodeAt(pos))) pos++;
    if (pos === start) fail(start, "a version number (1, 2, 3, …) after '@'");
    if (input[start] === "0") fail(start, "a version number from 1, without leading zeros");
    const version = Number(input.slice(start, pos));
    if (!Number.isSafeInteger(version)) fail(start, `a version number at most ${Number.MAX_SAFE_INTEGER}`);
    address.version = version;
    if (pos < n && input[pos] !== "/" && input[pos] !== "#") fail(pos, "a digit, '/', '#' or the end of the address");
  } else if (pos < n && input[pos] !== "/" && input[pos] !== "#") {
    fail(pos, "a letter or digit of the id, '@', '/', '#' or the end of the address");
  }

  if (input[pos] === "/") {
    const segments: string[] = [];
    for (;;) {
      const start = ++pos;
      while (pos < n && input[pos] !== "/" && input[pos] !== "#") pos++;
      const segment = decodeComponent(input, start, pos, FILE, fail);
      if (segment === "") fail(start, "a file path segment (a path has no empty segment)");
      if (segment === "." || segment === "..") fail(start, "a file path segment other than '.' or '..'");
      segments.push(segment);
      if (input[pos] !== "/") break;
    }
    address.file = segments.join("/");
  }

  if (input[pos] === "#") {
    const start = ++pos;
    if (start === n) fail(start, "a part after '#': a name, <sheet>!<range> or chart=<name>");
    if (input.startsWith("chart=", start)) {
      const chart = decodeComponent(input, start + 6, n, CHART, fail);
      if (chart === "") fail(start + 6, "a chart name after 'chart='");
      address.part = { kind: "chart", chart };
    } else {
      const bang = input.indexOf("!", start);
      if (bang >= 0) {
        const sheet = decodeComponent(input, start, bang, SHEET, fail);
        if (sheet === "") fail(start, "a sheet name before '!'");
        address.part = { kind: "range", sheet, range: readRange(input, bang + 1, n, fail) };
      } else {
        address.part = { kind: "name", name: decodeComponent(input, start, n, NAME, fail) };
      }
    }
  }
  return address;
}

/**
 * The canonical string of an address (spec 2.7): `artifact:<id>[@<version>][/<file>][#<part>]` with
 * components percent-encoded as the module comment says and the range in canonical A1 form.
 * `parseAddress(formatAddress(a))` deep-equals `a` (with absent keys omitted).
 *
 * @example formatAddress({ artifactId: "art_01J", part: { kind: "chart", chart: "Revenue by month" } })
 *   // "artifact:art_01J#chart=Revenue%20by%20month"
 * @throws TypeError when `address` is not a valid address (bad id, version not a positive safe
 *   integer, empty/`.`/`..` path segment, empty name, unpaired surrogate, invalid range)
 */
export function formatAddress(address: ArtifactAddress): string {
  const { artifactId, version, file, part } = address;
  if (typeof artifactId !== "string" || !ID_RE.test(artifactId)) throw new TypeError(`formatAddress: artifactId must be "art_" followed by letters and digits, got ${JSON.stringify(artifactId)}`);
  let out = ADDRESS_SCHEME + artifactId;
  if (version !== undefined) {
    if (!Number.isSafeInteger(version) || version < 1) throw new TypeError(`formatAddress: version must be a positive integer, got ${version}`);
    out += `@${version}`;
  }
  if (file !== undefined) {
    if (typeof file !== "string") throw new TypeError("formatAddress: file must be a string");
    const segments = file.split("/");
    for (const s of segments) if (s === "" || s === "." || s === "..") throw new TypeError(`formatAddress: file ${JSON.stringify(file)} must be a relative path without empty, '.' or '..' segments`);
    out += `/${segments.map((s) => encodeComponent(s, FILE, "file")).join("/")}`;
  }
  if (part !== undefined) {
    const nonEmpty = (value: unknown, field: string): string => {
      if (typeof value !== "string" || value === "") throw new TypeError(`formatAddress: ${field} must be a non-empty string`);
      return value;
    };
    switch (part.kind) {
      case "chart":
        out += `#chart=${encodeComponent(nonEmpty(part.chart, "part.chart"), CHART, "part.chart")}`;
        break;
      case "range":
        out += `#${encodeComponent(nonEmpty(part.sheet, "part.sheet"), SHEET, "part.sheet")}!${formatRange(part.range)}`;
        break;
      case "name":
        out += `#${encodeComponent(nonEmpty(part.name, "part.name"), NAME, "part.name")}`;
        break;
      default:
        throw new TypeError(`formatAddress: unknown part kind ${JSON.stringify((part as { kind: unknown }).kind)}`);
    }
  }
  return out;
}

/**
 * The page that opens an address (spec 4.1): `/artifacts/<id>`, with `v` when the address pins a
 * version and `part` for a sheet, range's sheet, `chart=<name>`, section slug or slide number.
 * @param basePath the path prefix the pages are served under (`Config.basePath`: `/svc`), default none
 */
export function pageUrl(address: ArtifactAddress, basePath = ""): string {
  const query: string[] = [];
  if (address.version !== undefined) query.push(`v=${address.version}`);
  const part = address.part;
  const name = part?.kind === "chart" ? `chart=${part.chart}` : part?.kind === "range" ? part.sheet : part?.name;
  if (name !== undefined) query.push(`part=${encodeURIComponent(name)}`);
  return `${basePath}/artifacts/${encodeURIComponent(address.artifactId)}${query.length ? `?${query.join("&")}` : ""}`;
}

/** A page URL for an address string ({@link pageUrl}, under `basePath`), or `#` for a malformed one. */
export function safePageUrl(address: string, basePath = ""): string {
  try {
    return pageUrl(parseAddress(address), basePath);
  } catch {
    return "#";
  }
}
