/**
 * Reading a sheet artifact's data for the viewer (spec 2.7, 2.8, 2.11): the workbook of a version with
 * each sheet's columns and types, its theme, and a sheet's rows parsed from its CSV. Reads go through
 * ArtifactStore, so they are owner-only like every artifact read (spec 4.3).
 *
 * Parsed tables are cached by file id (a stored file never changes) in one LRU per process bounded by
 * cell count; concurrent first reads of a file share one parse.
 */
import { parse } from "csv-parse";
import * as v from "valibot";
import { inject, injectable } from "../di";
import { ApiError } from "../errors";
import { FileStore } from "../files/file-store";
import type { Theme } from "./content";
import type { VersionOutline } from "./resolve";
import { ArtifactStore, type ArtifactReader } from "./store";
import { CSV_PARSE_OPTIONS } from "./workbook";
import { WorkbookSchema, normalizeColumnType, type Chart, type Workbook } from "./workbook-schema";
import type { CellType } from "./render/format";

/** A sheet as the viewer needs it: the workbook's settings plus the CSV header and data row count. */
export interface SheetInfo {
  name: string;
  /** Rows frozen at the top, counting the header row (spec 2.8, default 1). */
  frozenRows: number;
  /** Columns frozen at the left (default 0). */
  frozenColumns: number;
  /** Column name → width in CSS pixels, for the columns that set one. */
  widths: Record<string, number>;
  /** The header row (row 1), in order. */
  columns: string[];
  /** Column name → type, for every column (`text` when the workbook names none). */
  types: Record<string, CellType>;
  /** Data rows below the header. */
  total: number;
}

/** A sheet version's workbook as {@link SheetData.workbook} answers it. */
export interface SheetWorkbook {
  workbook: Workbook;
  theme?: Theme;
  sheets: SheetInfo[];
  charts: Chart[];
}

/** A sheet's rows: the header and the data rows, raw CSV values. */
export interface SheetTable {
  columns: string[];
  rows: string[][];
}

/** The valibot schema of a column type in API answers (spec 2.8). */
export const CellTypeSchema = v.object({
  type: v.picklist(["text", "number", "currency", "percent", "date", "link", "image"]),
  decimals: v.optional(v.number()),
  currency: v.optional(v.string()),
});

/** The answer of `GET /api/artifacts/:id/versions/:v/sheets/:sheet/rows`: a page of raw rows. */
export const SheetRowsSchema = v.object({
  sheet: v.string(),
  columns: v.array(v.object({ name: v.string(), type: CellTypeSchema })),
  total: v.number(),
  offset: v.number(),
  rows: v.array(v.array(v.string())),
});
/** A page of rows as the rows API answers it (see {@link SheetRowsSchema}). */
export type SheetRows = v.InferOutput<typeof SheetRowsSchema>;

/** Default bound of the parsed-table cache, in cells (header included). */
export const SHEET_CACHE_CELLS = 2_000_000;

/**
 * An LRU of parsed tables keyed by file id, bounded by total cells. A table larger than the whole bound
 * is answered but not kept.
 */
export class TableCache {
  private readonly entries = new Map<string, { table: SheetTable; cells: number }>();
  private readonly pending = new Map<string, Promise<SheetTable>>();
  private size = 0;
  /** Parses that ran (for tests and diagnostics). */
  parses = 0;

  constructor(readonly maxCells = SHEET_CACHE_CELLS) {}

  /** Cells held now. */
  get cells(): number {
    return this.size;
  }

  /** The cached table of `fileId`, or the result of `load` (one load at a time per file id). */
  async get(fileId: string, load: () => Promise<SheetTable>): Promise<SheetTable> {
    const hit = this.entries.get(fileId);
    if (hit) {
      this.entries.delete(fileId);
      this.entries.set(fileId, hit);
      return hit.table;
    }
    let running = this.pending.get(fileId);
    if (!running) {
      running = (async () => {
        try {
          this.parses++;
          const table = await load();
          this.put(fileId, table);
          return table;
        } finally {
          this.pending.delete(fileId);
        }
      })();
      this.pending.set(fileId, running);
    }
    return running;
  }

  private put(fileId: string, table: SheetTable): void {
    const cells = table.columns.length * (table.rows.length + 1);
    if (cells > this.maxCells) return;
    this.entries.set(fileId, { table, cells });
    this.size += cells;
    for (const [key, entry] of this.entries) {
      if (this.size <= this.maxCells) break;
      this.entries.delete(key);
      this.size -= entry.cells;
    }
  }
}

/** One cache for the process: files are immutable and their ids unique, so every app may share it. */
const SHARED_CACHE = new TableCache();
/** Parsed `workbook.json` files by file id (small; the most recent 256). Shared: never mutate one. */
const WORKBOOKS = new Map<string, Workbook>();

/**
 * Parses a sheet's CSV as publishing read it (core/artifacts/workbook.ts, spec 2.8): csv-parse with
 * CSV_PARSE_OPTIONS, row 1 the header, blank lines at the very end not rows.
 * @throws CsvError for bytes that are not CSV (publishing refuses those, so a stored sheet parses)
 */
export async function parseSheetCsv(stream: NodeJS.ReadableStream): Promise<SheetTable> {
  const records: string[][] = [];
  const parser = stream.pipe(parse(CSV_PARSE_OPTIONS));
  for await (const record of parser as AsyncIterable<string[]>) records.push(record);
  while (records.length > 1 && records.at(-1)!.length === 1 && records.at(-1)![0] === "") records.pop();
  const [columns = [], ...rows] = records;
  return { columns, rows };
}

