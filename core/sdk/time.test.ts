/** The one grammar of dates and timestamps (core/sdk/time.ts) and the places that must all use it. */
import { describe, expect, it } from "vitest";
import * as v from "valibot";
import { DATE_PATTERN, TIMESTAMP_PATTERN, dateSchema, isCalendarDate, isTimestamp, timestampSchema } from "./time";
import { validateChanges } from "../ontology/validate";
import { CATALOG_FIELDS } from "../events/log";
import { compileDataset } from "./datasets";
import type { ProjectDefinition } from "./project";
import type { OntologyChange } from "./context";

const TIMESTAMPS_OK = ["2026-01-31T12:00:00Z", "2026-01-31T13:00:00.5+01:00", "2026-01-31T12:00:00.123456789Z", "2028-02-29T00:00:00-12:00", "0001-01-01T00:00:00Z", "9999-12-31T23:59:59Z"];
const TIMESTAMPS_NOT = [
  "2026-02-29T00:00:00Z", // no such day (2026 is no leap year)
  "2026-04-31T10:00:00Z", // April has 30 days: Date.parse reads it as May 1
  "2026-01-01T00:00", // no seconds, no zone: local time
  "2026-01-01T00:00:00", // no zone
  "2026-01-01 00:00:00Z", // a space for the T
  "2026-01-01t00:00:00z", // lower case (Date.parse reads it, but not every reader does)
  "2026-01-01T00:00:00+0100", // an offset without its colon
  "2026-01-01T00:00:00,5Z", // a comma fraction
  "2026-01-01T23:59:60Z", // a leap second
  "2026-01-01T24:00:00Z",
  "0000-01-01T00:00:00Z",
  "2026-01-01T00:00:00.1234567890Z", // ten fraction digits
  "yesterday",
  "",
];
const DATES_OK = ["2026-01-31", "2028-02-29", "2000-02-29"];
const DATES_NOT = ["2026-02-29", "1900-02-29", "2026-02-30", "2026-13-01", "2026-1-01", "2026-01-31T00:00:00Z", "0000-01-01", ""];

describe("dates and timestamps (core/sdk/time.ts)", () => {
  it("takes RFC 3339 timestamps with upper-case T and Z on real dates, and real calendar dates", () => {
    for (const s of TIMESTAMPS_OK) expect([s, isTimestamp(s), v.is(timestampSchema(), s)]).toEqual([s, true, true]);
    for (const s of TIMESTAMPS_NOT) expect([s, isTimestamp(s), v.is(timestampSchema(), s)]).toEqual([s, false, false]);
    for (const s of DATES_OK) expect([s, isCalendarDate(s), v.is(dateSchema(), s)]).toEqual([s, true, true]);
    for (const s of DATES_NOT) expect([s, isCalendarDate(s), v.is(dateSchema(), s)]).toEqual([s, false, false]);
  });

  it("writes the calendar into its pattern exactly as isCalendarDate counts it (every day of years around the leap rules)", () => {
    for (const year of [0, 1, 4, 100, 400, 1600, 1900, 2000, 2023, 2024, 2100, 9996, 9999]) {
      for (let month = 0; month <= 13; month++) {
        for (let day = 0; day <= 32; day++) {
          const s = `${String(year).padStart(4, "0")}-${String(month).padStart(2, "0")}-${String(day).padStart(2, "0")}`;
          const date = new Date(0);
          date.setUTCFullYear(year, month - 1, day); // not Date.UTC, which reads years 0–99 as 1900–1999
          const real = year > 0 && month >= 1 && month <= 12 && day >= 1 && date.getUTCDate() === day && date.getUTCMonth() === month - 1;
          expect([s, isCalendarDate(s), DATE_PATTERN.test(s), TIMESTAMP_PATTERN.test(`${s}T00:00:00Z`)]).toEqual([s, real, real, real]);
        }
      }
    }
  });

  it("is the grammar of datetime and date properties written by connector code, of telemetry times, of the catalog's times and of dataset columns", () => {
    const project = { id: "p", objectTypes: { a: { properties: { when: { type: "datetime", required: false }, day: { type: "date", required: false }, n: { type: "number", required: false } } } }, linkTypes: {}, telemetry: { temp: { objectTypeId: "a" } }, identities: {} } as unknown as ProjectDefinition;
    const refused = (changes: unknown[]) => {
      try {
        validateChanges(project, changes as OntologyChange[]);
        return false;
      } catch {
        return true;
      }
    };
    const dataset = compileDataset({ columns: { k: "string", when: "datetime", day: "date" }, primaryKey: "k" } as never);
    for (const [list, ok] of [[TIMESTAMPS_OK, true], [TIMESTAMPS_NOT, false]] as const) {
      for (const s of list) {
        expect([s, refused([{ op: "object.upsert", objectTypeId: "a", primaryId: "x", properties: { when: s } }])]).toEqual([s, !ok]);
        expect([s, refused([{ op: "telemetry.append", objectTypeId: "a", objectId: "x", propertyId: "temp", value: 1, at: s }])]).toEqual([s, !ok]);
        expect([s, v.is(CATALOG_FIELDS.finishedAt!.schema, s)]).toEqual([s, ok]);
        expect([s, dataset.check({ k: "1", when: s }).ok]).toEqual([s, ok]);
      }
    }
    for (const [list, ok] of [[DATES_OK, true], [DATES_NOT, false]] as const) {
      for (const s of list) {
        expect([s, refused([{ op: "object.upsert", objectTypeId: "a", primaryId: "x", properties: { day: s } }])]).toEqual([s, !ok]);
        expect([s, dataset.check({ k: "1", day: s }).ok]).toEqual([s, ok]);
      }
    }
  });
});
