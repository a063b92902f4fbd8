/**
 * Datasets (spec 1 "datasets", 2.4 `dataset.version.committed`, 4.1 `GET /api/datasets`): what a
 * connector declares, and the one row validator built from it.
 */
import * as v from "valibot";
import { dateSchema, timestampSchema } from "./time";

/** Types of dataset columns: `date` is `YYYY-MM-DD`, `datetime` an ISO 8601 timestamp with a time zone (the grammars of core/sdk/time.ts). */
export const DATASET_COLUMN_TYPES = ["string", "number", "integer", "boolean", "date", "datetime"] as const;
export type DatasetColumnType = (typeof DATASET_COLUMN_TYPES)[number];

/** One declared column: its type and whether every row must carry it (default false; primary key columns always must). */
export interface DatasetColumnDefinition {
  type: DatasetColumnType;
  required?: boolean;
  description?: string;
}

/**
 * How a dataset's rows become objects of one type. The object's `primaryId` is the row key (see
 * {@link rowKey}). `properties` maps each object property to a column name or to a function of the
 * row (its answer `undefined` or `null` clears the property). `links` upserts a link from the object to
 * `targetTypeId` / the value of column `targetId` (no value: no link).
 */
export interface DatasetProjection {
  objectTypeId: string;
  properties: Record<string, string | ((row: Record<string, unknown>) => unknown)>;
  links?: ReadonlyArray<{ linkId: string; targetTypeId: string; targetId: string }>;
}

/** A valibot object schema describing one row (the alternative to `columns`). */
export type DatasetRowSchema = v.ObjectSchema<any, any> | v.StrictObjectSchema<any, any> | v.LooseObjectSchema<any, any>;

/**
 * A dataset: rows with a primary key, committed as numbered versions (transactions `snapshot`: the
 * whole content, or `append`: rows added or replaced by key). Exactly one of `columns` or `schema`.
 */
export interface DatasetDefinition {
  title?: string;
  description?: string;
  /** Column name → type, or `{ type, required?, description? }`. Rows carrying other columns are refused. */
  columns?: Record<string, DatasetColumnType | DatasetColumnDefinition>;
  /** A valibot object schema of a row (its entries are the columns); its own strictness applies. */
  schema?: DatasetRowSchema;
  /** The column (or columns, in order) whose values identify a row. */
  primaryKey: string | readonly string[];
  /** Optional projection into an object type; see {@link defineDataset} for ownership. */
  projection?: DatasetProjection;
}

/** A column as `GET /api/datasets` describes it; `json` is a `schema` entry of another kind. */
export interface DatasetColumn {
  name: string;
  type: DatasetColumnType | "json";
  required: boolean;
  description?: string;
}

/** One problem of one row: the column it is about (absent for the row as a whole) and what is wrong. */
export interface RowProblem {
  column?: string;
  message: string;
}

/** What {@link compileDataset} builds: the columns, the key, the row schema and the check of one row. */
export interface CompiledDataset {
  columns: DatasetColumn[];
  primaryKey: string[];
  /** The valibot schema of one row (also documents the rows in OpenAPI). */
  rowSchema: v.GenericSchema<unknown, Record<string, unknown>>;
  /**
   * Validates one row. Valid: its key ({@link rowKey}), its values (absent and `null` columns dropped,
   * in column order) and `data`, their canonical JSON text (equal rows have equal text).
   */
  check(row: unknown): { ok: true; key: string; values: Record<string, unknown>; data: string } | { ok: false; problems: RowProblem[] };
}


/** The valibot schema of one column type (the same checks as the ontology's property types). */
function columnSchema(type: DatasetColumnType): v.GenericSchema<unknown, unknown> {
  switch (type) {
    case "string":
      return v.string();
    case "number":
      return v.pipe(v.number(), v.finite());
    case "integer":
      return v.pipe(v.number(), v.safeInteger());
    case "boolean":
      return v.boolean();
    case "date":
      return dateSchema();
    case "datetime":
      return timestampSchema();
  }
}

/** The column type of a valibot entry (unwrapping optional/nullish), and whether it is required. */
function describeEntry(schema: any): { type: DatasetColumn["type"]; required: boolean } {
  let s = schema;
  let required = true;
  while (s && ["optional", "nullish", "nullable", "undefinedable", "exact_optional"].includes(s.type)) {
    if (s.type !== "nullable") required = false;
    s = s.wrapped;
  }
  const actions: Array<{ type: string }> = Array.isArray(s?.pipe) ? s.pipe : [];
  const has = (...types: string[]) => actions.some((a) => types.includes(a.type));
  switch (s?.type) {
    case "string":
      return { type: has("iso_date") ? "date" : has("iso_timestamp", "iso_date_time") ? "datetime" : "string", required };
    case "number":
      return { type: has("integer", "safe_integer") ? "integer" : "number", required };
    case "boolean":
      return { type: "boolean", required };
    default:
      return { type: "json", required };
  }
}

