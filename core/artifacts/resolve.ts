/**
 * What an artifact address points at (spec 2.7, 4.3, 9): one resolver for the API, the publisher's
 * checks, the pages and the agents. It answers what the target is, or says exactly what is missing and
 * what the target has instead.
 */
import * as v from "valibot";
import GithubSlugger from "github-slugger";
import { ApiError } from "../errors";
import { formatAddress, type ArtifactAddress } from "./address";
import { columnLetter, formatRange, type CellRange } from "./cell-range";
import type { ArtifactKind, Section } from "./content";
import type { FileReference } from "../sdk/context";

/** What a version's content offers to addresses: filled at publish time, stored with the version. */
export interface VersionOutline {
  title?: string;
  lede?: string;
  /** Documents: `##` and `###` headings (spec 2.9). */
  sections?: Section[];
  /** Sheets: each sheet's columns (header row) and data rows. */
  sheets?: Array<{ name: string; columns: string[]; rows: number }>;
  /** Sheets: charts by name. */
  charts?: Array<{ name: string; sheet: string; type?: string; title?: string }>;
  /** Decks: slides, numbered from 1. */
  slides?: Array<{ number: number; title?: string }>;
  /**
   * The colour mode the version's `theme.json` pins (spec 2.11), null when it pins none or has no theme;
   * undefined in versions published before svc kept it here (2026-11-29): read their `theme.json`.
   */
  themeMode?: "light" | "dark" | null;
  /** Decks: the deck check (spec 4.3): each slide's screenshot, or why it was not checked. */
  checks?: { checked: true; slides: Array<{ number: number; screenshot: FileReference }> } | { checked: false; reason: string };
}

/** A version as the resolver needs it. */
export interface ResolvableVersion {
  artifactId: string;
  kind: ArtifactKind;
  title: string;
  version: number;
  latestVersion: number;
  files: Array<{ path: string; file: FileReference }>;
  outline: VersionOutline;
}

/** What an address points at, for a reader who may open it. */
export const ResolutionSchema = v.object({
  address: v.string(),
  artifact: v.object({ id: v.string(), kind: v.string(), title: v.string(), latestVersion: v.number() }),
  version: v.number(),
  /** `latest`: the address has no `@<version>` and follows the newest; `fixed`: it stays on `version`. */
  follows: v.picklist(["latest", "fixed"]),
  file: v.optional(v.object({ path: v.string(), contentType: v.string(), size: v.number() })),
  part: v.optional(
    v.variant("kind", [
      v.object({ kind: v.literal("sheet"), sheet: v.string(), columns: v.array(v.string()), rows: v.number() }),
      v.object({ kind: v.literal("range"), sheet: v.string(), range: v.string(), columns: v.array(v.string()), rows: v.array(v.number()) }),
      v.object({ kind: v.literal("chart"), chart: v.string(), sheet: v.string() }),
      v.object({ kind: v.literal("section"), slug: v.string(), title: v.string() }),
      v.object({ kind: v.literal("slide"), number: v.number(), title: v.optional(v.string()) }),
    ]),
  ),
});
export type Resolution = v.InferOutput<typeof ResolutionSchema>;

const list = (names: readonly string[], max = 12) => (names.length === 0 ? "none" : names.slice(0, max).join(", ") + (names.length > max ? `, … (${names.length} in all)` : ""));
const missing = (message: string, has: readonly string[]) => new ApiError("not_found", message, { has: [...has] });

/**
 * Resolves the part and file an address names within `target` (the version it selects). Sheets take a
 * bare name as a sheet, documents as a heading slug, decks as a slide number.
 * @throws {ApiError} not_found naming what is missing and what the target has instead (`details.has`)
 */
