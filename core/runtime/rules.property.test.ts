/**
 * Property: under random ontology writes (creates, updates that flip the condition, deletes, several
 * changes per commit) the rule events equal what a simple oracle computes per subject transition:
 * `rule.triggered` when a subject starts matching, `rule.resolved` when it stops (or is deleted), once
 * per transition, never twice in a row. The oracle tracks each object's properties itself and decides
 * the condition with plain comparisons (not with the engine's matcher).
 */
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import fc from "fast-check";
import pino from "pino";
import { Database } from "../store/db";
import { SqliteEventStream } from "../events/sqlite-stream";
import { Outbox } from "../events/outbox";
import { EventLog } from "../events/log";
import { ProjectRegistry } from "../project/registry";
import { OntologyStore } from "../ontology/store";
import { FileStore } from "../files/file-store";
import { LocalBlobStore } from "../files/local-blob-store";
import { Lifecycle } from "../lifecycle";
import { RuleEngine } from "./rules";
import { defineRule } from "../sdk/connector";
import type { OntologyChange } from "../sdk/context";
import type { ProjectDefinition } from "../sdk/project";
import type { Config } from "../config";
import { tempDir } from "../../test/helpers-fs";
import { Metrics } from "../metrics";

/** A project with one type and one rule: `item` with status "on" and n >= 5. */
const RULES_TEST_PROJECT = {
  id: "rules-test",
  objectTypes: { item: { properties: { status: "string", n: "number" } } },
  connectors: [{ id: "t", rules: { hot: defineRule({ objectTypeId: "item", where: { status: "on", n: { gte: 5 } } }) } }],
  identities: {},
} as unknown as ProjectDefinition;

const oracleMatches = (p: Record<string, unknown> | undefined) => p !== undefined && p.status === "on" && typeof p.n === "number" && p.n >= 5;

/** Opens the store, event log, ontology and rule engine over a fresh data dir (or `file`). */
async function openRules(file = path.join(tempDir("svc-rules-"), "svc.db")) {
  const db = await Database.open(file);
  const stream = await SqliteEventStream.open(db);
  const log = pino({ level: "silent" });
  const project = new ProjectRegistry(RULES_TEST_PROJECT);
  const events = new EventLog(db, new Outbox(db, stream, log), stream, project, log, new Metrics());
  const ontology = new OntologyStore(db, events, project, new FileStore(db, await LocalBlobStore.open(path.join(path.dirname(file), "blobs"))));
  const lifecycle = new Lifecycle();
  const engine = new RuleEngine(db, events, stream, project, lifecycle, log, { outboxRecoveryMs: 3_600_000 } as Config);
  const close = async () => {
    await engine.stop();
    await lifecycle.stopTimers();
    await db.close();
  };
  return { db, file, events, ontology, engine, close };
}

const closers: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const c of closers) await c();
});

const id = fc.constantFrom("i1", "i2", "i3", "i4");
const props = fc.record({ status: fc.constantFrom("on", "off"), n: fc.constantFrom(1, 5, 9) }, { requiredKeys: [] });
const change: fc.Arbitrary<OntologyChange> = fc.oneof(
  { weight: 4, arbitrary: fc.tuple(id, props).map(([i, p]) => ({ op: "object.upsert", objectTypeId: "item", primaryId: i, properties: p }) as OntologyChange) },
  { weight: 3, arbitrary: fc.tuple(id, props).map(([i, p]) => ({ op: "object.update", objectTypeId: "item", primaryId: i, properties: p }) as OntologyChange) },
  { weight: 2, arbitrary: id.map((i) => ({ op: "object.delete", objectTypeId: "item", primaryId: i }) as OntologyChange) },
);
const commit = fc.array(change, { minLength: 1, maxLength: 3 });

