import * as v from "valibot";
import type { JsonSchema } from "@valibot/to-json-schema";

/**
 * Shared valibot schemas for route definitions whose JSON Schema (in `/docs/openapi.json`) must say
 * exactly what they accept. @valibot/to-json-schema documents a pipe only up to its first
 * transformation (`typeMode: "input"`), so a query parameter such as `string → regex → transform(Number)
 * → minValue(1)` would be documented as a bare string: its bounds would be enforced but not documented.
 * The helpers here carry the JSON Schema of what they accept with them ({@link documentedAs}), and the
 * OpenAPI generator (core/http/routes.ts) uses it.
 */

/** The metadata key under which {@link documentedAs} stores a JSON Schema. */
export const JSON_SCHEMA_METADATA_KEY = "svc:jsonSchema";

/**
 * A valibot metadata action carrying the JSON Schema that documents the pipe it is in. Place it after
 * the validations that the JSON Schema describes and before the first transformation: the OpenAPI
 * generator replaces whatever it derived from the pipe so far with `jsonSchema` (see
 * {@link documentedJsonSchema}). It validates nothing itself.
 *
 * @param jsonSchema the JSON Schema (draft 2020-12) of the values the pipe accepts
 * @returns a metadata action for a pipe of `TInput` values
 * @example v.pipe(v.string(), v.regex(/^\d+$/), documentedAs({ type: "integer", minimum: 0 }), v.transform(Number))
 */
export function documentedAs<TInput>(jsonSchema: JsonSchema): v.MetadataAction<TInput, { readonly [JSON_SCHEMA_METADATA_KEY]: JsonSchema }> {
  return v.metadata<TInput, { readonly [JSON_SCHEMA_METADATA_KEY]: JsonSchema }>({ [JSON_SCHEMA_METADATA_KEY]: jsonSchema });
}

/**
 * The JSON Schema a pipe item carries from {@link documentedAs}, or `undefined` for any other action;
 * for a {@link deprecated} item, `jsonSchema` (what the pipe documented so far) marked `deprecated: true`
 * (JSON Schema 2020-12's meta-data keyword). Meant for `toJsonSchema`'s `overrideAction` option.
 *
 * @param action a valibot pipe action (any kind)
 * @param jsonSchema what the converter made of the pipe up to and including `action`
 * @returns a copy of the carried JSON Schema, the marked schema, or `undefined`
 */
export function documentedJsonSchema(action: { type: string; metadata?: unknown }, jsonSchema?: JsonSchema): JsonSchema | undefined {
  if (action.type !== "metadata" || !action.metadata || typeof action.metadata !== "object") return undefined;
  const metadata = action.metadata as Record<string, unknown>;
  if (metadata[DEPRECATION_METADATA_KEY]) {
    // the converter copied the metadata's keys into the schema: the deprecation's particulars stay out of the document
    const { [DEPRECATION_METADATA_KEY]: _particulars, ...rest } = (jsonSchema ?? {}) as Record<string, unknown>;
    return { ...rest, deprecated: true } as JsonSchema;
  }
  const schema = metadata[JSON_SCHEMA_METADATA_KEY];
  return schema && typeof schema === "object" ? structuredClone(schema as JsonSchema) : undefined;
}

/** The metadata key under which {@link deprecated} stores its {@link Deprecation}. */
export const DEPRECATION_METADATA_KEY = "svc:deprecated";

/**
 * A query parameter or body property kept for compatibility after another name replaced it (README,
 * "API versioning and deprecation"): `since` is the day it was deprecated (`YYYY-MM-DD`, UTC), `use`
 * the name to send instead.
 */
export interface Deprecation {
  since: string;
  use: string;
}

/**
 * A valibot metadata action marking the query parameter or body property whose schema's pipe it ends
 * as deprecated: the OpenAPI document says `deprecated: true` (on the parameter, or the property's
 * schema), and a request that sends it is answered with `Deprecation` (RFC 9745) and a
 * `Link` to `/docs` with `rel="deprecation"` (core/http/deprecations.ts). Put it on the outermost schema of the
 * entry, after any transformation: `v.pipe(v.optional(queryInteger(…)), deprecated({ … }))`. It
 * validates nothing.
 * @throws Error when `since` is not a calendar date `YYYY-MM-DD`
 */
export function deprecated<TInput>(deprecation: Deprecation): v.MetadataAction<TInput, { readonly [DEPRECATION_METADATA_KEY]: Deprecation }> {
  const day = /^\d{4}-\d{2}-\d{2}$/.test(deprecation.since) ? Date.parse(`${deprecation.since}T00:00:00Z`) : NaN;
  // a day that does not exist (2026-02-31) parses as another: it must read back as itself
  if (Number.isNaN(day) || new Date(day).toISOString().slice(0, 10) !== deprecation.since) throw new Error(`deprecated: since must be a date YYYY-MM-DD (got ${deprecation.since})`);
  return v.metadata<TInput, { readonly [DEPRECATION_METADATA_KEY]: Deprecation }>({ [DEPRECATION_METADATA_KEY]: deprecation });
}

