/**
 * Property: the in-memory evaluator (`matchesWhere`, used by rules) selects exactly the objects the SQL
 * of `POST /api/objects/query` (`compileObjectQuery`) selects, for random objects and random conditions
 * of each property's type (the `json` property `j` holds and is compared with any scalar, across
 * SQLite's storage classes). And the compiler refuses every condition whose value is of another type.
 */
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import fc from "fast-check";
import { Database } from "../store/db";
import { compileObjectQuery } from "./query";
import { matchesWhere } from "./match";
import type { Condition } from "../sdk/context";
import type { ProjectDefinition } from "../sdk/project";
import { tempDir } from "../../test/helpers-fs";

const project = { id: "p", objectTypes: { thing: { properties: { s: "string", n: "number", b: "boolean", j: "json", f: "file" } } }, identities: {} } as unknown as ProjectDefinition;
const opened: Database[] = [];
afterAll(async () => {
  for (const db of opened) await db.close();
});

const str = fc.constantFrom("", "a", "A", "ab", "Ab", "b", "ä", "É", "10", "2", "open", "OPEN", "overdue");
const num = fc.oneof(fc.constantFrom(-1, 0, 1, 2, 10, 1.5), fc.integer({ min: -5, max: 5 }));
// numbers whose text SQLite writes apart from JavaScript (`1.0e+21`, `-1.0e-06`) among them
const any = fc.oneof(str, num, fc.boolean(), fc.constantFrom(1e21, -0.000001, 0.1, 100.0));
const fileRef = fc.constantFrom({ id: "file_a", name: "a.pdf" }, { id: "file_b", name: "B.PDF" });
const props = fc.record(
  { s: fc.option(str, { nil: undefined }), n: fc.option(num, { nil: undefined }), b: fc.option(fc.boolean(), { nil: undefined }), j: fc.option(fc.oneof(any, fc.constant({ k: "A" })), { nil: undefined }), f: fc.option(fileRef, { nil: undefined }) },
  { requiredKeys: [] },
);
/** Conditions whose values are of one type (`null` where it is allowed: equality), at least one operator. */
const conditionOf = (value: fc.Arbitrary<unknown>, contains: boolean): fc.Arbitrary<Condition> => {
  const orNull = fc.oneof(value, fc.constant(null));
  const ops = fc.record(
    {
      eq: orNull, ne: orNull, gt: value, gte: value, lt: value, lte: value, in: fc.array(value, { minLength: 1, maxLength: 3 }), exists: fc.boolean(),
      ...(contains ? { contains: fc.oneof(str, fc.constantFrom("e+2", "1.0", "0.000", "100")) } : {}),
    },
    { requiredKeys: [] },
  ).filter((o) => Object.keys(o).length > 0);
  return fc.oneof(orNull, ops) as fc.Arbitrary<Condition>;
};
const CONDITIONS: Record<string, fc.Arbitrary<Condition>> = {
  s: conditionOf(str, true),
  n: conditionOf(num, false),
  b: conditionOf(fc.boolean(), false),
  j: conditionOf(any, true),
  primaryId: conditionOf(str, true),
  f: fc.oneof(fc.constant(null), fc.record({ eq: fc.constant(null), ne: fc.constant(null), exists: fc.boolean() }, { requiredKeys: [] }).filter((o) => Object.keys(o).length > 0)) as fc.Arbitrary<Condition>,
};
const where = fc.uniqueArray(fc.constantFrom(...Object.keys(CONDITIONS)), { maxLength: 2 }).chain((keys) => (keys.length ? fc.tuple(...keys.map((k) => CONDITIONS[k]!)).map((cs) => Object.fromEntries(keys.map((k, i) => [k, cs[i]]))) : fc.constant({})));