describe("rules (property)", () => {
  it("trigger and resolve once per subject transition under 1,000 random writes", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(commit, { minLength: 1000, maxLength: 1000 }), async (commits) => {
        const r = await openRules();
        closers.push(r.close);
        await r.engine.start(); // follows the stream while the writes go on
        const state = new Map<string, Record<string, unknown>>();
        const expected = new Map<string, string[]>();
        for (const changes of commits) {
          const ok = await r.ontology.commit(changes, { origin: { kind: "runtime" }, correlationId: "prop" }).then(() => true, () => false);
          if (!ok) continue;
          const before = new Map([...new Set(changes.map((c) => (c as { primaryId: string }).primaryId))].map((i) => [i, oracleMatches(state.get(i))]));
          for (const c of changes) {
            if (c.op === "object.delete") state.delete(c.primaryId);
            else if (c.op === "object.upsert" || c.op === "object.update") state.set(c.primaryId, { ...state.get(c.primaryId), ...c.properties });
          }
          for (const [i, was] of before) {
            const now = oracleMatches(state.get(i));
            if (now !== was) expected.set(i, [...(expected.get(i) ?? []), now ? "rule.triggered" : "rule.resolved"]);
          }
        }
        await r.engine.poke();
        const ruleEvents = (await r.events.read({ topics: ["rules"], limit: 1000 })).concat();
        for (let more = ruleEvents; more.length === 1000; ) {
          more = await r.events.read({ topics: ["rules"], limit: 1000, afterCursor: more.at(-1)!.cursor });
          ruleEvents.push(...more);
        }
        const actual = new Map<string, string[]>();
        for (const e of ruleEvents) {
          const p = e.payload as { ruleId: string; subject: { kind: string; objectTypeId: string; primaryId: string } };
          expect(p.ruleId).toBe("hot");
          expect(p.subject.kind).toBe("object");
          expect(e.origin).toEqual({ kind: "runtime", ruleId: "hot" });
          expect(e.actor).toBeUndefined();
          expect(e.correlationId).toBe("prop");
          actual.set(p.subject.primaryId, [...(actual.get(p.subject.primaryId) ?? []), e.type]);
        }
        expect([...expected.values()].flat().length).toBeGreaterThan(0);
        expect(Object.fromEntries(actual)).toEqual(Object.fromEntries(expected));
        const listed = await r.engine.list(() => true);
        expect(listed[0]!.triggered.map((t) => t.subject.primaryId).sort()).toEqual([...state].filter(([, p]) => oracleMatches(p)).map(([i]) => i).sort());
        await r.close();
      }),
      { numRuns: 3 },
    );
  }, 120_000);

  it("a restart mid-way neither skips nor repeats a commit", async () => {
    const dir = tempDir("svc-rules-restart-");
    const file = path.join(dir, "svc.db");
    const write = (r: Awaited<ReturnType<typeof openRules>>, i: string, status: string) => r.ontology.commit([{ op: "object.upsert", objectTypeId: "item", primaryId: i, properties: { status, n: 9 } }], { origin: { kind: "runtime" }, correlationId: "restart" });
    const first = await openRules(file);
    for (let k = 0; k < 10; k++) await write(first, `i${k % 3}`, k % 2 ? "off" : "on");
    // evaluate part of the backlog (two small batches), then stop as if the process died
    expect(await first.engine.step(3)).toBe(2); // a full batch holds back its last commit, which may continue
    expect(await first.engine.step(3)).toBe(2); // a full batch holds back its last commit, which may continue
    const before = await first.events.read({ topics: ["rules"], limit: 1000 });
    await first.close();

    const second = await openRules(file);
    closers.push(second.close);
    await write(second, "i0", "off");
    await second.engine.start();
    const all = await second.events.read({ topics: ["rules"], limit: 1000 });
    expect(all.slice(0, before.length).map((e) => e.id)).toEqual(before.map((e) => e.id));
    // each object event caused at most one rule event, and every subject alternates
    const causes = all.map((e) => e.causationId);
    expect(new Set(causes).size).toBe(causes.length);
    const bySubject = new Map<string, string[]>();
    for (const e of all) {
      const key = (e.payload as any).subject.primaryId as string;
      bySubject.set(key, [...(bySubject.get(key) ?? []), e.type]);
    }
    // writes k = 0..9 alternate on/off (k odd = off) on subject i<k % 3>; then i0 off again changes nothing
    expect(Object.fromEntries(bySubject)).toEqual({
      i0: ["rule.triggered", "rule.resolved", "rule.triggered", "rule.resolved"],
      i1: ["rule.triggered", "rule.resolved"],
      i2: ["rule.triggered", "rule.resolved", "rule.triggered"],
    });
  });
});