/**
 * The deprecated names an object schema's entries carry ({@link deprecated}, on the entry's pipe or on
 * that of the schema an `optional`, `nullable` or `nullish` wraps), for a union of object schemas the
 * names of each member; an empty map for any other schema.
 * @returns entry name → its deprecation
 * @throws Error when a union's member deprecates a name another member takes as current: a request
 *   could not be told which it used
 */
export function deprecatedEntries(schema: unknown): Map<string, Deprecation> {
  const out = new Map<string, Deprecation>();
  const current = new Set<string>();
  const markOf = (entry: unknown): Deprecation | undefined => {
    for (let s = entry as { pipe?: Array<{ type: string; metadata?: Record<string, unknown> }>; wrapped?: unknown } | undefined; s; s = s.wrapped as typeof s) {
      const found = s.pipe?.find((a) => a.type === "metadata" && a.metadata?.[DEPRECATION_METADATA_KEY])?.metadata?.[DEPRECATION_METADATA_KEY];
      if (found) return found as Deprecation;
    }
    return undefined;
  };
  const visit = (s: unknown) => {
    const node = s as { entries?: Record<string, unknown>; options?: unknown[] } | undefined;
    if (node?.options) for (const option of node.options) visit(option);
    for (const [name, entry] of Object.entries(node?.entries ?? {})) {
      const found = markOf(entry);
      if (found) out.set(name, found);
      else current.add(name);
    }
  };
  visit(schema);
  for (const name of out.keys()) if (current.has(name)) throw new Error(`"${name}" is deprecated in one member of the union and current in another: a request could not be told which it used`);
  return out;
}

/**
 * A query parameter holding a whole number from `min` to `max`: the string must be decimal digits only
 * (no sign, no exponent, no spaces) and its value within the bounds; the output is the number. It is
 * documented as `{ type: "integer", minimum: min, maximum: max }` (OpenAPI serializes an integer query
 * parameter as its decimal digits), so the document and the validator agree on the bounds.
 *
 * @param opts `min` and `max` are inclusive whole numbers, `0 <= min <= max <= Number.MAX_SAFE_INTEGER`;
 *   `description` is documented with the parameter
 * @returns a valibot schema of `string` input and `number` output
 * @throws Error when the bounds are not whole numbers in that range
 */
export function queryInteger(opts: { min: number; max: number; description?: string }) {
  const { min, max, description } = opts;
  if (!Number.isSafeInteger(min) || !Number.isSafeInteger(max) || min < 0 || min > max) throw new Error(`queryInteger: bounds must be whole numbers with 0 <= min <= max (got ${min}, ${max})`);
  return v.pipe(
    v.string(),
    v.regex(/^\d+$/, "must be a whole number"),
    documentedAs({ type: "integer", minimum: min, maximum: max, ...(description ? { description } : {}) }),
    v.transform(Number),
    v.minValue(min, `must be at least ${min}`),
    v.maxValue(max, `must be at most ${max}`),
  );
}

/**
 * A query parameter holding a comma-separated list (`a,b` or `a, b`; empty items are dropped), parsed to
 * an array. With `values`, every item must be one of them, and the parameter is documented with a
 * `pattern` that admits exactly those lists (items may be padded with spaces or tabs); without, any
 * string is a list of free-form items.
 *
 * @param values the allowed items (letters, digits, `_`, `.`, `-` only), or none for free-form items
 * @param description documented with the parameter
 * @returns a valibot schema of `string` input and `string[]` output
 * @throws Error when a value holds other characters (they would need escaping in the pattern)
 */
export function queryCommaList(values: undefined, description?: string): v.GenericSchema<string, string[]>;
export function queryCommaList<const T extends string>(values: readonly T[], description?: string): v.GenericSchema<string, T[]>;
export function queryCommaList<const T extends string>(values: readonly T[] | undefined, description?: string): v.GenericSchema<string, string[]> {
  const split = (s: string) => s.split(",").map((x) => x.trim()).filter(Boolean);
  if (!values) {
    return v.pipe(v.string(), documentedAs({ type: "string", ...(description ? { description } : {}) }), v.transform(split));
  }
  for (const value of values) if (!/^[A-Za-z0-9_.-]+$/.test(value)) throw new Error(`queryCommaList: "${value}" cannot be a list item`);
  const item = `(?:(?:${values.map((x) => x.replaceAll(".", "\\.")).join("|")})[ \\t]*)?`;
  const pattern = `^[ \\t]*${item}(?:,[ \\t]*${item})*$`;
  return v.pipe(
    v.string(),
    v.regex(new RegExp(pattern), `must be a comma-separated list of ${values.join(", ")}`),
    documentedAs({ type: "string", pattern, ...(description ? { description } : {}) }),
    v.transform(split),
    v.array(v.picklist(values)),
  );
}