describe("matchesWhere (property)", () => {
  it("agrees with the SQL of compileObjectQuery", async () => {
    const db = await Database.open(path.join(tempDir("svc-match-"), "svc.db"));
    opened.push(db);
    await fc.assert(
      fc.asyncProperty(fc.array(props, { minLength: 1, maxLength: 8 }), fc.array(where, { minLength: 1, maxLength: 5 }), async (objects, wheres) => {
        await db.transaction(async (tx) => {
          await tx.run("DELETE FROM objects WHERE object_type_id = 'thing'");
          for (const [i, p] of objects.entries()) {
            const clean = Object.fromEntries(Object.entries(p).filter(([, v]) => v !== undefined));
            await tx.run("INSERT INTO objects (object_type_id, primary_id, properties, version, created_at, updated_at) VALUES ('thing', ?, ?, 1, '', '')", [`${i === 0 ? "a" : i}`, JSON.stringify(clean)]);
          }
        });
        for (const w of wheres) {
          const q = compileObjectQuery(project, { objectTypeId: "thing", where: w, pageSize: 500 });
          const sqlIds = (await db.all<{ primary_id: string }>(q.sql, q.params)).map((r) => r.primary_id).sort();
          const memIds = objects
            .map((p, i) => ({ id: `${i === 0 ? "a" : i}`, p: Object.fromEntries(Object.entries(p).filter(([, v]) => v !== undefined)) }))
            .filter((o) => matchesWhere(w, o.id, o.p))
            .map((o) => o.id)
            .sort();
          expect(memIds, JSON.stringify(w)).toEqual(sqlIds);
        }
      }),
      // and always: numbers whose SQLite text differs from JavaScript's, under `contains` (text values only)
      { numRuns: 300, examples: [[[{ j: 1e21 }, { j: -0.000001 }, { j: "1.0e+21" }, { j: { k: "1.0" } }], [{ j: { contains: "1.0" } }, { j: { contains: "e-06" } }, { j: { contains: "0.000001" } }]]] as never },
    );
  });
});

describe("compileObjectQuery refuses a condition of another type than its property", () => {
  const refused = (w: Record<string, unknown>) => () => compileObjectQuery(project, { objectTypeId: "thing", where: w as Record<string, Condition> });
  it.each([
    [{ n: { lt: "2000" } }, /where\.n\.lt must be a number \(n is a number property\), not the string "2000"/],
    [{ n: "7" }, /where\.n must be a number or null/],
    [{ s: 7 }, /where\.s must be a string or null \(s is a string property\), not the number 7/],
    [{ b: { eq: "true" } }, /where\.b\.eq must be a boolean or null/],
    [{ primaryId: 1 }, /where\.primaryId must be a string or null \(primaryId is the object's id, a string\)/],
    [{ n: { gt: null } }, /where\.n\.gt must be a number \(/],
    [{ s: { in: ["a", null] } }, /where\.s\.in\[1\] must be a string \(/],
    [{ n: { contains: "1" } }, /contains applies to text properties; n is a number property/],
    [{ j: { lt: [1] } }, /where\.j\.lt must be a string, number or boolean \(j is a json property\), not a list/],
    [{ s: {} }, /where\.s names no operator/],
    [{ s: { exists: "yes" } }, /where\.s\.exists must be true or false/],
    [{ f: "file_a" }, /where\.f: f is a file property; filter it with exists \(or eq\/ne null\)/],
    [{ n: { gt: Number.NaN } }, /where\.n\.gt must be a finite number, not NaN/],
    [{ s: { exists: undefined } }, /where\.s names no operator/],
    [{ constructor: "x" }, /where: "constructor" is not a property of thing/],
    [{ f: { contains: "a.pdf" } }, /where\.f\.contains: f is a file property/],
    [{ f: { in: [null] } }, /where\.f\.in\[0\]: f is a file property/],
  ])("%j", (w, message) => {
    expect(refused(w)).toThrow(message);
  });
});

describe("compileObjectQuery and Object.prototype's names", () => {
  it("answers 404 for an object type named like an Object.prototype member", () => {
    for (const objectTypeId of ["constructor", "toString", "__proto__", "hasOwnProperty"]) {
      expect(() => compileObjectQuery(project, { objectTypeId, where: { a: 1 } }), objectTypeId).toThrow(`Unknown object type "${objectTypeId}"`);
    }
  });
});
