import { inject, injectable } from "../di";
import { Database, insertRows, type SqlReader, type SqlWriter } from "../store/db";
import { ProjectRegistry } from "../project/registry";
import { EventLog } from "../events/log";
import type { Actor, DomainEventEnvelope, Origin, PropertyChange } from "../events/catalog";
import type { ProjectDefinition } from "../sdk/project";
import type { ObjectPage, ObjectQuery, ObjectRecord, OntologyChange, OntologyWrites } from "../sdk/context";
import { ApiError } from "../errors";
import { newId, nowIso } from "../ids";
import { checkProperties, fileProperties, validateChanges } from "./validate";
import { FileStore } from "../files/file-store";
import { compileObjectQuery, encodePageToken } from "./query";
import { readObjectRow, toRecord, type ObjectBatch, type ObjectRow } from "./object-batch";

/**
 * A commit's row when its key is not looked up first: unkeyed, or one of the caller's `newKeys` (then
 * a key already there is left as it is). Rows `[commitId, idempotencyKey | null, correlationId, createdAt]`.
 */
/** A link's row as `object.delete` reads the links it takes with it. */
interface LinkRow {
  source_type_id: string;
  source_id: string;
  link_id: string;
  target_type_id: string;
  target_id: string;
  properties: string | null;
}
const LINK_COLUMNS = "source_type_id, source_id, link_id, target_type_id, target_id, properties";

const COMMIT_ROWS = insertRows<[string, string | null, string, string]>("commits", ["commit_id", "idempotency_key", "correlation_id", "created_at"], { onConflict: "ON CONFLICT DO NOTHING" });

/** Who and what a write is for: copied into every envelope of the commit (spec 2.3). */
export interface WriteContext {
  origin: Origin;
  /** The principal of a direct write; absent for actions and system code (spec 2.3 table). */
  actor?: Actor;
  /** Required on ontology facts: the execution's id. */
  correlationId: string;
  causationId?: string;
  /** Makes the write exactly-once: a second commit with the same key changes nothing (a commit of no changes records no key). */
  idempotencyKey?: string;
  /**
   * Idempotency keys the caller looked up itself in this transaction and found unused, and that no other
   * caller can write meanwhile (an event schedule's group commit): when the commit's key is one of them
   * it is recorded without a lookup of its own (a deferred statement of the group commit). The commit's
   * events carry no key of their own.
   */
  newKeys?: ReadonlySet<string>;
}

/** The result of a commit: its id and the envelopes it wrote (empty when it was a duplicate). */
export interface CommitResult {
  commitId: string;
  duplicate: boolean;
  events: DomainEventEnvelope[];
}

function diff(before: Record<string, unknown>, after: Record<string, unknown>): PropertyChange[] {
  const changes: PropertyChange[] = [];
  for (const key of new Set([...Object.keys(before), ...Object.keys(after)])) {
    const b = before[key];
    const a = after[key];
    if (JSON.stringify(b) === JSON.stringify(a)) continue;
    const change: PropertyChange = { property: key };
    if (b !== undefined) change.before = b;
    if (a !== undefined) change.after = a;
    changes.push(change);
  }
  return changes;
}

function merge(base: Record<string, unknown>, patch: Record<string, unknown>): Record<string, unknown> {
  const out = { ...base };
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = v;
  }
  return out;
}

/**
 * The one store API for ontology writes (spec 6.2): validates the changes, writes the rows and their
 * `object.*`, `link.*`, `telemetry.*` envelopes (one `commitId`, `commitOrdinal` 0..n,
 * `propertyChanges`) into the outbox in one transaction, and drains after commit.
 */
@injectable()
export class OntologyStore {
  private readonly project: ProjectDefinition;

  constructor(
    @inject(Database) private readonly db: Database,
    @inject(EventLog) private readonly events: EventLog,
    @inject(ProjectRegistry) registry: ProjectRegistry,
    @inject(FileStore) private readonly files: FileStore,
  ) {
    this.project = registry.definition;
    for (const d of registry.datasets()) if (d.definition.projection) this.projectedTypes.set(d.definition.projection.objectTypeId, d.id);
    for (const [id, type] of Object.entries(this.project.objectTypes)) {
      const names = fileProperties(type.properties);
      if (names.length) this.fileProps.set(id, names);
    }
  }

  /** Object types with `file` properties, and their names. */
  private readonly fileProps = new Map<string, string[]>();
  /** Object types a dataset projects into (spec 2.3 `projection`), and that dataset: only its projection writes them. */
  private readonly projectedTypes = new Map<string, string>();

