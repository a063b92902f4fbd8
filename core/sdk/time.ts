import * as v from "valibot";

/**
 * The one grammar of dates and timestamps in svc's values (spec 2.1 `date`/`datetime` properties,
 * dataset columns, the event catalog's times, query filters), so that what a connector writes, what
 * the HTTP API accepts and what `/docs` says are the same set of strings:
 * - a date is `YYYY-MM-DD`, a real Gregorian date, years 0001–9999;
 * - a timestamp is RFC 3339's `date-time` with an upper-case `T` and `Z`: such a date, `T`,
 *   `hh:mm:ss`, an optional fraction of 1 to 9 digits, then `Z` or an offset `±hh:mm`, e.g.
 *   `2026-01-31T12:00:00Z` or `2026-01-31T13:00:00.5+01:00`. No leap second (`:60`), no space for `T`,
 *   no offset without a colon, no local time without an offset: each is a string `Date.parse` reads
 *   differently or not at all.
 */

/**
 * A real date as a regular expression's source: years 0001–9999; 31-day months to 31, 30-day months to
 * 30, February to 28, and February 29 in leap years only (divisible by 4; of the centuries, only those
 * divisible by 400). Written out so that the JSON Schema `pattern` in `/docs` is the whole rule: a
 * generator of "valid" values (schemathesis) produces only values the service takes. No lookarounds.
 */
const DATE_SOURCE =
  "(?:(?:000[1-9]|00[1-9]\\d|0[1-9]\\d{2}|[1-9]\\d{3})-(?:(?:0[13578]|1[02])-(?:0[1-9]|[12]\\d|3[01])|(?:0[469]|11)-(?:0[1-9]|[12]\\d|30)|02-(?:0[1-9]|1\\d|2[0-8]))" +
  "|(?:\\d{2}(?:0[48]|[2468][048]|[13579][26])|(?:0[48]|[2468][048]|[13579][26])00)-02-29)";

/** A timestamp (see the module), the whole rule: {@link isTimestamp} is this test. */
export const TIMESTAMP_PATTERN = new RegExp(`^${DATE_SOURCE}T(?:[01]\\d|2[0-3]):[0-5]\\d:[0-5]\\d(?:\\.\\d{1,9})?(?:Z|[+-](?:[01]\\d|2[0-3]):[0-5]\\d)$`);
/** A date (see the module), the whole rule: it agrees with {@link isCalendarDate} (a test checks every day of several years). */
export const DATE_PATTERN = new RegExp(`^${DATE_SOURCE}$`);

const DAYS = [0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

/**
 * `YYYY-MM-DD`, a real Gregorian date, years 0001–9999 (`2026-02-29` is not one, `2028-02-29` is).
 * Written on char codes without allocating: sheets run it once per cell of up to 100,000 rows.
 */
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

/** A timestamp as the module defines it (RFC 3339 `date-time`, upper-case `T` and `Z`, a real date). */
export function isTimestamp(s: string): boolean {
  return TIMESTAMP_PATTERN.test(s);
}

/** The words every refusal of a timestamp uses. */
export const TIMESTAMP_WORDS = "an ISO 8601 timestamp with a time zone, e.g. 2026-01-31T12:00:00Z";
/** The words every refusal of a date uses. */
export const DATE_WORDS = "a date YYYY-MM-DD, e.g. 2026-01-31";

/**
 * A string that is a timestamp ({@link isTimestamp}); documented in JSON Schema by its `pattern`, which
 * is the whole rule.
 * @param message the refusal, default `must be <TIMESTAMP_WORDS>`
 */
export function timestampSchema(message = `must be ${TIMESTAMP_WORDS}`) {
  return v.pipe(v.string(), v.regex(TIMESTAMP_PATTERN, message), v.description(`An ISO 8601 timestamp with a time zone (RFC 3339 date-time with upper-case T and Z), e.g. 2026-01-31T12:00:00Z`));
}

/**
 * A string that is a date ({@link isCalendarDate}); documented by its `pattern`, which is the whole rule.
 * @param message the refusal, default `must be <DATE_WORDS>`
 */
export function dateSchema(message = `must be ${DATE_WORDS}`) {
  return v.pipe(v.string(), v.regex(DATE_PATTERN, message), v.description("A date YYYY-MM-DD"));
}
