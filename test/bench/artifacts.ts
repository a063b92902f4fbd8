/**
 * Sheet validation benchmark (part of `npm run bench`): a 100,000-row x 20-column sheet (every column
 * type; BENCH_SHEET_ROWS to change the rows) validated by `validateWorkbook`, next to csv-parse alone
 * parsing the same bytes in the same run, with the ratio (goal >= 0.5), and the peak RSS growth during
 * validation, sampled every 10 ms by a worker thread (so sampling goes on while the main thread is busy).
 * The CSV bytes are made once and handed out in 64 KiB slices (no copies), as a file stream would.
 */
import os from "node:os";
import { Readable } from "node:stream";
import v8 from "node:v8";
import vm from "node:vm";
import { Worker } from "node:worker_threads";
import { parse } from "csv-parse";
import { CSV_PARSE_OPTIONS, validateWorkbook } from "../../core/artifacts/workbook";

const ROWS = Number(process.env.BENCH_SHEET_ROWS ?? 100_000);
const RUNS = Number(process.env.BENCH_SHEET_RUNS ?? 3);
const CHUNK = 64 * 1024;

v8.setFlagsFromString("--expose-gc");
const gc = vm.runInNewContext("gc") as () => void;

// 20 columns: every type, numbers the most common, as a real sheet would have.
const columns: Record<string, unknown> = {
  Date: "date", Units: "number", Price: { type: "currency", currency: "USD" }, Revenue: { type: "currency", currency: "USD" },
  Cost: { type: "currency", currency: "EUR" }, Margin: { type: "percent", decimals: 1 }, Growth: "percent", Share: { type: "percent" },
  Score: "number", Weight: "number", Count: "number", Delta: "number", Ratio: "number", Opened: "date",
  Region: "text", Owner: "text", Notes: "text", Site: "link", Source: "link", Logo: "image",
};
const names = Object.keys(columns);
const cell = (c: number, r: number): string => {
  switch (names[c]) {
    case "Date": return `2025-${String((r % 12) + 1).padStart(2, "0")}-${String((r % 28) + 1).padStart(2, "0")}`;
    case "Opened": return r % 7 === 0 ? "" : `2024-02-${String((r % 29) + 1).padStart(2, "0")}`;
    case "Units": case "Count": return String(r % 9973);
    case "Price": case "Revenue": case "Cost": return `${(r * 7) % 100000}.${String(r % 100).padStart(2, "0")}`;
    case "Margin": case "Growth": case "Share": return `0.${String((r * 13) % 1000).padStart(3, "0")}`;
    case "Score": case "Weight": return `${r % 2 ? "-" : ""}${(r % 500) / 4}`;
    case "Delta": return `${(r % 90) + 1}e-${r % 5}`;
    case "Ratio": return `${(r % 1000) / 1000}`;
    case "Region": return ["North", "South", "East", "West"][r % 4]!;
    case "Owner": return `owner${r % 311}`;
    case "Notes": return r % 10 === 0 ? `"note, with comma ${r}"` : `note ${r}`;
    case "Site": return `https://example.com/p/${r}`;
    case "Source": return r % 2 ? `https://data.example.org/s?id=${r}` : `artifact:art_01ABC@2/sheets/Main.csv#Main!A${(r % 100) + 2}`;
    case "Logo": return `images/logo-${r % 8}.png`;
    default: return "";
  }
};
const parts: string[] = [names.join(",") + "\n"];
for (let r = 0; r < ROWS; r++) {
  let line = "";
  for (let c = 0; c < names.length; c++) line += (c ? "," : "") + cell(c, r);
  parts.push(line + "\n");
}
const bytes = Buffer.from(parts.join(""));
parts.length = 0;
const stream = () => Readable.from((function* () { for (let i = 0; i < bytes.length; i += CHUNK) yield bytes.subarray(i, i + CHUNK); })(), { objectMode: false });
const images = new Set(Array.from({ length: 8 }, (_, i) => `images/logo-${i}.png`));

// A worker samples the process's RSS every 10 ms, whatever the main thread is doing.
const sampler = new Worker(
  `const { parentPort } = require("node:worker_threads");
   let peak = 0;
   const tick = () => { const rss = process.memoryUsage.rss(); if (rss > peak) peak = rss; };
   setInterval(tick, 10);
   parentPort.on("message", (m) => { tick(); parentPort.postMessage(peak); if (m === "reset") peak = 0; });`,
  { eval: true },
);
const ask = (m: "reset" | "peak") => new Promise<number>((resolve) => { sampler.once("message", resolve); sampler.postMessage(m); });