/**
 * The row key of a row's primary key values: for one column its value as a string; for several, the
 * values joined with `/`, each with `%` written `%25` and `/` written `%2F` first (so `a/b` + `c` is
 * `a%2Fb/c`, never the same key as `a` + `b/c`).
 */
export function rowKey(values: readonly unknown[]): string {
  if (values.length === 1) return String(values[0]);
  return values.map((x) => String(x).replace(/%/g, "%25").replace(/\//g, "%2F")).join("/");
}

/**
 * Builds the row validator of a dataset declaration.
 * @throws Error when the declaration has neither or both of `columns` and `schema`, an unknown column
 *   type, no primary key, or a primary key naming no column
 */
export function compileDataset(def: DatasetDefinition): CompiledDataset {
  if ((def.columns === undefined) === (def.schema === undefined)) throw new Error("A dataset needs exactly one of columns or schema");
  const primaryKey = typeof def.primaryKey === "string" ? [def.primaryKey] : [...(def.primaryKey ?? [])];
  if (primaryKey.length === 0) throw new Error("A dataset needs a primaryKey");
  let columns: DatasetColumn[];
  let rowSchema: v.GenericSchema<unknown, Record<string, unknown>>;
  if (def.columns) {
    const entries: Record<string, v.GenericSchema<unknown, unknown>> = {};
    columns = Object.entries(def.columns).map(([name, c]) => {
      const col = typeof c === "string" ? { type: c } : c;
      if (!(DATASET_COLUMN_TYPES as readonly string[]).includes(col.type)) throw new Error(`Column "${name}" has unknown type "${col.type}"; types are: ${DATASET_COLUMN_TYPES.join(", ")}`);
      const required = primaryKey.includes(name) || col.required === true;
      const base = columnSchema(col.type);
      const keyed = primaryKey.includes(name) && col.type === "string" ? v.pipe(v.string(), v.minLength(1, "a primary key value must not be empty")) : base;
      entries[name] = required ? keyed : v.nullish(keyed);
      return { name, type: col.type, required, ...(col.description ? { description: col.description } : {}) };
    });
    rowSchema = v.strictObject(entries) as unknown as v.GenericSchema<unknown, Record<string, unknown>>;
  } else {
    const schema = def.schema!;
    if (schema === null || typeof schema !== "object" || !("entries" in schema)) throw new Error("A dataset's schema must be a valibot object schema");
    columns = Object.entries(schema.entries as Record<string, unknown>).map(([name, entry]) => {
      const d = describeEntry(entry);
      return { name, type: d.type, required: d.required || primaryKey.includes(name) };
    });
    rowSchema = schema as unknown as v.GenericSchema<unknown, Record<string, unknown>>;
  }
  const names = columns.map((c) => c.name);
  for (const k of primaryKey) if (!names.includes(k)) throw new Error(`Primary key column "${k}" is not a column (columns: ${names.join(", ")})`);
  return {
    columns,
    primaryKey,
    rowSchema,
    check(row) {
      const parsed = v.safeParse(rowSchema, row);
      if (!parsed.success) {
        const seen = new Set<string | undefined>();
        return {
          ok: false,
          // one problem per column: the first (a date that fails its format also fails its calendar check)
          problems: parsed.issues.map((issue): RowProblem => {
            const column = v.getDotPath(issue)?.split(".")[0];
            if (!column) return { message: issue.message };
            if (issue.expected === "never") return { column, message: `is not a column of this dataset (columns: ${names.join(", ")})` };
            if (issue.input === undefined) return { column, message: "is required" };
            return { column, message: issue.message };
          }).filter((p) => !seen.has(p.column) && (seen.add(p.column), true)),
        };
      }
      const values: Record<string, unknown> = {};
      for (const name of names) {
        const value = (parsed.output as Record<string, unknown>)[name];
        if (value !== undefined && value !== null) values[name] = value;
      }
      const missing = primaryKey.filter((k) => values[k] === undefined || values[k] === "");
      if (missing.length) return { ok: false, problems: missing.map((column) => ({ column, message: "a primary key value is required" })) };
      return { ok: true, key: rowKey(primaryKey.map((k) => values[k])), values, data: JSON.stringify(values) };
    },
  };
}

/**
 * Declares a dataset (spec 1, 2.4, 4.1). Rows are validated against `columns` or `schema` before
 * anything is stored; the refusal names the row (1-based) and the column. The row key is
 * {@link rowKey} of the `primaryKey` values.
 *
 * With a `projection`, every committed version is projected into objects of `projection.objectTypeId`
 * (origin `projection`, no actor; spec 2.3): new and changed rows upsert their object, rows gone
 * delete it. Such objects are OWNED by the projection: any other write to objects of that type (an
 * action, a sync, a direct write, the seed; and links whose source is that type) is refused with 409
 * `conflict` "objects of type <type> are projected from dataset <id>; commit a new dataset version
 * instead". Telemetry on them stays allowed. The projection's object type, properties, columns and
 * links are checked when the app starts.
 *
 * @throws Error as {@link compileDataset}
 */
export function defineDataset(def: DatasetDefinition): DatasetDefinition {
  compileDataset(def);
  return def;
}
