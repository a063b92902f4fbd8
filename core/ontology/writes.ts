import { inject, injectable } from "../di";
import { Database, type SqlWriter } from "../store/db";
import { EventLog } from "../events/log";
import { ProjectRegistry } from "../project/registry";
import type { Actor, DomainEventEnvelope } from "../events/catalog";
import type { LinkKey, OntologyChange } from "../sdk/context";
import { ApiError } from "../errors";
import { newId } from "../ids";
import { validateChanges } from "./validate";
import { OntologyStore } from "./store";

/**
 * One change of a direct write (spec 2.3 "runtime, the principal"; issue 14). `object.create` refuses
 * an object that exists (409), `object.update` and `object.delete` one that does not (404); both take
 * an optional `expectedVersion`, compared with the object's stored `version` before the write (409 on
 * a mismatch). Links and telemetry need their objects to exist (404).
 */
export type DirectChange =
  | { op: "object.create"; objectTypeId: string; primaryId: string; properties: Record<string, unknown> }
  | { op: "object.update"; objectTypeId: string; primaryId: string; properties: Record<string, unknown>; expectedVersion?: number }
  | { op: "object.delete"; objectTypeId: string; primaryId: string; expectedVersion?: number }
  | ({ op: "link.upsert"; properties?: Record<string, unknown> } & LinkKey)
  | ({ op: "link.delete" } & LinkKey)
  | { op: "telemetry.append"; objectTypeId: string; objectId: string; propertyId: string; value: number; unit?: string; at?: string };

/** The version of an object after a direct write (`null`: it no longer exists). */
export interface WrittenObject {
  objectTypeId: string;
  primaryId: string;
  version: number | null;
}

/** What a direct write answers: its one `commitId`, the envelopes it wrote (ordinals 0..n) and the objects' new versions. */
export interface DirectWriteResult {
  commitId: string;
  events: DomainEventEnvelope[];
  objects: WrittenObject[];
}

/** True for the changes that need `edit:object` (objects and links); telemetry needs `append:telemetry`. */
export function isObjectOrLinkChange(c: Pick<DirectChange, "op">): boolean {
  return !c.op.startsWith("telemetry.");
}

const keyOf = (objectTypeId: string, primaryId: string) => `${objectTypeId}\u0000${primaryId}`;

/** The store's change for a direct change. */
function toStoreChange(c: DirectChange): OntologyChange {
  switch (c.op) {
    case "object.create":
      return { op: "object.upsert", objectTypeId: c.objectTypeId, primaryId: c.primaryId, properties: c.properties };
    case "object.update":
      return { op: "object.update", objectTypeId: c.objectTypeId, primaryId: c.primaryId, properties: c.properties };
    case "object.delete":
      return { op: "object.delete", objectTypeId: c.objectTypeId, primaryId: c.primaryId };
    default:
      return c;
  }
}

/**
 * Direct ontology writes by principals (spec 2.3, 5; issue 14): a list of changes checked and
 * committed as ONE ontology write through {@link OntologyStore.applyInTx} (one `commitId`,
 * `commitOrdinal` 0..n), with `origin.kind` `runtime` and `actor` = the principal. Permissions are the
 * caller's business (the route checks `edit:object` / `append:telemetry` first).
 */
@injectable()
export class DirectWrites {
  constructor(
    @inject(Database) private readonly db: Database,
    @inject(EventLog) private readonly events: EventLog,
    @inject(OntologyStore) private readonly ontology: OntologyStore,
    @inject(ProjectRegistry) private readonly project: ProjectRegistry,
  ) {}

