/**
 * WAL pages per request, by table and index: what each action run (`POST /api/actions/diagnostics.noop`)
 * and each signed Standard Webhooks delivery writes to SQLite's write-ahead log, one request at a time
 * (no group commit: the most a request can cost). Every page a transaction changes is one 4 KiB frame
 * of the WAL at its commit, and the checkpointer copies each frame back into the database file, so
 * these pages are the write path's I/O (issue 15: the half-load tail follows the checkpoints' size).
 *
 * How: the app runs as in run.ts (compiled unless `BENCH_APP=tsx`) on a data dir of ours; after a
 * warm-up, a read transaction on a connection of ours pins the WAL (SQLite cannot rewind it past a
 * reader), `BENCH_WAL_REQUESTS` requests (default 200) go one after another, and the frames written
 * meanwhile are read from the WAL file: each frame's header names its page, `dbstat` names the table or
 * index that page belongs to. The WAL's salt is checked before and after (a rewind would have reused
 * frames: the script fails rather than print a short count).
 */
import fs from "node:fs";
import path from "node:path";
import sqlite3 from "sqlite3";
import { Webhook } from "standardwebhooks";
import { SANDBOX_DEV_TOKEN, SANDBOX_WEBHOOK_SECRETS } from "../../sandbox/project";
import { benchDir } from "../helpers-fs";
import { reportRows } from "./report";
import { BENCH_APP, startBenchServer } from "./server-process";

const requests = Number(process.env.BENCH_WAL_REQUESTS ?? 200);
const dataDir = benchDir("svc-bench-wal-");
const file = path.join(dataDir, "svc.db");
console.log(`\nsvc bench wal: WAL pages per request, ${requests} requests one at a time, node ${process.version}, servers ${BENCH_APP} (BENCH_APP)\n`);
const app = await startBenchServer("app", { SVC_DATA_DIR: dataDir });

const signer = new Webhook(SANDBOX_WEBHOOK_SECRETS.standardWebhooks);
const kinds: Record<"action run" | "webhook delivery", () => Promise<Response>> = {
  "action run": () => fetch(`${app.url}/api/actions/diagnostics.noop`, { method: "POST", headers: { "content-type": "application/json", authorization: `Bearer ${SANDBOX_DEV_TOKEN}` }, body: JSON.stringify({ params: {} }) }),
  "webhook delivery": () => {
    const id = `msg_${crypto.randomUUID()}`;
    const at = new Date();
    const body = JSON.stringify({ type: "bench.ping", data: { id } });
    return fetch(`${app.url}/api/webhooks/standard-webhooks/events`, { method: "POST", headers: { "content-type": "application/json", "webhook-id": id, "webhook-timestamp": String(Math.floor(at.getTime() / 1000)), "webhook-signature": signer.sign(id, at, body) }, body });
  },
};
const send = async (kind: keyof typeof kinds) => {
  const res = await kinds[kind]();
  await res.arrayBuffer();
  if (res.status >= 300) throw new Error(`${kind}: HTTP ${res.status}`);
};

const open = (mode: number) => new Promise<sqlite3.Database>((resolve, reject) => { const db = new sqlite3.Database(file, mode, (err) => (err ? reject(err) : resolve(db))); });
const query = <T>(db: sqlite3.Database, sql: string) => new Promise<T[]>((resolve, reject) => db.all(sql, (err, rows) => (err ? reject(err) : resolve(rows as T[]))));
const exec = (db: sqlite3.Database, sql: string) => new Promise<void>((resolve, reject) => db.exec(sql, (err) => (err ? reject(err) : resolve())));

/** The WAL's frames now: each one's page number and whether it ends a transaction; and the WAL's salt. */
function walFrames(): { salt: string; frames: Array<{ page: number; commit: boolean }> } {
  const wal = fs.readFileSync(`${file}-wal`);
  const pageSize = wal.readUInt32BE(8);
  const frames = [];
  for (let at = 32; at + 24 + pageSize <= wal.length; at += 24 + pageSize) {
    // a frame of the current WAL carries the header's salt; older ones past the end do not
    if (!wal.subarray(at + 8, at + 16).equals(wal.subarray(16, 24))) break;
    frames.push({ page: wal.readUInt32BE(at), commit: wal.readUInt32BE(at + 4) !== 0 });
  }
  return { salt: wal.subarray(16, 24).toString("hex"), frames };
}

const rows: Array<{ kind: string; perRequest: number; commits: number; byOwner: Array<[string, number]> }> = [];
try {
  for (const kind of Object.keys(kinds) as Array<keyof typeof kinds>) {
    for (let i = 0; i < 50; i++) await send(kind); // warm-up: caches, first pages of each table
    await new Promise((r) => setTimeout(r, 500)); // the drains after the last ones
    await send(kind); // a commit just now, so the pin below reads from the WAL, not the database file
    const pin = await open(sqlite3.OPEN_READONLY);
    await exec(pin, "BEGIN");
    await query(pin, "SELECT COUNT(*) FROM meta");
    const before = walFrames();
    for (let i = 0; i < requests; i++) await send(kind);
    await new Promise((r) => setTimeout(r, 500));
    const after = walFrames();
    await exec(pin, "COMMIT");
    await new Promise<void>((resolve) => pin.close(() => resolve()));
    // (a pin taken just as a checkpoint pass had copied everything back reads the database file and holds nothing: run it again)
    if (after.salt !== before.salt) throw new Error(`the WAL was rewound while ${kind}s were measured: its frames cannot be counted (run the script again)`);
    const written = after.frames.slice(before.frames.length);
    const reader = await open(sqlite3.OPEN_READONLY);
    const owners = new Map((await query<{ name: string; pageno: number; pagetype: string }>(reader, "SELECT name, pageno, pagetype FROM dbstat")).map((r) => [r.pageno, r.pagetype === "internal" ? `${r.name} (interior)` : r.name]));
    await new Promise<void>((resolve) => reader.close(() => resolve()));
    const byOwner = new Map<string, number>();
    for (const f of written) {
      const owner = f.page === 1 ? "page 1 (database header)" : (owners.get(f.page) ?? "(freed since)");
      byOwner.set(owner, (byOwner.get(owner) ?? 0) + 1);
    }
    rows.push({ kind, perRequest: written.length / requests, commits: written.filter((f) => f.commit).length / requests, byOwner: [...byOwner].sort((a, b) => b[1] - a[1]) });
  }
} finally {
  await app.stop(); // also when a request or the count failed: the app and its Temporal dev server go
}

for (const r of rows) {
  console.log(`${r.kind}: ${r.perRequest.toFixed(2)} WAL pages (${((r.perRequest * 4096) / 1024).toFixed(0)} KiB) and ${r.commits.toFixed(2)} commits per request`);
  for (const [owner, n] of r.byOwner) console.log(`  ${(n / requests).toFixed(2).padStart(6)}  ${owner}`);
}
reportRows(
  "wal",
  rows.map((r) => ({ case: `WAL pages per ${r.kind}, one at a time`, now: `${r.perRequest.toFixed(2)} pages in ${r.commits.toFixed(2)} commits (top: ${r.byOwner.slice(0, 3).map(([o, n]) => `${o} ${(n / requests).toFixed(2)}`).join(", ")})`, goal: "-", met: null })),
);
process.exit(0);
