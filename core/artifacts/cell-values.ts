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

const DAYS = [0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
/** `YYYY-MM-DD`, a real Gregorian date, years 0001–9999. */
export function isCalendarDate(s: string): boolean {
  if (s.length !== 10 || s.charCodeAt(4) !== 45 || s.charCodeAt(7) !== 45) return false;
  let year = 0;
  for (let i = 0; i < 4; i++) {
    const d = s.charCodeAt(i) - 48;
    if (d < 0 || d > 9) return false;
    year = year * 10 + d;
  }
  const m1 = s.charCodeAt(5) - 48, m2 = s.charCodeAt(6) - 48, d1 = s.charCodeAt(8) - 48, d2 = s.charCodeAt(9) - 48;
  if (m1 < 0 || m1 > 9 || m2 < 0 || m2 > 9 || d1 < 0 || d1 > 9 || d2 < 0 || d2 > 9) return false;
  const month = m1 * 10 + m2, day = d1 * 10 + d2;
  if (year === 0 || month < 1 || month > 12 || day < 1) return false;
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
  return day <= (month === 2 && leap ? 29 : DAYS[month]!);
}

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
