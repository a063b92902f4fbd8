import type { SqlReader, SqlWriter } from "../store/db";
import type { ObjectRecord, OntologyChange } from "../sdk/context";

/** A row of the `objects` table (migration 001). */
export interface ObjectRow {
  object_type_id: string;
  primary_id: string;
  /** JSON object. */
  properties: string;
  version: number;
  created_at: string;
  updated_at: string;
}

/** An `objects` row as the API answers it (properties parsed). */
export function toRecord(r: ObjectRow): ObjectRecord {
  return { objectTypeId: r.object_type_id, primaryId: r.primary_id, properties: JSON.parse(r.properties), version: r.version, createdAt: r.created_at, updatedAt: r.updated_at };
}

/** Reads one object's row (undefined when there is none): through `reader`, a transaction's or the read connection. */
export function readObjectRow(reader: SqlReader, objectTypeId: string, primaryId: string): Promise<ObjectRow | undefined> {
  return reader.get<ObjectRow>("SELECT * FROM objects WHERE object_type_id = ? AND primary_id = ?", [objectTypeId, primaryId]);
}

const keyOf = (objectTypeId: string, primaryId: string) => `${objectTypeId}\u0000${primaryId}`;

/**
 * The objects that many ontology commits in ONE caller's transaction read and write (spec 2.1), read
 * in one statement and written in one or two (deletes, then an upsert), instead of a read and a write
 * per change: for a caller that applies a batch of handlers' changes together (an event schedule's
 * group commit, core/runtime/event-schedule-commit.ts). `OntologyStore.applyInTx` given a batch reads objects from it
 * and writes them into it; {@link ObjectBatch.flush} then writes every object the batch changed, in
 * the same transaction, before anything else in it may read them.
 *
 * What it answers is the transaction's view: the rows as they stood when first read, with the
 * batch's own writes applied. It is right only while nothing else writes those objects between the
 * reads and the flush, which holds inside one `Database.transaction` callback (callers never
 * interleave) as long as every write to them in that callback goes through the batch. A caller that
 * rolls back part of its work (a savepoint) must drop the batch, not flush it.
 */
export class ObjectBatch {
  /** By key: the row now (null: no such object now), for every object read or written. */
  private readonly rows = new Map<string, ObjectRow | null>();
  /** Keys whose row the batch changed, and whether the object existed when first read. */
  private readonly changed = new Map<string, boolean>();

  /**
   * Reads the objects that `changes` upsert, update or delete and the batch does not know yet, in
   * one statement.
   */
  async load(tx: SqlWriter, changes: Iterable<OntologyChange>): Promise<void> {
    const wanted = new Map<string, [string, string]>();
    for (const c of changes) {
      if (c.op !== "object.upsert" && c.op !== "object.update" && c.op !== "object.delete") continue;
      const key = keyOf(c.objectTypeId, c.primaryId);
      if (!this.rows.has(key)) wanted.set(key, [c.objectTypeId, c.primaryId]);
    }
    if (wanted.size === 0) return;
    const found = await tx.all<ObjectRow>("SELECT * FROM objects WHERE (object_type_id, primary_id) IN (SELECT value->>0, value->>1 FROM json_each(?))", [JSON.stringify([...wanted.values()])]);
    for (const key of wanted.keys()) this.rows.set(key, null);
    for (const row of found) this.rows.set(keyOf(row.object_type_id, row.primary_id), row);
  }

  /** The object as the transaction sees it now; reads it (one statement) when the batch does not know it yet. */
  async get(tx: SqlWriter, objectTypeId: string, primaryId: string): Promise<ObjectRecord | undefined> {
    const key = keyOf(objectTypeId, primaryId);
    let row = this.rows.get(key);
    if (row === undefined) {
      row = (await readObjectRow(tx, objectTypeId, primaryId)) ?? null;
      this.rows.set(key, row);
    }
    return row ? toRecord(row) : undefined;
  }

  /** Writes an object (created: version 1; updated: the version after the one read); `at` is an ISO timestamp. */
  put(objectTypeId: string, primaryId: string, properties: Record<string, unknown>, at: string): void {
    const [key, before] = this.change("put", objectTypeId, primaryId);
    this.rows.set(key, { object_type_id: objectTypeId, primary_id: primaryId, properties: JSON.stringify(properties), version: before ? before.version + 1 : 1, created_at: before ? before.created_at : at, updated_at: at });
  }

  /** Deletes an object. */
  delete(objectTypeId: string, primaryId: string): void {
    const [key] = this.change("delete", objectTypeId, primaryId);
    this.rows.set(key, null);
  }

  /**
   * Marks an object changed (remembering whether it existed when first read) and answers its key and
   * its row before this change.
   * @throws {Error} when the batch has not read the object (a caller's bug: changes read before they write)
   */
  private change(op: string, objectTypeId: string, primaryId: string): [string, ObjectRow | null] {
    const key = keyOf(objectTypeId, primaryId);
    const before = this.rows.get(key);
    if (before === undefined) throw new Error(`ObjectBatch.${op} before a read of ${objectTypeId} "${primaryId}"`);
    if (!this.changed.has(key)) this.changed.set(key, before !== null);
    return [key, before];
  }

  /**
   * Writes what the batch changed, in at most two statements: the deleted objects that existed, then
   * every object that exists now (an upsert with its version and timestamps). Then the batch is empty
   * of changes (what it read stays known).
   */
  async flush(tx: SqlWriter): Promise<void> {
    const deleted: Array<[string, string]> = [];
    const written: Array<[string, string, string, number, string, string]> = [];
    for (const [key, existed] of this.changed) {
      const row = this.rows.get(key)!;
      if (row) written.push([row.object_type_id, row.primary_id, row.properties, row.version, row.created_at, row.updated_at]);
      else if (existed) deleted.push(key.split("\u0000") as [string, string]);
    }
    this.changed.clear();
    if (deleted.length) await tx.run("DELETE FROM objects WHERE (object_type_id, primary_id) IN (SELECT value->>0, value->>1 FROM json_each(?))", [JSON.stringify(deleted)]);
    if (written.length) {
      await tx.run(
        "INSERT INTO objects (object_type_id, primary_id, properties, version, created_at, updated_at) SELECT value->>0, value->>1, value->>2, value->>3, value->>4, value->>5 FROM json_each(?) WHERE true " +
          "ON CONFLICT (object_type_id, primary_id) DO UPDATE SET properties = excluded.properties, version = excluded.version, created_at = excluded.created_at, updated_at = excluded.updated_at",
        [JSON.stringify(written)],
      );
    }
  }
}
