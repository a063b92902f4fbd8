import { createHash } from "node:crypto";
import { ApiError } from "../errors";
import { own, propertyDef, type PropertyType, type ProjectDefinition } from "../sdk/project";
import type { Condition, ObjectQuery } from "../sdk/context";
import type { SqlValue } from "../store/db";

export const MAX_PAGE_SIZE = 500;
export const DEFAULT_PAGE_SIZE = 50;
/** The operators of a `where` condition (spec 3.3): a condition is a bare value (equality) or an object of these. */
export const QUERY_OPERATORS: readonly string[] = ["eq", "ne", "gt", "gte", "lt", "lte", "in", "contains", "exists"];

interface PageToken {
  h: string; // hash of the query, so a token is not reused with another query
  v: SqlValue; // sort value of the last row
  id: string; // primaryId of the last row
}

/**
 * What a condition's values must be for a property of a type (spec 4.3 filter language): `string` for
 * `string`, `date`, `datetime` and `primaryId`; `number` for `number` and `integer`; `boolean`; `any`
 * scalar for `json` (compared as SQLite compares the stored JSON); `none` for `file` (its value is a
 * file reference object: only `exists`, or `eq`/`ne` null, say anything about it). A value of another
 * kind would compare across SQLite's storage classes (every number sorts below every text, so
 * `{ amount: { lt: "2000" } }` held for every invoice): the query is refused instead.
 */
export type OperandKind = "string" | "number" | "boolean" | "any" | "none";

/** The {@link OperandKind} of a property type, or of `primaryId` (a text column). */
export function operandKind(type: PropertyType | "primaryId"): OperandKind {
  switch (type) {
    case "number":
    case "integer":
      return "number";
    case "boolean":
      return "boolean";
    case "json":
      return "any";
    case "file":
      return "none";
    default:
      return "string";
  }
}

/**
 * True when `contains` (a case-insensitive substring of a text value) applies to a property of this
 * type: text, or `json` (whose text values, and objects and lists as their JSON text, it searches;
 * a number or boolean there never contains anything).
 */
export const containsApplies = (type: PropertyType | "primaryId") => operandKind(type) === "string" || type === "json";

/**
 * The words the query compiler and the request body's schema (plugins/objects, the OpenAPI) both use
 * in their refusals, so a condition is refused in the same terms either way.
 */
export const QUERY_WORDING = {
  /** What a value of each kind is, in words. */
  kindNames: { string: "a string", number: "a number", boolean: "a boolean", any: "a string, number or boolean", none: "absent" } as Record<OperandKind, string>,
  /** After `where.<property>`: an operator object with no operator. */
  noOperator: `names no operator: give a value (equality) or at least one of ${QUERY_OPERATORS.join(", ")}`,
  /** What a property is: `a number property`, or the id. */
  property: (type: PropertyType | "primaryId") => (type === "primaryId" ? "the object's id, a string" : `a ${type} property`),
  /** A condition on a file property that is not `exists` (or `eq`/`ne` null). */
  fileProperty: (property: string) => `${property} is a file property; filter it with exists (or eq/ne null)`,
  /** `contains` on a property that is not text or json. */
  containsNotText: (property: string, type: PropertyType | "primaryId") => `contains applies to text properties; ${property} is ${QUERY_WORDING.property(type)} (use eq, in, or a range)`,
};

function bindable(value: unknown, at: string, kind: OperandKind, property: string, type: PropertyType | "primaryId", nullable: boolean): SqlValue {
  if (typeof value === "number" && !Number.isFinite(value)) throw new ApiError("invalid_request", `${at} must be a finite number, not ${value}`);
  const scalar = typeof value === "string" || typeof value === "number" || typeof value === "boolean";
  const fits = (kind === "any" ? scalar : typeof value === kind) || (nullable && value === null);
  if (kind === "none" && !fits) throw new ApiError("invalid_request", `${at}: ${QUERY_WORDING.fileProperty(property)}`);
  if (!fits) {
    const wanted = `${QUERY_WORDING.kindNames[kind]}${nullable ? " or null" : ""}`;
    throw new ApiError("invalid_request", `${at} must be ${wanted} (${property} is ${QUERY_WORDING.property(type)}), not ${value === null ? "null" : Array.isArray(value) ? "a list" : typeof value === "object" ? "an object" : `the ${typeof value} ${JSON.stringify(value)}`}`);
  }
  if (typeof value === "boolean") return value ? 1 : 0;
  return value as SqlValue;
}

/**
 * Compiles an object query to SQL with keyset pagination (spec 4.3): rows are ordered by the sort
 * property (nulls last) then `primaryId`, and `nextPageToken` holds the last row's position, so pages
 * neither skip nor repeat rows when others are inserted meanwhile.
 *
 * Each condition's values must be of the property's kind ({@link operandKind}): `null` only in `eq` and
 * `ne` (absent), `contains` only on text and `json` properties, and an operator object names at least
 * one operator.
 *
 * @throws {ApiError} invalid_request for unknown properties or operators, a value of another kind than
 *   its property's, an empty operator object, or a token of another query; not_found for an unknown type
 */
