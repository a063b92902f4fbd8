import { createHash } from "node:crypto";
import { ApiError } from "../errors";
import type { ProjectDefinition } from "../sdk/project";
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

function bindable(value: unknown, at: string): SqlValue {
  if (typeof value === "boolean") return value ? 1 : 0;
  if (typeof value === "string" || typeof value === "number" || value === null) return value;
  throw new ApiError("invalid_request", `${at} must be a string, number, boolean or null`);
}

/**
 * Compiles an object query to SQL with keyset pagination (spec 4.3): rows are ordered by the sort
 * property (nulls last) then `primaryId`, and `nextPageToken` holds the last row's position, so pages
 * neither skip nor repeat rows when others are inserted meanwhile.
 *
 * @throws {ApiError} invalid_request for unknown properties, operators, or a token of another query
 */
export function compileObjectQuery(project: ProjectDefinition, q: ObjectQuery): { sql: string; params: SqlValue[]; pageSize: number; hash: string } {
  const type = project.objectTypes[q.objectTypeId];
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
    const at = `where.${property}`;
    const col = column(property, "where");
    const ops: Exclude<Condition, string | number | boolean | null> =
      cond === null || typeof cond !== "object" ? { eq: cond } : cond;
    for (const [op, value] of Object.entries(ops)) {
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
          else add("$col = ?", bindable(value, at));
          break;
        case "ne":
          if (value === null) add("$col IS NOT NULL");
          else add("($col IS NULL OR $col != ?)", bindable(value, at));
          break;
        case "gt":
        case "gte":
        case "lt":
        case "lte":
          add(`$col ${{ gt: ">", gte: ">=", lt: "<", lte: "<=" }[op]} ?`, bindable(value, at));
          break;
        case "in": {
          if (!Array.isArray(value) || value.length === 0 || value.length > 500) throw new ApiError("invalid_request", `${at}.in must be a list of 1 to 500 values`);
          add(`$col IN (${value.map(() => "?").join(",")})`, ...value.map((x) => bindable(x, at)));
          break;
        }
        case "contains":
          if (typeof value !== "string") throw new ApiError("invalid_request", `${at}.contains must be a string`);
          add("instr(lower($col), lower(?)) > 0", value);
          break;
        case "exists":
          add(value ? "$col IS NOT NULL" : "$col IS NULL");
          break;
        default:
          throw new ApiError("invalid_request", `${at}: unknown operator "${op}" (use ${QUERY_OPERATORS.join(", ")})`);
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
