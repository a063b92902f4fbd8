/**
 * The grammars of typed CSV cells in a `sheet` artifact (spec 2.8; the decisions are listed in
 * core/artifacts/workbook.ts): numbers (also currency and percent cells), dates and web addresses.
 * Written on char codes without allocating: they run once per cell of up to 100,000 rows.
 */

/** JSON's number grammar, finite as a double. */
export function isPlainNumber(s: string): boolean {
  const n = s.length;
  let i = 0;
  let c = s.charCodeAt(0);
  if (c === 45 /* - */) c = s.charCodeAt(++i);
  if (c === 48 /* 0 */) i++;
  else if (c >= 49 && c <= 57) {
    i++;
    while (i < n && (c = s.charCodeAt(i)) >= 48 && c <= 57) i++;
  } else return false;
  if (i === n) return n < 300 || Number.isFinite(Number(s));
  if (s.charCodeAt(i) === 46 /* . */) {
    const start = ++i;
    while (i < n && (c = s.charCodeAt(i)) >= 48 && c <= 57) i++;
    if (i === start) return false;
    if (i === n) return true;
  }
  if ((s.charCodeAt(i) | 32) !== 101 /* e */) return false;
  c = s.charCodeAt(++i);
  if (c === 43 || c === 45) i++;
  const start = i;
  while (i < n && (c = s.charCodeAt(i)) >= 48 && c <= 57) i++;
  return i !== start && i === n && Number.isFinite(Number(s));
}

/** `YYYY-MM-DD`, a real Gregorian date, years 0001–9999 (the grammar of every date in svc: core/sdk/time.ts). */
export { isCalendarDate } from "../sdk/time";

/** A complete `http://` or `https://` address: a host, no whitespace or control characters. */
export function isWebAddress(s: string): boolean {
  // "http" in any case, an optional "s", then "://" (char codes, no allocation)
  if ((s.charCodeAt(0) | 32) !== 104 || (s.charCodeAt(1) | 32) !== 116 || (s.charCodeAt(2) | 32) !== 116 || (s.charCodeAt(3) | 32) !== 112) return false;
  const colon = (s.charCodeAt(4) | 32) === 115 ? 5 : 4;
  if (s.charCodeAt(colon) !== 58 || s.charCodeAt(colon + 1) !== 47 || s.charCodeAt(colon + 2) !== 47) return false;
  const rest = colon + 3;
  if (rest >= s.length || s.charCodeAt(rest) === 47 /* a third slash */) return false;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c <= 32 || c === 127 || c === 0x85 || c === 0xa0 || c === 0x2028 || c === 0x2029 || c === 0x3000) return false;
  }
  try {
    return new URL(s).hostname !== "";
  } catch {
    return false;
  }
}
