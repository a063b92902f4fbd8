import * as v from "valibot";
import { ApiError } from "../errors";

/** One validation problem: where (dot path) and what. */
export interface IssueDetail {
  path: string;
  message: string;
}

/**
 * Whether `issue` is an object schema's for a required key the input lacks (valibot's default message
 * for it reads `Invalid key: Expected "<key>" but received undefined`).
 */
export function isMissingKey(issue: v.BaseIssue<unknown>): boolean {
  return issue.kind === "schema" && issue.input === undefined && issue.path?.at(-1)?.origin === "key";
}

/**
 * Whether `issue` is a strict object's refusal of a key it does not declare (valibot's `Invalid key:
 * Expected never but received "kind"`).
 */
export function isUnknownKey(issue: v.BaseIssue<unknown>): boolean {
  // only valibot's own wording: a schema's message of its own (naming the object type's properties, say) stays
  return issue.kind === "schema" && issue.type === "strict_object" && issue.expected === "never" && issue.path?.at(-1)?.origin === "key" && issue.message.startsWith("Invalid key: Expected never");
}

/**
 * Flattens valibot issues to `{ path, message }` (never echoes the input value); a required key that
 * is missing reads `is required`, a key a strict object does not declare `is not a field here`.
 */
export function formatIssues(issues: readonly v.BaseIssue<unknown>[], root: string): IssueDetail[] {
  return issues.map((issue) => {
    const sub = v.getDotPath(issue);
    return { path: sub ? `${root}.${sub}` : root, message: isMissingKey(issue) ? "is required" : isUnknownKey(issue) ? "is not a field here" : issue.message };
  });
}

/** valibot's schema types that describe a JSON object. */
const OBJECT_SCHEMAS = new Set(["object", "loose_object", "strict_object", "object_with_rest", "record"]);

/**
 * Parses `input` with `schema`.
 * @throws {ApiError} invalid_request with `details.issues` ({@link formatIssues}); its message names the
 *   first, e.g. `Invalid query: query.objectTypeId is required`
 */
export function parseOrThrow<S extends v.GenericSchema<unknown, any>>(schema: S, input: unknown, root: string): v.InferOutput<S> {
  // valibot's object schemas take an array as an object without keys (`[]` would pass as `{}`)
  if (Array.isArray(input) && OBJECT_SCHEMAS.has(schema.type)) {
    throw new ApiError("invalid_request", `Invalid ${root}: ${root} expected a JSON object, got an array`, { issues: [{ path: root, message: "expected a JSON object, got an array" }] });
  }
  const result = v.safeParse(schema, input);
  if (!result.success) {
    const issues = formatIssues(result.issues, root);
    throw new ApiError("invalid_request", `Invalid ${root}: ${issues[0]!.path} ${issues[0]!.message}`, { issues });
  }
  return result.output;
}

/**
 * The text a client meant by one route parameter (spec 4.1 paths such as `/api/objects/{objectTypeId}/{primaryId}`).
 * h3 v2 hands route parameters over exactly as they stand in the URL: still percent-encoded (by design,
 * h3 issue #547; its `decode` option keeps `%2F` encoded), so an id holding `/`, `%` or a space, sent as
 * `encodeURIComponent(id)`, arrives as `a%2Fb`, `50%25` or `a%20b`. This decodes it once with
 * `decodeURIComponent`, the inverse of what the client did; a value without `%` comes back unchanged.
 * `RouteRegistry.dispatch` runs it on every route parameter (see {@link decodePathParams}) before the
 * route's schema sees them, so handlers get decoded text and must not decode again (a literal `%25`
 * would turn into `%`). A catch-all parameter (`**:path`) is decoded whole: `a%2Fb/c` is `a/b/c`.
 *
 * @param raw the route parameter as h3 captured it (one path segment, or several for a `**:name` catch-all)
 * @param name the parameter's name, for the error
 * @throws {ApiError} invalid_request when `raw` holds a malformed escape (h3 already answers such URLs 400; a guard)
 */
export function decodePathParam(raw: string, name: string): string {
  if (!raw.includes("%")) return raw;
  try {
    return decodeURIComponent(raw);
  } catch {
    throw new ApiError("invalid_request", `Invalid path: ${name} has a malformed percent-escape`, { issues: [{ path: `path.${name}`, message: "malformed percent-escape" }] });
  }
}

/**
 * Every route parameter decoded once with {@link decodePathParam} (what `RouteRegistry.dispatch` hands
 * to the route's `params` schema and handler).
 * @param raw the parameters as h3 captured them (`event.context.params`), by name
 * @throws {ApiError} invalid_request naming the first parameter with a malformed percent-escape
 */
export function decodePathParams(raw: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(raw)) out[name] = decodePathParam(value, name);
  return out;
}