/** The metadata key under which {@link queryGroups} records its groups. */
export const PARAMETER_GROUPS_METADATA_KEY = "svc:parameterGroups";

/**
 * A query schema whose parameters in each group go together: a request sends all members of a group
 * or none, else 400 `invalid_request` ("… go together"). OpenAPI cannot say that of separate
 * parameters, so the generator documents each group as one object parameter named after the group
 * with `style: form, explode: true` (its members stay separate query keys on the wire) and
 * `dependentRequired` (see {@link queryParameterGroups}).
 *
 * @param object the query object schema
 * @param groups group name → member names (keys of `object`, at least two, each optional in it)
 * @returns `object` piped through the check, with the groups in its metadata
 * @throws Error when a member is not a key of `object` or a group has fewer than two members
 */
export function queryGroups<const S extends v.ObjectSchema<v.ObjectEntries, any>>(object: S, groups: Record<string, readonly (keyof S["entries"] & string)[]>) {
  for (const [name, members] of Object.entries(groups)) {
    if (members.length < 2) throw new Error(`queryGroups: group "${name}" needs at least two members`);
    for (const m of members) if (!Object.hasOwn(object.entries, m)) throw new Error(`queryGroups: "${m}" of group "${name}" is not a query parameter`);
  }
  const together = (q: Record<string, unknown>) => Object.values(groups).every((members) => members.every((m) => q[m] === undefined) || members.every((m) => q[m] !== undefined));
  const message = Object.values(groups).map((members) => `${members.join(" and ")} go together`).join("; ");
  return v.pipe(object, v.check(together as (q: v.InferOutput<S>) => boolean, message), v.metadata({ [PARAMETER_GROUPS_METADATA_KEY]: groups }));
}

/**
 * The groups {@link queryGroups} recorded on a query schema, read from its JSON Schema (the converter
 * copies metadata into it); the key is removed from `jsonSchema`.
 *
 * @param jsonSchema the JSON Schema of a route's query object (modified: the metadata key is deleted)
 * @returns group name → member names (empty when there are none)
 */
export function queryParameterGroups(jsonSchema: Record<string, unknown>): Record<string, string[]> {
  const groups = jsonSchema[PARAMETER_GROUPS_METADATA_KEY];
  delete jsonSchema[PARAMETER_GROUPS_METADATA_KEY];
  return groups && typeof groups === "object" ? (groups as Record<string, string[]>) : {};
}

/**
 * A body field validated by `schema` that reads as `{}` when omitted (an action's `params`, a
 * workflow's `input`): optional with default `{}` when `schema` accepts `{}`, required otherwise, so the
 * document says whether it may be left out.
 *
 * @param schema the field's schema (an object schema, typically)
 * @returns `v.optional(schema, {})` or `schema`
 */
export function defaultsToEmptyObject<S extends v.GenericSchema<unknown, unknown>>(schema: S): S | v.OptionalSchema<S, Record<string, never>> {
  return v.safeParse(schema, {}).success ? v.optional(schema, {}) : schema;
}

/**
 * The parameter names a query schema declares: an object schema's entries, through the pipes
 * {@link queryGroups} wraps it in; undefined for another shape (its parameters are not checked by name).
 */
export function queryParameterNames(schema: unknown): ReadonlySet<string> | undefined {
  let s = schema as { entries?: Record<string, unknown>; pipe?: readonly unknown[] } | undefined;
  while (s && !s.entries && s.pipe) s = s.pipe[0] as typeof s;
  return s?.entries ? new Set(Object.keys(s.entries)) : undefined;
}

/**
 * The query entries of a keyset listing: `pageSize` (1 to `max`, the route's default named in its
 * description; "Events per page, …" with `unit`) and `nextPageToken` (non-empty: the `nextPageToken`
 * of the page before). Spread them into the route's `query` object beside its filters.
 */
export function pageQuery(opts: { max: number; defaultSize: number; unit?: string }) {
  return {
    pageSize: v.optional(queryInteger({ min: 1, max: opts.max, description: `${opts.unit ? `${opts.unit} per page, ` : ""}1 to ${opts.max}, default ${opts.defaultSize}` })),
    nextPageToken: v.optional(v.pipe(v.string(), v.minLength(1), v.description("The `nextPageToken` of the page before"))),
  };
}
