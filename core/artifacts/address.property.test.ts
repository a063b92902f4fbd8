/**
 * Artifact addresses (spec 2.7, 9) as properties over arbitrary addresses: round trips, canonical
 * spellings, and refusals (a valid address with one corruption is refused at or before the corruption,
 * never past it). The spec's table and exact refusal positions are in address.test.ts.
 */
import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { type ArtifactAddress, formatAddress, parseAddress } from "./address";
import { type CellRange, columnLetter, formatRange, MAX_ROW, parseRange } from "./cell-range";
import { block, cell, cols, refusal } from "../../test/helpers-artifacts";

const ALNUM = [..."0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"];
/** Pieces that stress the escaping: delimiters, unsafe characters, escapes written literally, unicode. */
const TRICKY = [
  " ", "#", "@", "!", "%", "/", "?", "=", ":", ".", "..", "chart=", "chart", "%20", "%zz", "!A1", "A1", "0", "1",
  "\u0000", "\u0007", "\t", "\n", "\u007f", "\u0085", "\u00a0", "\u2028", "\u202e", "\u2066", "\ufeff", "\u3000", "\u200d",
  "é", "日本", "😀", "👩‍💻", '"', "<", ">", "\\", "^", "`", "{", "|", "}", "$", "'", "(", ")", "[", "]", "+", "&", ";", ",", "*", "~", "-", "_",
];
const text = fc.string({
  unit: fc.oneof({ arbitrary: fc.constantFrom(...TRICKY), weight: 3 }, { arbitrary: fc.constantFrom(...ALNUM), weight: 3 }, { arbitrary: fc.string({ unit: "binary", minLength: 1, maxLength: 1 }), weight: 1 }),
  minLength: 1,
  maxLength: 10,
});
const segment = text.map((s) => s.replaceAll("/", "∕")).filter((s) => s !== "." && s !== "..");
const arbId = fc.string({ unit: fc.constantFrom(...ALNUM), minLength: 1, maxLength: 26 }).map((s) => `art_${s}`);
const arbVersion = fc.oneof(fc.integer({ min: 1, max: 20 }), fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }));
const arbColumn = fc.oneof(fc.constantFrom(0, 1, 25, 26, 27, 198, 199), fc.integer({ min: 0, max: 199 }));
const arbRow = fc.oneof(fc.constantFrom(1, 2, 9, 10, 100_000, MAX_ROW), fc.integer({ min: 1, max: MAX_ROW }));
const sorted = (a: number, b: number): [number, number] => (a <= b ? [a, b] : [b, a]);
const arbRange: fc.Arbitrary<CellRange> = fc.oneof(
  fc.tuple(arbColumn, arbRow).map(([c, r]) => cell(c, r)),
  fc.tuple(arbColumn, arbColumn, arbRow, arbRow).map(([c1, c2, r1, r2]) => {
    const [a, b] = sorted(c1, c2);
    const [x, y] = sorted(r1, r2);
    return block(a, x, b, y);
  }),
  fc.tuple(arbColumn, arbColumn).map(([c1, c2]) => cols(...sorted(c1, c2))),
);
const arbAddress: fc.Arbitrary<ArtifactAddress> = fc.record(
  {
    artifactId: arbId,
    version: arbVersion,
    file: fc.array(segment, { minLength: 1, maxLength: 4 }).map((s) => s.join("/")),
    part: fc.oneof(
      text.map((chart) => ({ kind: "chart" as const, chart })),
      fc.tuple(text, arbRange).map(([sheet, range]) => ({ kind: "range" as const, sheet, range })),
      text.map((name) => ({ kind: "name" as const, name })),
    ),
  },
  { requiredKeys: ["artifactId"], noNullPrototype: true },
);

/** A small deterministic PRNG so one generated seed decides a whole respelling. */
function prng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * Another valid spelling of `a`, written independently of the module's formatter: escapes where the
 * canonical form has none (either hex case), raw `@` in paths and names, raw `=` and `!` where they
 * are unambiguous, `C5:C5` for `C5` and `B:B` for `B`.
 */
