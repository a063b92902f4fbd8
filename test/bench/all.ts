/**
 * `npm run bench`: every bench script in turn, each in its own process (`node --import tsx`), then one
 * summary: issue 15's table (case, now, goal, met) with the machine's core count and Node version, and
 * the other scripts' rows. Each script appends its rows to the JSON Lines file `BENCH_RESULTS` (see
 * report.ts); a script that fails is reported with its exit code and the rest still run; a row no script
 * wrote shows as not measured. Exit code 1 when a script failed.
 *
 * `BENCH_SCRIPTS=run,startup` runs a subset (names of test/bench/*.ts); the scripts' own variables
 * (`BENCH_ONLY`, `BENCH_SECONDS`, `BENCH_SOAK_SECONDS`, …) pass through. `BENCH_RESULTS` keeps the
 * rows in that file (default: a temporary one).
 */
import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { readRows, type StoredBenchRow } from "./report";

const ROOT = path.resolve(import.meta.dirname, "../..");
const SCRIPTS = ["run", "runner", "wal", "streams", "files", "artifacts", "decks", "agents", "event-schedules", "datasets", "startup"];

/** Issue 15's table, in its order: the case names the scripts report them under. */
const ISSUE_15_CASES = [
  "bare h3 handler (same run, the yardstick)",
  "action runs (diagnostics.noop)",
  "signed webhook deliveries, max load",
  "webhook p99 at half load (paced)",
  "workflow runs completed",
  "workflow run start, POST -> queued",
  "intervention submit -> next node started",
  "/ws/events fan-out, 1,000 sockets, commit -> receipt",
  "GET /api/events replay",
  "first start on a fresh machine after `npm install`",
  "production start, ready (compiled, CLI cached, fresh data dir)",
  "production start, ready on restart (existing data dir)",
  "service RSS idle after start",
  "service RSS over the soak at half load",
];

const chosen = process.env.BENCH_SCRIPTS ? process.env.BENCH_SCRIPTS.split(",").map((s) => s.trim()).filter(Boolean) : SCRIPTS;
const unknown = chosen.filter((s) => !SCRIPTS.includes(s));
if (unknown.length) {
  process.stderr.write(`BENCH_SCRIPTS: no bench script ${unknown.join(", ")}; the scripts are ${SCRIPTS.join(", ")}\n`);
  process.exit(2);
}
const results = process.env.BENCH_RESULTS ? path.resolve(process.env.BENCH_RESULTS) : path.join(fs.mkdtempSync(path.join(os.tmpdir(), "svc-bench-")), "results.jsonl");
const ran: Array<{ script: string; code: number | null; seconds: number }> = [];
const started = performance.now();
for (const script of chosen) {
  process.stdout.write(`\n=== bench: ${script} (test/bench/${script}.ts)\n`);
  const t0 = performance.now();
  const code = await new Promise<number | null>((resolve) => {
    const child = spawn(process.execPath, ["--import", "tsx", `test/bench/${script}.ts`], { cwd: ROOT, env: { ...process.env, BENCH_RESULTS: results }, stdio: "inherit" });
    child.once("error", () => resolve(null));
    child.once("exit", (c, signal) => resolve(signal ? null : c));
  });
  ran.push({ script, code, seconds: (performance.now() - t0) / 1000 });
  if (code !== 0) process.stdout.write(`\n=== bench: ${script} FAILED (exit ${code ?? "signal"}); going on with the rest\n`);
}

const rows = readRows(results);
const byCase = new Map<string, StoredBenchRow>(rows.map((r) => [r.case, r]));
const met = (r: StoredBenchRow | undefined) => (!r ? "not measured" : r.met === null ? "-" : r.met ? "yes" : "NO");
const cell = (s: string) => s.replace(/\|/g, "\\|");
const out: string[] = [];
out.push(`\n## svc bench summary: ${os.cpus().length} cores (${os.cpus()[0]?.model ?? "unknown cpu"}), Node ${process.version}, ${new Date().toISOString()}`);
out.push(`\nIssue 15:\n\n| case | now | goal | met |\n|---|---:|---:|---|`);
for (const name of ISSUE_15_CASES) {
  const r = byCase.get(name);
  out.push(`| ${cell(name)} | ${r ? cell(r.now) : "not measured (see the scripts' status below)"} | ${r ? cell(r.goal) : ""} | ${met(r)} |`);
}
const others = rows.filter((r) => !ISSUE_15_CASES.includes(r.case));
if (others.length) {
  out.push(`\nOther benchmarks:\n\n| script | case | now | goal | met |\n|---|---|---:|---:|---|`);
  for (const r of others) out.push(`| ${r.script} | ${cell(r.case)} | ${cell(r.now)} | ${cell(r.goal)} | ${met(r)} |`);
}
out.push(`\nScripts: ${ran.map((r) => `${r.script} ${r.code === 0 ? "ok" : `FAILED (exit ${r.code ?? "signal"})`} ${r.seconds.toFixed(0)} s`).join(", ")}; total ${((performance.now() - started) / 60_000).toFixed(1)} min. Rows: ${results}\n`);
process.stdout.write(out.join("\n") + "\n");
process.exit(ran.every((r) => r.code === 0) ? 0 : 1);
