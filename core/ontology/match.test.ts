/**
 * Property: the in-memory evaluator (`matchesWhere`, used by rules) selects exactly the objects the SQL
 * of `POST /api/objects/query` (`compileObjectQuery`) selects, for random objects and random conditions.
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

const project = { id: "p", objectTypes: { thing: { properties: { s: "string", n: "number", b: "boolean" } } }, identities: {} } as unknown as ProjectDefinition;
const opened: Database[] = [];
afterAll(async () => {
  for (const db of opened) await db.close();
});

const str = fc.constantFrom("", "a", "A", "ab", "Ab", "b", "ä", "É", "10", "2", "open", "OPEN", "overdue");
const num = fc.oneof(fc.constantFrom(-1, 0, 1, 2, 10, 1.5), fc.integer({ min: -5, max: 5 }));
const scalar = fc.oneof(str, num, fc.boolean(), fc.constant(null));
const props = fc.record({ s: fc.option(str, { nil: undefined }), n: fc.option(num, { nil: undefined }), b: fc.option(fc.boolean(), { nil: undefined }) }, { requiredKeys: [] });
const ops = fc.record(
  { eq: scalar, ne: scalar, gt: scalar, gte: scalar, lt: scalar, lte: scalar, in: fc.array(scalar, { minLength: 1, maxLength: 3 }), contains: str, exists: fc.boolean() },
  { requiredKeys: [] },
);
const condition: fc.Arbitrary<Condition> = fc.oneof(scalar, ops) as fc.Arbitrary<Condition>;
const where = fc.dictionary(fc.constantFrom("s", "n", "b", "primaryId"), condition, { maxKeys: 2 });

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
      { numRuns: 300 },
    );
  });
});
