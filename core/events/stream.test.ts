/** The SQLite stream's JSON reads (GET /api/events) against its object reads, from memory and from SQLite. */
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { Database } from "../store/db";
import { SqliteEventStream, readEventsJson, type StreamQuery } from "./stream";
import type { DomainEventEnvelope } from "./catalog";
import { tempDir } from "../../test/helpers-fs";

const opened: Database[] = [];
afterEach(async () => {
  for (const db of opened.splice(0)) await db.close();
});

const envelopes = (n: number): DomainEventEnvelope[] =>
  Array.from({ length: n }, (_, i) =>
    i % 3 === 0
      ? { id: `evt_s${i}`, schemaVersion: 1, projectId: "p", occurredAt: "2026-01-01T00:00:00.000Z", type: "schedule.triggered", topic: "schedules", partitionKey: "s", payload: { scheduleId: "s", occurrenceAt: `${i}`, triggeredAt: "t", occurrenceKey: `k${i}`, note: 'quotes " and \\ and ünïcödé 🎉' } }
      : { id: `evt_a${i}`, schemaVersion: 1, projectId: "p", occurredAt: "2026-01-01T00:00:00.000Z", type: i % 3 === 1 ? "action.requested" : "action.completed", topic: "actions", partitionKey: `r${i}`, payload: { actionId: "diagnostics.noop", runId: `r${i % 2}`, finishedAt: "t" }, correlationId: "c", metadata: { nested: { list: [1, 2] } } },
  );

describe("SqliteEventStream.readJson", () => {
  it("answers the JSON text of exactly what read answers, from the in-memory tail and from SQLite", async () => {
    const file = path.join(tempDir("svc-stream-"), "svc.db");
    const db = await Database.open(file);
    opened.push(db);
    const writer = await SqliteEventStream.open(db);
    await writer.append(envelopes(40));
    const fresh = await SqliteEventStream.open(db); // empty tail: every read goes to SQLite
    const [, third] = await writer.read({ limit: 3 });
    const queries: StreamQuery[] = [
      { limit: 1000 },
      { limit: 7, afterCursor: third!.cursor },
      { limit: 1000, topics: ["actions"], runId: "r1" },
      { limit: 1000, permissions: ["view:topic:schedules"] },
      { limit: 5, types: ["action.completed"], afterCursor: third!.cursor, permissions: ["run:action:diagnostics.noop"] },
    ];
    for (const stream of [writer, fresh]) {
      for (const q of queries) {
        const objects = await stream.read(q);
        const texts = await readEventsJson(stream, q);
        expect(objects.length).toBeGreaterThan(0);
        expect(texts.map((t) => JSON.parse(t))).toEqual(objects);
      }
    }
    // a stream without readJson (a broker stream may lack it) is served by serializing read
    const plain = { read: (q: StreamQuery) => fresh.read(q) } as unknown as SqliteEventStream;
    expect((await readEventsJson(plain, queries[2]!)).map((t) => JSON.parse(t))).toEqual(await fresh.read(queries[2]!));
  });
});