  /**
   * Refuses writes to projection-owned objects from any other origin: object upserts, updates and
   * deletes of a projected type, and links whose source is one (telemetry stays allowed).
   * @throws {ApiError} conflict naming the type and the dataset, `details.index` the change
   */
  private checkOwnership(changes: readonly OntologyChange[], origin: Origin): void {
    if (this.projectedTypes.size === 0) return;
    changes.forEach((c, index) => {
      const type = c.op.startsWith("object.") ? (c as { objectTypeId: string }).objectTypeId : c.op.startsWith("link.") ? (c as { sourceTypeId: string }).sourceTypeId : undefined;
      const owner = type === undefined ? undefined : this.projectedTypes.get(type);
      if (owner === undefined || (origin.kind === "projection" && origin.datasetId === owner)) return;
      throw new ApiError("conflict", `objects of type ${type} are projected from dataset ${owner}; commit a new dataset version instead`, { index, objectTypeId: type, datasetId: owner });
    });
  }

  /**
   * Replaces each written file property value by the stored reference `{ id, name, contentType, size,
   * sha256 }` (so readers see what the file is) and keeps `file_references` in step, in the write's
   * transaction: the object holds the file at `/properties/<name>` (spec 4.3: files are read through
   * their owner).
   * @throws {ApiError} invalid_request when a named file does not exist
   */
  private async resolveFiles(tx: SqlWriter, objectTypeId: string, primaryId: string, properties: Record<string, unknown>): Promise<Record<string, unknown>> {
    const names = this.fileProps.get(objectTypeId)?.filter((n) => n in properties);
    if (!names?.length) return properties;
    const out = { ...properties };
    const owner = { kind: "object", id: `${objectTypeId}/${primaryId}` };
    for (const name of names) {
      const path = `/properties/${name}`;
      await this.files.removeReferences(tx, { ...owner, path });
      const value = properties[name] as { id: string } | null;
      if (value === null) continue;
      const file = await this.files.addReference(tx, value.id, { ...owner, path });
      out[name] = { id: file.id, name: file.name, contentType: file.contentType, size: file.size, sha256: file.sha256 };
    }
    return out;
  }

  /** Reads one object (committed data). */
  async getObject(objectTypeId: string, primaryId: string, reader: SqlReader = this.db): Promise<ObjectRecord | undefined> {
    const row = await readObjectRow(reader, objectTypeId, primaryId);
    return row ? toRecord(row) : undefined;
  }

  /** Runs an object query (see {@link compileObjectQuery}); answers one page. */
  async query(q: ObjectQuery): Promise<ObjectPage> {
    const compiled = compileObjectQuery(this.project, q);
    const rows = await this.db.all<ObjectRow & { sort_value: string | number | null }>(compiled.sql, compiled.params);
    const page = rows.slice(0, compiled.pageSize);
    const result: ObjectPage = { data: page.map(toRecord) };
    if (rows.length > compiled.pageSize) {
      const last = page[page.length - 1]!;
      result.nextPageToken = encodePageToken(compiled.hash, last.sort_value, last.primary_id);
    }
    return result;
  }

  /**
   * Validates and commits `changes` in a new transaction, then drains the outbox.
   * @throws {ApiError} invalid_request when a change is invalid or an update targets a missing object;
   *   nothing is written then
   */
  async commit(changes: readonly OntologyChange[], ctx: WriteContext): Promise<CommitResult> {
    validateChanges(this.project, changes);
    const result = await this.db.transaction((tx) => this.applyInTx(tx, changes, ctx));
    await this.events.drain();
    return result;
  }