function respell(a: ArtifactAddress, seed: number): string {
  const rnd = prng(seed);
  const escape = (ch: string) => {
    const hex = Array.from(new TextEncoder().encode(ch), (b) => `%${b.toString(16).padStart(2, "0")}`).join("");
    return rnd() < 0.5 ? hex.toUpperCase() : hex;
  };
  const mustEscape = /^[\p{Cc}\p{Z}\u061C\u200E\u200F\u202A-\u202E\u2066-\u2069\uFEFF"<>\\^`{|}?%#]$/u;
  const component = (value: string, rawAlso: string) =>
    Array.from(value, (ch) => (mustEscape.test(ch) || !rawAlso.includes(ch) && "/!@=".includes(ch) ? escape(ch) : rnd() < 0.3 ? escape(ch) : ch)).join("");
  const ref = (r: { column: number; row?: number }) => `${columnLetter(r.column)}${r.row ?? ""}`;
  let out = `artifact:${a.artifactId}`;
  if (a.version !== undefined) out += `@${a.version}`;
  if (a.file !== undefined) out += `/${a.file.split("/").map((s) => component(s, "@!=")).join("/")}`;
  const part = a.part;
  if (part?.kind === "chart") out += `#chart=${component(part.chart, "@=")}`;
  if (part?.kind === "name" || part?.kind === "range") {
    const name = part.kind === "name" ? part.name : part.sheet;
    // a raw `=` is fine unless the name would then begin with the raw `chart=`
    const spelled = component(name, name.startsWith("chart=") ? "@" : "@=");
    out += `#${spelled}`;
    if (part.kind === "range") {
      const { start, end } = part.range;
      const same = start.column === end.column && start.row === end.row;
      out += `!${same && rnd() < 0.5 ? ref(start) : `${ref(start)}:${ref(end)}`}`;
    }
  }
  return out;
}

describe("properties", () => {
  it("parse(format(a)) is a, for arbitrary addresses (unicode, spaces, #, @, !, %, / in names and paths)", () => {
    fc.assert(
      fc.property(arbAddress, (a) => {
        expect(parseAddress(formatAddress(a))).toStrictEqual(a);
      }),
      { numRuns: 2000 },
    );
  });

  it("canonical strings are stable: format(parse(s)) is s, and parse(format(parse(s))) is parse(s)", () => {
    fc.assert(
      fc.property(arbAddress, (a) => {
        const s = formatAddress(a);
        const parsed = parseAddress(s);
        expect(formatAddress(parsed)).toBe(s);
        expect(parseAddress(formatAddress(parsed))).toStrictEqual(parsed);
      }),
      { numRuns: 1000 },
    );
  });

  it("canonical strings hold no unsafe character raw, and each delimiter only in its place", () => {
    fc.assert(
      fc.property(arbAddress, (a) => {
        const s = formatAddress(a);
        expect(s).not.toMatch(/[\p{Cc}\p{Z}\u061C\u200E\u200F\u202A-\u202E\u2066-\u2069\uFEFF"<>\\^`{|}?]/u);
        expect(s.split("#").length - 1).toBe(a.part ? 1 : 0);
        expect(s.split("@").length - 1).toBe(a.version !== undefined ? 1 : 0);
        expect(s.split("!").length - 1).toBe(a.part?.kind === "range" ? 1 : 0);
        expect(s.split("/").length - 1).toBe(a.file ? a.file.split("/").length : 0);
        for (const [, hex] of s.matchAll(/%(..)/g)) expect(hex).toMatch(/^[0-9A-F]{2}$/);
      }),
      { numRuns: 1000 },
    );
  });

  it("every other spelling of an address parses to it and formats to its canonical string", () => {
    fc.assert(
      fc.property(arbAddress, fc.integer(), (a, seed) => {
        const spelled = respell(a, seed);
        expect(parseAddress(spelled)).toStrictEqual(a);
        expect(formatAddress(parseAddress(spelled))).toBe(formatAddress(a));
      }),
      { numRuns: 1000 },
    );
  });

  it("ranges round trip: parseRange(formatRange(r)) is r", () => {
    fc.assert(
      fc.property(arbRange, (r) => {
        expect(parseRange(formatRange(r))).toStrictEqual(r);
      }),
      { numRuns: 1000 },
    );
  });

  /** Characters and escapes that are wrong anywhere in an address (`%` alone only at the end, see below). */
  const BAD = [
    " ", "\t", "\n", "\u0000", "\u007f", "\u0085", "\u00a0", "\u2028", "\u202e", "\u2066", "\ufeff", "\u3000", "\ud800", "\udc00",
    "?", '"', "<", ">", "\\", "^", "`", "{", "|", "}",
    "%zz", "%g0", "%80", "%FF", "%C3", "%C3%28", "%E2%82", "%ED%A0%80", "%C0%AF", "%F4%90%80%80",
  ];
  const BAD_CHAR = BAD.filter((b) => b.length === 1);

  /**
   * The characters of a canonical string as written: one escaped character (`%E2%80%AE`) or one code
   * point each. A corruption goes between or in place of these (not inside one: `%C2` + `%80` + `%A0`
   * is a valid U+0080 followed by a stray byte, wrong only after the insertion).
   */
  function characters(s: string): string[] {
    const chars = s.match(/%(?:[0-7][0-9A-F]|[CD][0-9A-F]%[89AB][0-9A-F]|E[0-9A-F](?:%[89AB][0-9A-F]){2}|F[0-4](?:%[89AB][0-9A-F]){3})|[^]/gu) ?? [];
    expect(chars.join("")).toBe(s);
    return chars;
  }

  it("a valid address with something bad inserted is refused at or before the insertion, never past it", () => {
    fc.assert(
      fc.property(arbAddress, fc.nat(), fc.constantFrom(...BAD, "%"), (a, at, bad) => {
        const chars = characters(formatAddress(a));
        const k = bad === "%" ? chars.length : at % (chars.length + 1);
        const i = chars.slice(0, k).join("").length;
        const corrupt = [...chars.slice(0, k), bad, ...chars.slice(k)].join("");
        const err = refusal(() => parseAddress(corrupt));
        expect(err.input).toBe(corrupt);
        expect(err.position).toBeGreaterThanOrEqual(0);
        expect(err.position).toBeLessThanOrEqual(i);
      }),
      { numRuns: 3000 },
    );
  });

  it("a valid address with one character replaced by a bad one is refused at or before it, never past it", () => {
    fc.assert(
      fc.property(arbAddress, fc.nat(), fc.constantFrom(...BAD_CHAR), (a, at, bad) => {
        const chars = characters(formatAddress(a));
        const k = at % chars.length;
        const i = chars.slice(0, k).join("").length;
        const corrupt = [...chars.slice(0, k), bad, ...chars.slice(k + 1)].join("");
        const err = refusal(() => parseAddress(corrupt));
        expect(err.position).toBeGreaterThanOrEqual(0);
        expect(err.position).toBeLessThanOrEqual(i);
      }),
      { numRuns: 3000 },
    );
  });

  it("an escape with a hex digit spoiled is refused at or before its '%'", () => {
    fc.assert(
      fc.property(arbAddress, fc.nat(), fc.constantFrom("G", "z", "%", ""), (a, at, spoil) => {
        const s = formatAddress(a);
        const escapes = [...s.matchAll(/%[0-9A-F]{2}/g)].map((m) => m.index);
        fc.pre(escapes.length > 0);
        const i = escapes[at % escapes.length]!;
        // replace the second hex digit of that escape (with nothing: only when the escape ends the string)
        fc.pre(spoil !== "" || i + 3 === s.length);
        const corrupt = s.slice(0, i + 2) + spoil + s.slice(i + 3);
        const err = refusal(() => parseAddress(corrupt));
        expect(err.position).toBeLessThanOrEqual(i);
      }),
      { numRuns: 1000 },
    );
  });
});