export function compileObjectQuery(project: ProjectDefinition, q: ObjectQuery): { sql: string; params: SqlValue[]; pageSize: number; hash: string } {
  const type = own(project.objectTypes, q.objectTypeId);
  if (!type) throw new ApiError("not_found", `Unknown object type "${q.objectTypeId}"`);
  const pageSize = q.pageSize ?? DEFAULT_PAGE_SIZE;
  const column = (property: string, at: string) => {
    if (property === "primaryId") return { expr: "primary_id", params: [] as SqlValue[] };
    if (!Object.hasOwn(type.properties, property)) throw new ApiError("invalid_request", `${at}: "${property}" is not a property of ${q.objectTypeId}`);
    return { expr: "json_extract(properties, ?)", params: [`$."${property}"`] as SqlValue[] };
  };

  const where: string[] = ["object_type_id = ?"];
  const params: SqlValue[] = [q.objectTypeId];
  for (const [property, cond] of Object.entries(q.where ?? {})) {
    const col = column(property, "where");
    const propType = property === "primaryId" ? "primaryId" : propertyDef(type.properties[property]!).type;
    const kind = operandKind(propType);
    const bare = cond === null || typeof cond !== "object" || Array.isArray(cond);
    // an operator given as `undefined` (from code: JSON has none) is no operator
    const ops = Object.fromEntries(Object.entries(bare ? { eq: cond } : cond).filter(([, value]) => value !== undefined));
    if (!bare && Object.keys(ops).length === 0) throw new ApiError("invalid_request", `where.${property} ${QUERY_WORDING.noOperator}`);
    for (const [op, value] of Object.entries(ops)) {
      const at = bare ? `where.${property}` : `where.${property}.${op}`;
      const operand = (x: unknown, nullable = false) => bindable(x, at, kind, property, propType, nullable);
      const add = (sql: string, ...values: SqlValue[]) => {
        where.push(sql.replaceAll("$col", col.expr));
        // each $col occurrence consumes the column's own params first
        const occurrences = sql.split("$col").length - 1;
        for (let i = 0; i < occurrences; i++) params.push(...col.params);
        params.push(...values);
      };
      switch (op) {
        case "eq":
          if (value === null) add("$col IS NULL");
          else add("$col = ?", operand(value, true));
          break;
        case "ne":
          if (value === null) add("$col IS NOT NULL");
          else add("($col IS NULL OR $col != ?)", operand(value, true));
          break;
        case "gt":
        case "gte":
        case "lt":
        case "lte":
          add(`$col ${{ gt: ">", gte: ">=", lt: "<", lte: "<=" }[op]} ?`, operand(value));
          break;
        case "in": {
          if (!Array.isArray(value) || value.length === 0 || value.length > 500) throw new ApiError("invalid_request", `${at} must be a list of 1 to 500 values`);
          add(`$col IN (${value.map(() => "?").join(",")})`, ...value.map((x, i) => bindable(x, `${at}[${i}]`, kind, property, propType, false)));
          break;
        }
        case "contains":
          if (!containsApplies(propType)) throw new ApiError("invalid_request", `${at}: ${kind === "none" ? QUERY_WORDING.fileProperty(property) : QUERY_WORDING.containsNotText(property, propType)}`);
          if (typeof value !== "string") throw new ApiError("invalid_request", `${at} must be a string`);
          // text values only: SQLite's text of a REAL (`1.0e+21`) is not JavaScript's, and rules match in memory (match.ts)
          add("(typeof($col) = 'text' AND instr(lower($col), lower(?)) > 0)", value);
          break;
        case "exists":
          if (typeof value !== "boolean") throw new ApiError("invalid_request", `${at} must be true or false`);
          add(value ? "$col IS NOT NULL" : "$col IS NULL");
          break;
        default:
          throw new ApiError("invalid_request", `where.${property}: unknown operator "${op}" (use ${QUERY_OPERATORS.join(", ")})`);
      }
    }
  }

  const sortProperty = q.orderBy?.property ?? "primaryId";
  const desc = q.orderBy?.direction === "desc";
  const sort = column(sortProperty, "orderBy");
  const hash = createHash("sha256").update(JSON.stringify([q.objectTypeId, q.where ?? {}, sortProperty, desc])).digest("base64url").slice(0, 16);

  if (q.nextPageToken) {
    let token: PageToken;
    try {
      token = JSON.parse(Buffer.from(q.nextPageToken, "base64url").toString("utf8"));
    } catch {
      throw new ApiError("invalid_request", "nextPageToken is not a page token");
    }
    if (token?.h !== hash || typeof token.id !== "string") throw new ApiError("invalid_request", "nextPageToken belongs to another query");
    if (sortProperty === "primaryId") {
      where.push(desc ? "primary_id < ?" : "primary_id > ?");
      params.push(token.id);
    } else if (token.v === null) {
      where.push(`(${sort.expr} IS NULL AND primary_id > ?)`);
      params.push(...sort.params, token.id);
    } else {
      const cmp = desc ? "<" : ">";
      where.push(`((${sort.expr} IS NOT NULL AND (${sort.expr} ${cmp} ? OR (${sort.expr} = ? AND primary_id > ?))) OR ${sort.expr} IS NULL)`);
      params.push(...sort.params, ...sort.params, token.v, ...sort.params, token.v, token.id, ...sort.params);
    }
  }

  const dir = desc ? "DESC" : "ASC";
  const order = sortProperty === "primaryId" ? `primary_id ${dir}` : `${sort.expr} IS NULL, ${sort.expr} ${dir}, primary_id ASC`;
  const orderParams = sortProperty === "primaryId" ? [] : [...sort.params, ...sort.params];
  const sql = `SELECT object_type_id, primary_id, properties, version, created_at, updated_at, ${sort.expr} AS sort_value
    FROM objects WHERE ${where.join(" AND ")} ORDER BY ${order} LIMIT ?`;
  return { sql, params: [...sort.params, ...params, ...orderParams, pageSize + 1], pageSize, hash };
}

/** Encodes the position after a row as an opaque page token. */
export function encodePageToken(hash: string, sortValue: SqlValue, primaryId: string): string {
  const token: PageToken = { h: hash, v: sortValue, id: primaryId };
  return Buffer.from(JSON.stringify(token)).toString("base64url");
}