  /**
   * Applies already-validated changes inside the caller's transaction (used when a write must commit
   * together with other rows, such as an action run's completion). The caller drains after commit.
   * @param batch when given, objects are read from it and written into it (the caller flushes it in
   *   the same transaction: see {@link ObjectBatch}); links, telemetry and file references are written
   *   as always
   * @throws {ApiError} conflict when a change writes objects a dataset projection owns and the origin is
   *   not that projection (nothing written); not_found / invalid_request as the changes go
   */
  async applyInTx(tx: SqlWriter, changes: readonly OntologyChange[], ctx: WriteContext, batch?: ObjectBatch): Promise<CommitResult> {
    this.checkOwnership(changes, ctx.origin);
    const commitId = newId("commit");
    const now = nowIso();
    // a commit with no changes records no key: it has nothing to repeat (a webhook or schedule handler
    // that writes nothing then costs its transaction no statement)
    if (ctx.idempotencyKey !== undefined && !ctx.newKeys?.has(ctx.idempotencyKey) && changes.length) {
      const { changes: inserted } = await tx.run("INSERT INTO commits (commit_id, idempotency_key, correlation_id, created_at) VALUES (?, ?, ?, ?) ON CONFLICT (idempotency_key) DO NOTHING", [commitId, ctx.idempotencyKey, ctx.correlationId, now]);
      if (inserted === 0) return { commitId, duplicate: true, events: [] };
    } else if (changes.length) {
      // nothing reads this row back in the transaction: it joins the group's deferred statements
      tx.defer(COMMIT_ROWS, [[commitId, ctx.idempotencyKey ?? null, ctx.correlationId, now]]);
    }
    /** The object as this transaction sees it: through the caller's batch when it gave one. */
    const existingObject = (objectTypeId: string, primaryId: string) => (batch ? batch.get(tx, objectTypeId, primaryId) : this.getObject(objectTypeId, primaryId, tx));
    const envelopes: DomainEventEnvelope[] = [];
    const emit = (type: DomainEventEnvelope["type"], payload: Record<string, unknown>) =>
      // the context's fields named, not spread (`{ ...ctx, … }` costs ~0.8 µs per added property on Node 20)
      envelopes.push(this.events.envelope({ type, payload, origin: ctx.origin, actor: ctx.actor, correlationId: ctx.correlationId, causationId: ctx.causationId, commitId, commitOrdinal: envelopes.length }));

    for (const c of changes) {
      switch (c.op) {
        case "object.upsert":
        case "object.update": {
          const existing = await existingObject(c.objectTypeId, c.primaryId);
          if (!existing && c.op === "object.update") throw new ApiError("not_found", `No ${c.objectTypeId} "${c.primaryId}" to update`);
          const before = existing?.properties ?? {};
          const after = merge(before, await this.resolveFiles(tx, c.objectTypeId, c.primaryId, c.properties));
          const changed = diff(before, after);
          if (!existing) {
            const problems = checkProperties(this.project.objectTypes[c.objectTypeId]!.properties, after, "properties", true, c.objectTypeId);
            if (problems.length) throw new ApiError("invalid_request", `Invalid ${c.objectTypeId} "${c.primaryId}": ${problems[0]}`, { problems });
            if (batch) batch.put(c.objectTypeId, c.primaryId, after, now);
            else await tx.run("INSERT INTO objects (object_type_id, primary_id, properties, version, created_at, updated_at) VALUES (?, ?, ?, 1, ?, ?)", [c.objectTypeId, c.primaryId, JSON.stringify(after), now, now]);
            emit("object.created", { objectTypeId: c.objectTypeId, primaryId: c.primaryId, properties: after, propertyChanges: changed });
          } else if (changed.length) {
            if (batch) batch.put(c.objectTypeId, c.primaryId, after, now);
            else await tx.run("UPDATE objects SET properties = ?, version = version + 1, updated_at = ? WHERE object_type_id = ? AND primary_id = ?", [JSON.stringify(after), now, c.objectTypeId, c.primaryId]);
            emit("object.updated", { objectTypeId: c.objectTypeId, primaryId: c.primaryId, properties: after, propertyChanges: changed });
          }
          break;
        }
        case "object.delete": {
          const existing = await existingObject(c.objectTypeId, c.primaryId);
          if (!existing) break;
          // its links go with it, both ways, each with its link.deleted before the object.deleted: no link
          // outlives one of its ends (nor comes back with an object made again under the same id)
          const ends = [c.objectTypeId, c.primaryId, c.objectTypeId, c.primaryId];
          const links = await tx.all<LinkRow>(`SELECT ${LINK_COLUMNS} FROM links WHERE (source_type_id = ? AND source_id = ?) OR (target_type_id = ? AND target_id = ?) ORDER BY source_type_id, source_id, link_id, target_type_id, target_id`, ends);
          if (links.length) {
            await tx.run("DELETE FROM links WHERE (source_type_id = ? AND source_id = ?) OR (target_type_id = ? AND target_id = ?)", ends);
            for (const l of links) {
              const ids = { sourceTypeId: l.source_type_id, sourceId: l.source_id, linkId: l.link_id, targetTypeId: l.target_type_id, targetId: l.target_id };
              emit("link.deleted", { ...ids, propertyChanges: diff(l.properties ? JSON.parse(l.properties) : {}, {}) });
            }
          }
          if (this.fileProps.has(c.objectTypeId)) await this.files.removeReferences(tx, { kind: "object", id: `${c.objectTypeId}/${c.primaryId}` });
          if (batch) batch.delete(c.objectTypeId, c.primaryId);
          else await tx.run("DELETE FROM objects WHERE object_type_id = ? AND primary_id = ?", [c.objectTypeId, c.primaryId]);
          emit("object.deleted", { objectTypeId: c.objectTypeId, primaryId: c.primaryId, propertyChanges: diff(existing.properties, {}) });
          break;
        }
        case "link.upsert":
        case "link.delete": {
          const key = [c.sourceTypeId, c.sourceId, c.linkId, c.targetTypeId, c.targetId];
          const ids = { sourceTypeId: c.sourceTypeId, sourceId: c.sourceId, linkId: c.linkId, targetTypeId: c.targetTypeId, targetId: c.targetId };
          const row = await tx.get<{ properties: string | null }>("SELECT properties FROM links WHERE source_type_id = ? AND source_id = ? AND link_id = ? AND target_type_id = ? AND target_id = ?", key);
          const before = row?.properties ? JSON.parse(row.properties) : {};
          if (c.op === "link.delete") {
            if (!row) break;
            await tx.run("DELETE FROM links WHERE source_type_id = ? AND source_id = ? AND link_id = ? AND target_type_id = ? AND target_id = ?", key);
            emit("link.deleted", { ...ids, propertyChanges: diff(before, {}) });
            break;
          }
          const after = merge(before, c.properties ?? {});
          const changed = diff(before, after);
          if (!row) {
            await tx.run("INSERT INTO links (source_type_id, source_id, link_id, target_type_id, target_id, properties, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)", [...key, Object.keys(after).length ? JSON.stringify(after) : null, now, now]);
            emit("link.created", { ...ids, ...(Object.keys(after).length ? { properties: after } : {}), propertyChanges: changed });
          } else if (changed.length) {
            await tx.run("UPDATE links SET properties = ?, updated_at = ? WHERE source_type_id = ? AND source_id = ? AND link_id = ? AND target_type_id = ? AND target_id = ?", [JSON.stringify(after), now, ...key]);
            emit("link.updated", { ...ids, properties: after, propertyChanges: changed });
          }
          break;
        }
        case "telemetry.append": {
          const at = c.at ? new Date(c.at).toISOString() : now;
          const unit = c.unit ?? this.project.telemetry?.[c.propertyId]?.unit;
          await tx.run("INSERT INTO telemetry (object_type_id, object_id, property_id, value, unit, at) VALUES (?, ?, ?, ?, ?, ?)", [c.objectTypeId, c.objectId, c.propertyId, JSON.stringify(c.value), unit ?? null, at]);
          emit("telemetry.appended", { objectTypeId: c.objectTypeId, objectId: c.objectId, propertyId: c.propertyId, value: c.value, ...(unit ? { unit } : {}), at });
          break;
        }
      }
    }
    await this.events.writeInTx(tx, envelopes, { newKeys: ctx.newKeys });
    return { commitId, duplicate: false, events: envelopes };
  }
}