/**
 * A sheet version's workbook and rows, for the sheet view, embedded ranges and charts, and the rows API
 * (spec 2.7, 2.8). Owner-only like the artifact store: another identity's artifact is `not_found`.
 */
@injectable()
export class SheetData {
  /** The parsed-table cache (shared by every SheetData of the process). */
  readonly cache: TableCache = SHARED_CACHE;

  constructor(
    @inject(ArtifactStore) private readonly artifacts: ArtifactStore,
    @inject(FileStore) private readonly files: FileStore,
  ) {}

  /**
   * The workbook of a sheet version: `workbook.json` (with its defaults applied), `theme.json` when the
   * version has one, each sheet with its header columns, types (every column; `text` when unnamed), widths,
   * frozen rows and columns and data row count, and the charts. `workbook` and `charts` are cached and
   * shared between callers: read them, never change them.
   *
   * @param version a version number, or undefined for the latest
   * @throws {ApiError} not_found for an artifact the reader cannot open, a missing version, or an artifact
   *   that is not a sheet
   */
  async workbook(reader: ArtifactReader, artifactId: string, version?: number): Promise<SheetWorkbook & { version: number; latestVersion: number; title: string }> {
    const ver = await this.artifacts.version(reader, artifactId, version);
    const { workbook, sheets } = await this.sheetsOf(ver);
    const theme = await this.artifacts.theme(ver);
    return { workbook, ...(theme ? { theme } : {}), sheets, charts: workbook.charts, version: ver.version, latestVersion: ver.latestVersion, title: ver.artifactTitle };
  }

  /** The parsed `workbook.json` of a version (cached by file id) and its sheets as {@link SheetInfo}. */
  private async sheetsOf(ver: Awaited<ReturnType<ArtifactStore["version"]>>): Promise<{ workbook: Workbook; sheets: SheetInfo[] }> {
    if (ver.kind !== "sheet") throw new ApiError("not_found", `Artifact ${ver.artifactId} is a ${ver.kind}, not a sheet`);
    const workbookId = ver.files.find((f) => f.path === "workbook.json")!.file.id;
    let workbook = WORKBOOKS.get(workbookId);
    if (!workbook) {
      workbook = v.parse(WorkbookSchema, JSON.parse(await this.files.text(workbookId)));
      WORKBOOKS.set(workbookId, workbook);
      if (WORKBOOKS.size > 256) WORKBOOKS.delete(WORKBOOKS.keys().next().value!);
    }
    const outline = (ver.outline as VersionOutline).sheets ?? [];
    const sheets = workbook.sheets.map((sheet): SheetInfo => {
      const seen = outline.find((s) => s.name === sheet.name);
      const columns = seen?.columns ?? [];
      const declared = sheet.columns as Record<string, Parameters<typeof normalizeColumnType>[0]>;
      return {
        name: sheet.name,
        frozenRows: sheet.frozenRows,
        frozenColumns: sheet.frozenColumns,
        widths: { ...sheet.widths },
        columns,
        types: Object.fromEntries(columns.map((c) => [c, normalizeColumnType(declared[c]) as CellType])),
        total: seen?.rows ?? 0,
      };
    });
    return { workbook, sheets };
  }

  /**
   * A sheet's header and data rows (raw CSV values), parsed once per file and cached.
   *
   * @throws {ApiError} not_found as {@link SheetData.workbook}, or for a sheet the workbook does not have
   *   (the message lists its sheets)
   */
  async table(reader: ArtifactReader, artifactId: string, version: number | undefined, sheetName: string): Promise<SheetTable> {
    const ver = await this.artifacts.version(reader, artifactId, version);
    if (ver.kind !== "sheet") throw new ApiError("not_found", `Artifact ${artifactId} is a ${ver.kind}, not a sheet`);
    const names = ((ver.outline as VersionOutline).sheets ?? []).map((s) => s.name);
    const file = names.includes(sheetName) ? ver.files.find((f) => f.path === `sheets/${sheetName}.csv`)?.file : undefined;
    if (!file) throw new ApiError("not_found", `Version ${ver.version} of ${artifactId} has no sheet ${JSON.stringify(sheetName)}; its sheets are: ${names.map((n) => JSON.stringify(n)).join(", ")}`, { sheets: names });
    return this.cache.get(file.id, async () => parseSheetCsv((await this.files.open(file.id)).stream));
  }

  /**
   * A page of a sheet's rows for the rows API: `limit` data rows from `offset` (0-based, below the
   * header), the columns with their types, and the total number of data rows.
   *
   * @throws {ApiError} not_found as {@link SheetData.table}
   */
  async rows(reader: ArtifactReader, artifactId: string, version: number, sheetName: string, offset: number, limit: number): Promise<SheetRows> {
    const table = await this.table(reader, artifactId, version, sheetName);
    const { sheets } = await this.sheetsOf(await this.artifacts.version(reader, artifactId, version));
    const sheet = sheets.find((s) => s.name === sheetName)!;
    return {
      sheet: sheetName,
      columns: table.columns.map((name) => ({ name, type: sheet.types[name] ?? { type: "text" } })),
      total: table.rows.length,
      offset,
      rows: table.rows.slice(offset, offset + limit),
    };
  }
}