  /**
   * Checks every change against the object types, then, in one transaction, against the stored objects
   * (existence, expected versions), writes them and their events, and drains the outbox. A refused
   * change writes nothing.
   *
   * @throws {ApiError} invalid_request (400, `details.problems` as `changes[i]: …`) for changes that do
   *   not fit the object types; not_found (404, `details.index`) for an update, delete, link end or
   *   telemetry object that does not exist; conflict (409, `details: { index, objectTypeId, primaryId,
   *   expectedVersion, currentVersion }`) for a create of an existing object (`currentVersion` its
   *   version) or a stale `expectedVersion`
   */
  async write(changes: readonly DirectChange[], actor: Actor): Promise<DirectWriteResult> {
    const storeChanges = changes.map(toStoreChange);
    validateChanges(this.project.definition, storeChanges);
    const result = await this.db.transaction(async (tx) => {
      await this.check(tx, changes);
      const commit = await this.ontology.applyInTx(tx, storeChanges, { origin: { kind: "runtime" }, actor, correlationId: newId("write") });
      const objects: WrittenObject[] = [];
      const seen = new Set<string>();
      for (const c of changes) {
        if (!c.op.startsWith("object.") || !("primaryId" in c)) continue;
        const key = keyOf(c.objectTypeId, c.primaryId);
        if (seen.has(key)) continue;
        seen.add(key);
        const stored = await this.ontology.getObject(c.objectTypeId, c.primaryId, tx);
        objects.push({ objectTypeId: c.objectTypeId, primaryId: c.primaryId, version: stored?.version ?? null });
      }
      return { commitId: commit.commitId, events: commit.events, objects };
    });
    await this.events.drain();
    return result;
  }

  /** Existence and version checks in order, seeing the effect of the write's earlier changes on existence. */
  private async check(tx: SqlWriter, changes: readonly DirectChange[]): Promise<void> {
    const overlay = new Map<string, boolean>();
    const stored = async (objectTypeId: string, primaryId: string) => (await this.ontology.getObject(objectTypeId, primaryId, tx))?.version;
    const exists = async (objectTypeId: string, primaryId: string) => overlay.get(keyOf(objectTypeId, primaryId)) ?? (await stored(objectTypeId, primaryId)) !== undefined;
    const missing = (index: number, objectTypeId: string, primaryId: string, what: string) =>
      new ApiError("not_found", `changes[${index}]: no ${objectTypeId} "${primaryId}" ${what}`, { index, objectTypeId, primaryId });
    for (const [index, c] of changes.entries()) {
      switch (c.op) {
        case "object.create": {
          if (await exists(c.objectTypeId, c.primaryId)) {
            const currentVersion = (await stored(c.objectTypeId, c.primaryId)) ?? null;
            throw new ApiError("conflict", `changes[${index}]: ${c.objectTypeId} "${c.primaryId}" already exists; use object.update`, { index, objectTypeId: c.objectTypeId, primaryId: c.primaryId, currentVersion });
          }
          overlay.set(keyOf(c.objectTypeId, c.primaryId), true);
          break;
        }
        case "object.update":
        case "object.delete": {
          if (!(await exists(c.objectTypeId, c.primaryId))) throw missing(index, c.objectTypeId, c.primaryId, c.op === "object.update" ? "to update" : "to delete");
          if (c.expectedVersion !== undefined) {
            const currentVersion = (await stored(c.objectTypeId, c.primaryId)) ?? null;
            if (currentVersion !== c.expectedVersion) {
              throw new ApiError("conflict", `changes[${index}]: ${c.objectTypeId} "${c.primaryId}" is at version ${currentVersion ?? "none (created in this write)"}, not ${c.expectedVersion}`, { index, objectTypeId: c.objectTypeId, primaryId: c.primaryId, expectedVersion: c.expectedVersion, currentVersion });
            }
          }
          if (c.op === "object.delete") overlay.set(keyOf(c.objectTypeId, c.primaryId), false);
          break;
        }
        case "link.upsert":
        case "link.delete": {
          if (c.op === "link.upsert") {
            if (!(await exists(c.sourceTypeId, c.sourceId))) throw missing(index, c.sourceTypeId, c.sourceId, "to link from");
            if (!(await exists(c.targetTypeId, c.targetId))) throw missing(index, c.targetTypeId, c.targetId, "to link to");
          }
          break;
        }
        case "telemetry.append": {
          if (!(await exists(c.objectTypeId, c.objectId))) throw missing(index, c.objectTypeId, c.objectId, "to append telemetry to");
          break;
        }
      }
    }
  }
}
