import * as v from "valibot";
import { DirectWrites, can, definePlugin, isObjectOrLinkChange, requirePermission, type DirectChange } from "../../core/plugin-api";
import { writeBodyFor } from "./schemas";

const WrittenEventSchema = v.looseObject({
  id: v.string(),
  type: v.string(),
  topic: v.string(),
  commitId: v.string(),
  commitOrdinal: v.number(),
  origin: v.looseObject({ kind: v.literal("runtime") }),
  actor: v.object({ type: v.picklist(["user", "serviceAccount"]), id: v.string() }),
  payload: v.record(v.string(), v.unknown()),
});

const WriteResultSchema = v.object({
  commitId: v.pipe(v.string(), v.description("Groups every event of this write (spec 2.3)")),
  events: v.pipe(v.array(WrittenEventSchema), v.description("The events written, `commitOrdinal` 0..n; empty changes (an update to the same values) write none")),
  objects: v.pipe(v.array(v.object({ objectTypeId: v.string(), primaryId: v.string(), version: v.nullable(v.number()) })), v.description("Each written object's version after the write (null: deleted); pass it as `expectedVersion` next time")),
});

/**
 * Direct ontology writes (spec 2.3 "runtime, the principal", 5; issue 14): `POST /api/ontology/writes`
 * with `{ changes }` committed as one write by {@link DirectWrites}. Object and link changes need
 * `edit:object`, telemetry appends `append:telemetry` (403 naming the missing permission, checked
 * before anything is read or written).
 */
export default definePlugin({
  name: "ontology",
  deps: { writes: DirectWrites },
  setup({ routes, project }, { writes }) {
    routes.add({
      method: "POST",
      path: "/api/ontology/writes",
      summary: "Write objects, links and telemetry",
      description: [
        "Applies `changes` in order as ONE ontology write: one `commitId`, events with `commitOrdinal` 0..n, `origin.kind` `runtime` and `actor` = the caller (spec 2.3). One refused change writes nothing.",
        "Ops: `object.create` (required properties; 409 `conflict` when it exists), `object.update` (partial; `null` clears an optional property; 404 when missing), `object.delete` (404 when missing), `link.upsert`, `link.delete`, `telemetry.append` (its object must exist, 404 otherwise).",
        "Optimistic concurrency: `expectedVersion` on `object.update`/`object.delete` is compared with the object's stored `version`; a mismatch is 409 `conflict` with `details.currentVersion` and `details.index`.",
        "Needs `edit:object` for object and link changes and `append:telemetry` for telemetry appends. File properties are not writable here.",
      ].join("\n\n"),
      tags: ["objects"],
      auth: "bearer",
      body: writeBodyFor(project.definition),
      responses: {
        200: { description: "Committed", schema: WriteResultSchema },
        400: { description: "`invalid_request`: the body does not match this operation's schema (unknown type, undeclared property, wrong value type, missing required property on create; `details.issues` names `body.changes.<index>…`) or is not valid JSON" },
        403: { description: "`forbidden`: the identity lacks `edit:object` (object and link changes) or `append:telemetry` (telemetry appends), named in `details.permission`; nothing is written" },
        404: { description: "`not_found`: an update or delete names an object that does not exist, or a link end or telemetry object does not exist (`details.index`); nothing is written" },
        409: { description: "`conflict`: `object.create` of an existing object, or `expectedVersion` is not the stored version (`details`: `index`, `objectTypeId`, `primaryId`, `expectedVersion`, `currentVersion`); nothing is written" },
      },
      handler: ({ principal, body }) => {
        const changes = body.changes as DirectChange[];
        if (changes.some(isObjectOrLinkChange)) requirePermission(principal!, can.edit());
        if (changes.some((c) => !isObjectOrLinkChange(c))) requirePermission(principal!, can.appendTelemetry());
        return writes.write(changes, { type: principal!.type, id: principal!.id });
      },
    });
  },
});