async function parseOnly(): Promise<number> {
  let records = 0;
  await new Promise<void>((resolve, reject) => {
    const parser = parse(CSV_PARSE_OPTIONS);
    parser.on("data", () => records++);
    parser.on("end", resolve);
    parser.on("error", reject);
    stream().pipe(parser);
  });
  return records - 1;
}
async function validate() {
  const result = await validateWorkbook({
    workbookJson: { sheets: [{ name: "Main", columns }] },
    openCsv: async (path) => (path === "sheets/Main.csv" ? stream() : null),
    hasImage: (path) => images.has(path),
    isArtifactAddress: (value) => value.startsWith("artifact:"),
  });
  if (!result.ok) throw new Error(`the bench sheet was refused: ${result.problems[0]?.message}`);
  return result.sheets[0]!.rows;
}
async function timed<T>(fn: () => Promise<T>): Promise<{ ms: number; value: T }> {
  gc();
  const started = process.hrtime.bigint();
  const value = await fn();
  return { ms: Number(process.hrtime.bigint() - started) / 1e6, value };
}

console.log(`sheet validation: ${os.cpus().length} cores, Node ${process.version}, ${ROWS.toLocaleString("en-US")} rows x ${names.length} columns, ${(bytes.length / 1024 / 1024).toFixed(1)} MiB of CSV`);
// The first validation runs cold (nothing has grown the heap yet), so its RSS growth is the honest one.
gc();
await new Promise((r) => setTimeout(r, 50));
const coldBase = await ask("reset");
await validate();
const coldGrowth = (await ask("peak")) - coldBase;
await parseOnly(); // warm-up
const parseMs: number[] = [];
const validateMs: number[] = [];
let rssGrowth = 0;
for (let i = 0; i < RUNS; i++) {
  const p = await timed(parseOnly);
  if (p.value !== ROWS) throw new Error(`csv-parse read ${p.value} rows`);
  parseMs.push(p.ms);
  gc();
  await new Promise((r) => setTimeout(r, 50));
  const base = await ask("reset");
  const v = await timed(validate);
  rssGrowth = Math.max(rssGrowth, (await ask("peak")) - base);
  if (v.value !== ROWS) throw new Error(`validation read ${v.value} rows`);
  validateMs.push(v.ms);
}
await sampler.terminate();
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const parseRate = ROWS / (median(parseMs) / 1000);
const validateRate = ROWS / (median(validateMs) / 1000);
const fmt = (n: number) => Math.round(n).toLocaleString("en-US");
console.log(`  csv-parse alone      ${fmt(parseRate).padStart(9)} rows/s  (median of ${RUNS}: ${median(parseMs).toFixed(0)} ms)`);
console.log(`  validateWorkbook     ${fmt(validateRate).padStart(9)} rows/s  (median of ${RUNS}: ${median(validateMs).toFixed(0)} ms)`);
console.log(`  ratio                ${(validateRate / parseRate).toFixed(2)}  (goal >= 0.5) ${validateRate / parseRate >= 0.5 ? "met" : "MISSED"}`);
const mib = (n: number) => `${(Math.max(0, n) / 1024 / 1024).toFixed(1)} MiB`;
console.log(`  peak RSS growth during validation: ${mib(coldGrowth)} on the first (cold) run, ${mib(rssGrowth)} on the timed runs (CSV ${mib(bytes.length)}, sampled every 10 ms)`);

// the one summary (test/bench/all.ts)
const { reportRows } = await import("./report");
reportRows("artifacts", [{ case: `sheet validation, ${ROWS.toLocaleString("en-US")} rows (validateWorkbook / csv-parse alone)`, now: `${fmt(validateRate)} rows/s (ratio ${(validateRate / parseRate).toFixed(2)})`, goal: "ratio >= 0.5", met: validateRate / parseRate >= 0.5 }]);

// the sheet grid's frame times in Chromium, next to a plain scroll box of the same run (test/bench/sheet-grid.ts)
const { benchSheetGrid } = await import("./sheet-grid");
const grid = await benchSheetGrid();
reportRows("artifacts", [{ case: "sheet grid, jump + 2 frames, median (plain scroll box, same run)", now: `${grid.jump.median} ms (plain ${grid.yardstick.jump.median} ms); wheel gaps p95 ${grid.wheel.p95} ms (plain ${grid.yardstick.wheel.p95} ms)`, goal: "median < 200 ms, wheel p95 < 200 ms", met: grid.jump.median < 200 && grid.wheel.p95 < 200 }]);
