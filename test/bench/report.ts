/**
 * The one summary of `npm run bench` (test/bench/all.ts): each bench script appends its rows here.
 * When `BENCH_RESULTS` names a file, {@link reportRows} appends one JSON line per row to it; otherwise
 * it does nothing (a script run on its own prints its own tables as before).
 */
import fs from "node:fs";

/** One summary row: what was measured, the figure, the goal and whether the figure meets it. */
export interface BenchRow {
  /** The case, named as in issue 15's table where it is one of its rows (see `ISSUE_15_CASES` in all.ts). */
  case: string;
  /** The figure, with its unit (e.g. "646 req/s, p99 50 ms (ratio 0.029)"). */
  now: string;
  /** The goal as text ("-" for a yardstick). */
  goal: string;
  /** Whether the figure meets the goal; null when there is no goal or the figure was not measured. */
  met: boolean | null;
}

/** A row as stored: the script that wrote it added. */
export type StoredBenchRow = BenchRow & { script: string };

/**
 * Appends `rows` of `script` (e.g. "run") to the JSON Lines file `BENCH_RESULTS`, when set.
 * @throws Error when the file cannot be written
 */
export function reportRows(script: string, rows: BenchRow[]): void {
  const file = process.env.BENCH_RESULTS;
  if (!file) return;
  fs.appendFileSync(file, rows.map((row) => JSON.stringify({ script, ...row } satisfies StoredBenchRow) + "\n").join(""));
}

/** Reads the rows a run stored in `file` (missing file: none; a torn last line is skipped). */
export function readRows(file: string): StoredBenchRow[] {
  if (!fs.existsSync(file)) return [];
  return fs
    .readFileSync(file, "utf8")
    .split("\n")
    .filter(Boolean)
    .flatMap((line) => {
      try {
        return [JSON.parse(line) as StoredBenchRow];
      } catch {
        return [];
      }
    });
}

/** A number with thousands separators and `digits` decimals ("22,081"). */
export const fmt = (n: number, digits = 0): string => (Number.isFinite(n) ? n.toLocaleString("en-US", { minimumFractionDigits: digits, maximumFractionDigits: digits }) : "n/a");

/** `value < goal` (or `>=` with `atLeast`), null when the value was not measured (NaN). */
export const meets = (value: number, goal: number, atLeast = false): boolean | null => (Number.isFinite(value) ? (atLeast ? value >= goal : value < goal) : null);

/** The median of `xs` (the mean of the middle two for an even count; NaN when empty). */
export const median = (xs: readonly number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? NaN : s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

/** The `p`th percentile (0–100) of ascending `sorted`: the value at index ⌊p/100 × n⌋ (the last for 100; NaN when empty). */
export const percentile = (sorted: readonly number[], p: number): number => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;
