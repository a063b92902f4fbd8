/**
 * The in-memory twin of {@link compileObjectQuery}'s `where` (spec 4.3 filter language): decides
 * whether one object matches, with SQLite's semantics (rules evaluate event payloads with it, spec 2.4
 * `rule.*`). `core/ontology/match.test.ts` checks that both agree on random objects and conditions.
 */
import type { Condition } from "../sdk/context";

type SqlScalar = null | number | string;

/** The value `json_extract(properties, '$."p"')` answers for a property value (booleans are 1/0, objects JSON text). */
function sqlValue(value: unknown): SqlScalar {
  if (value === undefined || value === null) return null;
  if (typeof value === "boolean") return value ? 1 : 0;
  if (typeof value === "number" || typeof value === "string") return value;
  return JSON.stringify(value);
}

/** SQLite's ordering across storage classes (NULL < numbers < text), text by bytes (BINARY collation). */
function compare(a: Exclude<SqlScalar, null>, b: Exclude<SqlScalar, null>): number {
  const rank = (x: number | string) => (typeof x === "number" ? 1 : 2);
  if (rank(a) !== rank(b)) return rank(a) - rank(b);
  if (typeof a === "number") return a - (b as number);
  return Buffer.compare(Buffer.from(a, "utf8"), Buffer.from(b as string, "utf8"));
}

/** SQLite's `lower()` without ICU: ASCII letters only. */
function asciiLower(s: string): string {
  return s.replace(/[A-Z]/g, (c) => c.toLowerCase());
}

/** SQLite's text form of a value (`CAST(x AS TEXT)`), as `instr`/`lower` see it. */
function sqlText(x: Exclude<SqlScalar, null>): string {
  return typeof x === "string" ? x : String(x);
}

/**
 * True when an object (its `primaryId` and `properties`) satisfies every condition of `where`, exactly
 * as `POST /api/objects/query` would select it: `eq`/`ne` (with null meaning absent), `gt`, `gte`,
 * `lt`, `lte`, `in`, `contains` (ASCII case-insensitive), `exists`. A bare value means `eq`.
 * Assumes `where` was checked by {@link compileObjectQuery} (known properties and operators): an
 * unknown operator here matches nothing.
 */
export function matchesWhere(where: Record<string, Condition> | undefined, primaryId: string, properties: Record<string, unknown>): boolean {
  for (const [property, cond] of Object.entries(where ?? {})) {
    // `primary_id` is a TEXT column: SQLite converts what it is compared with to text (affinity)
    const isId = property === "primaryId";
    const operand = (x: unknown) => {
      const v = sqlValue(x);
      return isId && v !== null ? sqlText(v) : v;
    };
    const col = isId ? primaryId : sqlValue(properties[property]);
    const ops: Record<string, unknown> = cond === null || typeof cond !== "object" ? { eq: cond } : cond;
    for (const [op, raw] of Object.entries(ops)) {
      if (raw === undefined) continue; // no operator, as compileObjectQuery reads it
      const value = op === "exists" || op === "contains" ? raw : op === "in" ? (raw as unknown[]).map(operand) : operand(raw);
      if (!test(op, col, value)) return false;
    }
  }
  return true;
}

function test(op: string, col: SqlScalar, value: unknown): boolean {
  // `value` is already in SQL form (and an `in` list element-wise)
  switch (op) {
    case "eq":
      return value === null ? col === null : col !== null && compare(col, value as number | string) === 0;
    case "ne":
      return value === null ? col !== null : col === null || compare(col, value as number | string) !== 0;
    case "gt":
    case "gte":
    case "lt":
    case "lte": {
      if (col === null || value === null) return false;
      const c = compare(col, value as number | string);
      return op === "gt" ? c > 0 : op === "gte" ? c >= 0 : op === "lt" ? c < 0 : c <= 0;
    }
    case "in":
      return col !== null && (value as SqlScalar[]).some((v) => v !== null && compare(col, v) === 0);
    case "contains":
      // text values only (`typeof(col) = 'text'` in the SQL)
      return typeof col === "string" && asciiLower(col).includes(asciiLower(String(value)));
    case "exists":
      return value ? col !== null : col === null;
    default:
      return false;
  }
}
