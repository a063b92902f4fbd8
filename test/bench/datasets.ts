/**
 * Dataset benchmark (part of `npm run bench`): BENCH_DATASET_ROWS (default 100,000) rows of the
 * sandbox's `price-list` committed as one snapshot (validation, staging and the commit timed apart),
 * then projected into `product` objects by the projector (chunks of `SVC_PROJECTION_CHUNK_ROWS`,
 * default 500, each one SQLite transaction with its object events in the outbox, drained to the
 * built-in stream). Baseline, in the same run and with the same sqlite3 driver: the same rows inserted
 * with one prepared statement in one transaction into a plain table. Runs in-process on SQLite files
 * in a temporary directory; no HTTP, no Temporal.
 */
import os from "node:os";
import path from "node:path";
import pino from "pino";
import sqlite3 from "sqlite3";
import { Database } from "../../core/store/db";
import { SqliteEventStream } from "../../core/events/sqlite-stream";
import { Outbox } from "../../core/events/outbox";
import { EventLog } from "../../core/events/log";
import { ProjectRegistry } from "../../core/project/registry";
import { OntologyStore } from "../../core/ontology/store";
import { FileStore } from "../../core/files/file-store";
import { LocalBlobStore } from "../../core/files/local-blob-store";
import { DatasetStore } from "../../core/datasets/store";
import { DatasetProjector } from "../../core/datasets/projector";
import { Lifecycle } from "../../core/lifecycle";
import { loadConfig } from "../../core/config";
import { sandboxProject } from "../../sandbox/project";
import { benchDir } from "../helpers-fs";
import { Metrics } from "../../core/metrics";

const ROWS = Number(process.env.BENCH_DATASET_ROWS ?? 100_000);
const rows = Array.from({ length: ROWS }, (_, i) => ({ sku: `B-${String(i).padStart(7, "0")}`, name: `Bench item ${i}`, unitPrice: Math.round(i * 7.3) / 100, currency: "EUR", active: i % 3 !== 0 }));
const dir = benchDir("svc-bench-datasets-");
const seconds = (from: bigint) => Number(process.hrtime.bigint() - from) / 1e9;

// baseline: one prepared INSERT, one transaction, same driver, same pragmas as the store
const baselineSeconds = await new Promise<number>((resolve, reject) => {
  const db = new sqlite3.Database(path.join(dir, "baseline.db"));
  db.exec("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; CREATE TABLE rows (row_key TEXT PRIMARY KEY, data TEXT NOT NULL) WITHOUT ROWID;", (err) => {
    if (err) return reject(err);
    const started = process.hrtime.bigint();
    db.serialize(() => {
      db.run("BEGIN");
      const stmt = db.prepare("INSERT INTO rows (row_key, data) VALUES (?, ?)");
      for (const r of rows) stmt.run(r.sku, JSON.stringify(r));
      stmt.finalize();
      db.run("COMMIT", (e) => (e ? reject(e) : resolve(seconds(started))));
    });
  });
});

const log = pino({ level: "warn" });
const db = await Database.open(path.join(dir, "svc.db"));
const stream = await SqliteEventStream.open(db);
const outbox = new Outbox(db, stream, log);
const project = new ProjectRegistry(sandboxProject);
const events = new EventLog(db, outbox, stream, project, log, new Metrics());
const files = new FileStore(db, await LocalBlobStore.open(path.join(dir, "blobs")));
const ontology = new OntologyStore(db, events, project, files);
const lifecycle = new Lifecycle();
const config = loadConfig({ ...process.env, SVC_DATA_DIR: dir, SVC_OUTBOX_RECOVERY_MS: "3600000" });
const datasets = new DatasetStore(db, events, project, files, config);
const projector = new DatasetProjector(db, events, stream, ontology, project, lifecycle, log, config);

let started = process.hrtime.bigint();
const staged = datasets.checkRows("price-list", rows);
const validateSeconds = seconds(started);
started = process.hrtime.bigint();
const version = await datasets.commitVersion("price-list", { transaction: "snapshot", rows: staged, source: { kind: "bench" } });
const commitSeconds = seconds(started);
started = process.hrtime.bigint();
await projector.start();
const projectSeconds = seconds(started);
const state = await projector.state(project.dataset("price-list"));
const objects = (await db.get<{ n: number }>("SELECT COUNT(*) AS n FROM objects WHERE object_type_id = 'product'"))!.n;
const stored = (await db.get<{ n: number }>("SELECT COUNT(*) AS n FROM events WHERE type = 'object.created'"))!.n;
await projector.stop();
await lifecycle.stopTimers();
await outbox.drain();
await db.close();
if (state?.projectedVersion !== version.version || objects !== ROWS || stored !== ROWS) throw new Error(`projection incomplete: version ${state?.projectedVersion}/${version.version}, ${objects} objects, ${stored} events for ${ROWS} rows`);

const rate = (s: number) => Math.round(ROWS / s).toLocaleString("en-US");
console.log(`datasets: ${ROWS.toLocaleString("en-US")}-row snapshot of price-list, chunks of ${config.projectionChunkRows} rows (Node ${process.version}, ${os.cpus().length} cores)`);
console.log(`  baseline, one prepared INSERT in one transaction: ${baselineSeconds.toFixed(2)} s (${rate(baselineSeconds)} rows/s)`);
console.log(`  validate rows:                                   ${validateSeconds.toFixed(2)} s (${rate(validateSeconds)} rows/s)`);
console.log(`  commit (stage + apply + event, one transaction): ${commitSeconds.toFixed(2)} s (${rate(commitSeconds)} rows/s, ${(commitSeconds / baselineSeconds).toFixed(1)}× the baseline)`);
console.log(`  project into objects (+ object.created events):  ${projectSeconds.toFixed(2)} s (${rate(projectSeconds)} rows/s, ${(projectSeconds / baselineSeconds).toFixed(1)}× the baseline)`);

// the one summary (test/bench/all.ts)
const { reportRows } = await import("./report");
reportRows("datasets", [
  { case: `dataset commit, ${ROWS.toLocaleString("en-US")}-row snapshot`, now: `${rate(commitSeconds)} rows/s (${(commitSeconds / baselineSeconds).toFixed(1)}× the prepared-INSERT baseline)`, goal: "-", met: null },
  { case: "dataset projection into objects", now: `${rate(projectSeconds)} rows/s (${(projectSeconds / baselineSeconds).toFixed(1)}× the baseline)`, goal: "-", met: null },
]);
