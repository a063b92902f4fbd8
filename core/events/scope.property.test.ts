/**
 * Property: for random permission sets and random writes, a scoped read of the stream (the path both
 * GET /api/events and /ws/events use) never shows an event outside the caller's scope, and shows every
 * event inside it. The oracle below is written from spec 5 independently of core's eventPermissions.
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
import type { OntologyChange } from "../sdk/context";
import type { StoredDomainEvent } from "../events/catalog";
import { sandboxProject } from "../../sandbox/project";
import { tempDir } from "../../test/helpers-fs";
import { Metrics } from "../metrics";

const PERMISSIONS = ["view:object:customer", "view:object:invoice", "run:action:diagnostics.noop", "run:workflow:invoice-review", "view:topic:schedules", "edit:object"] as const;
const opened: Database[] = [];
afterAll(async () => {
  for (const db of opened) await db.close();
});

/** Spec 5: visibility follows the subject; link events need both endpoint types; no grant reads everything. */
function oracle(e: StoredDomainEvent, perms: ReadonlySet<string>): boolean {
  const p = e.payload as Record<string, any>;
  const view = (type: string) => perms.has(`view:object:${type}`);
  if (e.topic === "objects" || e.topic === "telemetry") return view(p.objectTypeId);
  if (e.topic === "links") return view(p.sourceTypeId) && view(p.targetTypeId);
  if (e.topic === "actions") return p.subject ? view(p.subject.objectTypeId) : perms.has(`run:action:${p.actionId}`);
  if (e.topic === "workflows") return perms.has(`run:workflow:${p.workflowId}`);
  return perms.has(`view:topic:${e.topic}`);
}

const id = fc.constantFrom("a", "b", "c");
const change: fc.Arbitrary<OntologyChange> = fc.oneof(
  id.map((i) => ({ op: "object.upsert", objectTypeId: "customer", primaryId: `cus_${i}`, properties: { name: `C ${i}` } }) as OntologyChange),
  fc.tuple(id, id).map(([i, c]) => ({ op: "object.upsert", objectTypeId: "invoice", primaryId: `inv_${i}`, properties: { number: i, customerId: `cus_${c}`, amount: 1, currency: "EUR", status: "open" } }) as OntologyChange),
  fc.tuple(id, id).map(([i, c]) => ({ op: "link.upsert", sourceTypeId: "invoice", sourceId: `inv_${i}`, linkId: "billedTo", targetTypeId: "customer", targetId: `cus_${c}` }) as OntologyChange),
  id.map((i) => ({ op: "telemetry.append", objectTypeId: "customer", objectId: `cus_${i}`, propertyId: "apiCalls", value: 1 }) as OntologyChange),
);
const otherEvent = fc.oneof(
  id.map((i) => ({ type: "schedule.triggered" as const, payload: { scheduleId: "s", occurrenceAt: new Date(Date.UTC(2026, 0, 1) + i.charCodeAt(0) * 1000).toISOString(), triggeredAt: new Date(Date.UTC(2026, 0, 1)).toISOString(), occurrenceKey: `k${i}${Math.random()}` } })),
  id.map((i) => ({ type: "action.requested" as const, payload: { actionId: "diagnostics.noop", runId: `r${i}`, params: {} } })),
  id.map((i) => ({ type: "action.requested" as const, payload: { actionId: "invoice.approve", runId: `r${i}`, params: {}, subject: { kind: "object", objectTypeId: "invoice", primaryId: `inv_${i}` } } })),
  id.map((i) => ({ type: "workflow.run.queued" as const, payload: { workflowId: "invoice-review", runId: `w${i}` } })),
);

describe("event scope (property)", () => {
  it("no scoped read shows an event outside the caller's scope, and none inside it is missing", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.oneof(change.map((c) => ({ kind: "write" as const, changes: [c] })), otherEvent.map((e) => ({ kind: "append" as const, e }))), { minLength: 1, maxLength: 25 }), fc.array(fc.subarray([...PERMISSIONS]), { minLength: 1, maxLength: 4 }), async (ops, permissionSets) => {
        const db = await Database.open(path.join(tempDir("svc-prop-"), "svc.db"));
        opened.push(db);
        const stream = await SqliteEventStream.open(db);
        const log = pino({ level: "silent" });
        const project = new ProjectRegistry(sandboxProject);
        const events = new EventLog(db, new Outbox(db, stream, log), stream, project, log, new Metrics());
        const ontology = new OntologyStore(db, events, project, new FileStore(db, await LocalBlobStore.open(path.join(path.dirname(db.file), "blobs"))));
        for (const op of ops) {
          if (op.kind === "write") await ontology.commit(op.changes, { origin: { kind: "runtime" }, correlationId: "prop" }).catch(() => undefined);
          else await events.append([op.e]);
        }
        const all = await events.read({ limit: 1000 });
        for (const perms of permissionSets) {
          const set = new Set<string>(perms);
          const scoped: StoredDomainEvent[] = [];
          let cursor: string | undefined;
          for (;;) {
            const page = await events.read({ afterCursor: cursor, limit: 3, permissions: perms });
            if (page.length === 0) break;
            scoped.push(...page);
            cursor = page[page.length - 1]!.cursor;
          }
          expect(scoped.every((e) => oracle(e, set))).toBe(true);
          expect(scoped.map((e) => e.id)).toEqual(all.filter((e) => oracle(e, set)).map((e) => e.id));
        }
      }),
      { numRuns: 40 },
    );
  });
});