export function resolveWithin(address: ArtifactAddress, target: ResolvableVersion): Resolution {
  const at = `artifact ${target.artifactId}${address.version ? ` version ${target.version}` : ""}`;
  const out: Resolution = {
    address: formatAddress(address),
    artifact: { id: target.artifactId, kind: target.kind, title: target.title, latestVersion: target.latestVersion },
    version: target.version,
    follows: address.version === undefined ? "latest" : "fixed",
  };
  if (address.file !== undefined) {
    const entry = target.files.find((f) => f.path === address.file);
    if (!entry) throw missing(`${at} has no file "${address.file}"; its files are: ${list(target.files.map((f) => f.path))}`, target.files.map((f) => f.path));
    out.file = { path: entry.path, contentType: entry.file.contentType, size: entry.file.size };
  }
  const part = address.part;
  if (!part) return out;
  const sheets = target.outline.sheets ?? [];
  const sheetNamed = (name: string) => {
    if (target.kind !== "sheet") throw missing(`${at} is a ${target.kind}, which has no sheets`, []);
    const sheet = sheets.find((s) => s.name === name);
    if (!sheet) throw missing(`${at} has no sheet "${name}"; its sheets are: ${list(sheets.map((s) => s.name))}`, sheets.map((s) => s.name));
    return sheet;
  };
  switch (part.kind) {
    case "chart": {
      const charts = target.outline.charts ?? [];
      const chart = charts.find((c) => c.name === part.chart);
      if (!chart) throw missing(`${at} has no chart "${part.chart}"; its charts are: ${list(charts.map((c) => c.name))}`, charts.map((c) => c.name));
      out.part = { kind: "chart", chart: chart.name, sheet: chart.sheet };
      return out;
    }
    case "range": {
      const sheet = sheetNamed(part.sheet);
      const range: CellRange = part.range;
      const lastColumn = Math.max(range.start.column, range.end.column);
      if (lastColumn >= sheet.columns.length) {
        throw missing(`${at} sheet "${sheet.name}" has columns A to ${columnLetter(Math.max(0, sheet.columns.length - 1))} (${list(sheet.columns)}), not ${columnLetter(lastColumn)}`, sheet.columns);
      }
      const lastRow = Math.max(range.start.row ?? 1, range.end.row ?? 1);
      if (lastRow > sheet.rows + 1) throw missing(`${at} sheet "${sheet.name}" has rows 1 to ${sheet.rows + 1} (row 1 is the header), not ${lastRow}`, []);
      const first = Math.min(range.start.column, range.end.column);
      const rowFrom = range.start.row === undefined ? 1 : Math.min(range.start.row, range.end.row ?? range.start.row);
      const rowTo = range.start.row === undefined ? sheet.rows + 1 : Math.max(range.start.row, range.end.row ?? range.start.row);
      out.part = { kind: "range", sheet: sheet.name, range: formatRange(range), columns: sheet.columns.slice(first, lastColumn + 1), rows: [rowFrom, rowTo] };
      return out;
    }
    case "name": {
      if (target.kind === "sheet") {
        const sheet = sheetNamed(part.name);
        out.part = { kind: "sheet", sheet: sheet.name, columns: sheet.columns, rows: sheet.rows };
        return out;
      }
      if (target.kind === "slides") {
        const slides = target.outline.slides ?? [];
        const n = /^[1-9]\d*$/.test(part.name) ? Number(part.name) : NaN;
        const slide = slides.find((s) => s.number === n);
        if (!slide) throw missing(`${at} has no slide "${part.name}"; its slides are 1 to ${slides.length}`, slides.map((s) => String(s.number)));
        out.part = { kind: "slide", number: slide.number, ...(slide.title ? { title: slide.title } : {}) };
        return out;
      }
      if (target.kind === "document") {
        const sections = target.outline.sections ?? [];
        const section = sections.find((s) => s.slug === part.name);
        // the title's heading (the first `#`) is the whole document: its slug addresses that, as its anchor on the page does
        if (!section && target.outline.title !== undefined && new GithubSlugger().slug(target.outline.title) === part.name) return out;
        if (!section) throw missing(`${at} has no section "${part.name}"; its sections are: ${list(sections.map((s) => s.slug))}`, sections.map((s) => s.slug));
        out.part = { kind: "section", slug: section.slug, title: section.title };
        return out;
      }
      throw missing(`${at} is a file artifact: it has no parts`, []);
    }
  }
}
