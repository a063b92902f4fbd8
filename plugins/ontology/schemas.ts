import * as v from "valibot";
import { dateSchema, propertyDef, timestampSchema } from "../../core/plugin-api";

type Declared = Record<string, Parameters<typeof propertyDef>[0]>;

/** The project parts the write schemas are built from (a `ProjectDefinition` fits). */
export interface WriteSchemaSource {
  objectTypes: Record<string, { properties: Declared }>;
  linkTypes?: Record<string, { source: string; target: string; properties?: Declared }>;
  telemetry?: Record<string, { objectTypeId: string }>;
}

const nonEmpty = v.pipe(v.string(), v.minLength(1));
const version = v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(Number.MAX_SAFE_INTEGER), v.description("The object's `version` this change was based on; another stored version is 409 `conflict` with `details.currentVersion`"));

/** The schema of one property value as the ontology validator accepts it; `undefined` for `file` (not writable here). */
function valueSchema(type: string): v.GenericSchema | undefined {
  switch (type) {
    case "string":
      return v.string();
    case "number":
      return v.number();
    case "integer":
      return v.pipe(v.number(), v.integer(), v.minValue(Number.MIN_SAFE_INTEGER), v.maxValue(Number.MAX_SAFE_INTEGER));
    case "boolean":
      return v.boolean();
    case "date":
      return dateSchema();
    case "datetime":
      return timestampSchema();
    case "json":
      return v.unknown();
    default:
      return undefined;
  }
}

/**
 * The `properties` of a create (`creating`: required properties present and not null) or of an update
 * (every property optional; `null` clears an optional one). `file` properties are left out: they are
 * set by connector code, which holds the uploads (spec 2.6).
 */
function propertiesSchema(declared: Declared, creating: boolean, of: string) {
  const entries: Record<string, v.GenericSchema> = {};
  const files: string[] = [];
  for (const [name, d] of Object.entries(declared)) {
    const def = propertyDef(d);
    const value = valueSchema(def.type);
    if (!value) {
      files.push(name);
      continue;
    }
    if (def.required) entries[name] = creating ? value : v.optional(value);
    else entries[name] = v.optional(v.nullable(value));
  }
  // an unknown key's issue has `expected: "never"` and the key as `input`; the message says what it is
  const message = (issue: v.BaseIssue<unknown>) => {
    if (issue.expected !== "never") return `properties must be an object of ${of}'s properties`;
    const key = String(issue.input);
    if (files.includes(key)) return `${key} is a file property of ${of}: connector code sets it (ctx.writes with an uploaded file's reference { id: "file_…" }), not a direct write`;
    return `"${key}" is not a writable property of ${of} (its properties: ${Object.keys(entries).join(", ") || "none"})`;
  };
  return v.strictObject(entries, message);
}

/**
 * The body of `POST /api/ontology/writes` for a project: `{ changes: [...] }` (1 to 500), each change
 * a variant on `op`, then on the object type, link type or telemetry property, with the properties
 * the project declares (spec 2.1). A request this schema accepts is answered 200, 403, 404 or 409;
 * what it refuses is 400.
 */
export function writeBodyFor(project: WriteSchemaSource) {
  const types = Object.entries(project.objectTypes);
  const object = (op: string, extra: (id: string, declared: Declared) => Record<string, v.GenericSchema>) =>
    v.variant("objectTypeId", types.map(([id, t]) => v.strictObject({ op: v.literal(op), objectTypeId: v.literal(id), primaryId: nonEmpty, ...extra(id, t.properties) })) as any);
  const options: any[] = [
    object("object.create", (id, p) => ({ properties: propertiesSchema(p, true, id) })),
    object("object.update", (id, p) => ({ properties: propertiesSchema(p, false, id), expectedVersion: v.optional(version) })),
    object("object.delete", () => ({ expectedVersion: v.optional(version) })),
  ];
  const links = Object.entries(project.linkTypes ?? {}).filter(([, l]) => Object.values(l.properties ?? {}).every((d) => propertyDef(d).type !== "file"));
  const link = (op: string, withProperties: boolean) =>
    v.variant("linkId", links.map(([id, l]) => v.strictObject({
      op: v.literal(op), linkId: v.literal(id), sourceTypeId: v.literal(l.source), sourceId: nonEmpty, targetTypeId: v.literal(l.target), targetId: nonEmpty,
      ...(withProperties ? { properties: v.optional(propertiesSchema(l.properties ?? {}, false, `link ${id}`)) } : {}),
    })) as any);
  if (links.length) options.push(link("link.upsert", true), link("link.delete", false));
  const telemetry = Object.entries(project.telemetry ?? {}).filter(([, t]) => project.objectTypes[t.objectTypeId]);
  if (telemetry.length) {
    options.push(v.variant("propertyId", telemetry.map(([id, t]) => v.strictObject({
      op: v.literal("telemetry.append"), objectTypeId: v.literal(t.objectTypeId), objectId: nonEmpty, propertyId: v.literal(id),
      value: v.number(), unit: v.optional(v.string()), at: v.optional(timestampSchema()),
    })) as any));
  }
  return v.strictObject({
    changes: v.pipe(v.array(v.variant("op", options as any)), v.minLength(1), v.maxLength(500), v.description("Changes applied in order as one write (one commitId, commitOrdinal 0..n)")),
  });
}