/**
 * A buffer implementing {@link OntologyWrites}: handlers call it freely; the runtime commits
 * `changes` at the end (or discards them when the handler throws).
 */
export class WriteBuffer implements OntologyWrites {
  readonly changes: OntologyChange[] = [];
  /** Set by {@link WriteBuffer.close}: what a write after it does instead of buffering (it drops the change). */
  private closedBy: ((change: OntologyChange) => void) | undefined;
  private add(change: OntologyChange): void {
    if (this.closedBy) this.closedBy(change);
    else this.changes.push(change);
  }
  readonly objects: OntologyWrites["objects"] = {
    // the properties copied (one level): a handler that changes its object after the call changes nothing buffered
    upsert: (objectTypeId, primaryId, properties) => this.add({ op: "object.upsert", objectTypeId, primaryId, properties: { ...properties } }),
    update: (objectTypeId, primaryId, properties) => this.add({ op: "object.update", objectTypeId, primaryId, properties: { ...properties } }),
    delete: (objectTypeId, primaryId) => this.add({ op: "object.delete", objectTypeId, primaryId }),
  };
  readonly links: OntologyWrites["links"] = {
    upsert: (link) => this.add({ op: "link.upsert", ...link }),
    delete: (link) => this.add({ op: "link.delete", ...link }),
  };
  readonly telemetry: OntologyWrites["telemetry"] = {
    append: (point) => this.add({ op: "telemetry.append", ...point }),
  };

  /**
   * Ends buffering: `changes` holds what was written until now and no more. A write after this (a handler's
   * floating promise or timer, after the handler returned) is handed to `late` and dropped: it was
   * neither validated nor committed with the rest, and committing it later would skip both.
   */
  close(late: (change: OntologyChange) => void): void {
    this.closedBy = late;
  }
}
