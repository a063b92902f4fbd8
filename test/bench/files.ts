/**
 * File benchmarks (part of `npm run bench`). The same 25 MiB file (a `%PDF-` header, then random
 * bytes) goes through the sandbox app and through a bare `node:http` handler that streams bodies to
 * and from disk (test/bench/server.ts `bare-files`), each in its own process, measured in the same run
 * with the same client and interleaved (bare, app, bare, app, …) so both see the same machine state:
 *
 * 1. Upload, `POST /api/files`: multipart/form-data with one file part, sent by Node's global fetch
 *    (FormData + Blob); bare: the same multipart body to `POST /upload`, written to a file as it comes.
 * 2. Upload through tus, `/api/files/uploads`, with tus-js-client (BENCH_TUS_CHUNK_MIB MiB chunks,
 *    default 8), next to the same bare `POST /upload`. Probed first with `OPTIONS /api/files/uploads`:
 *    reported as not available when the endpoint is not there.
 * 3. Download: the file attached to invoice inv_1001 (`invoice.attach-pdf`), read whole through
 *    `GET /api/objects/invoice/inv_1001/files/content?path=/properties/pdf`; bare: `GET /download`.
 * 4. Peak RSS of the target's process (VmRSS from /proc/<pid>/status every 20 ms) during 8 concurrent
 *    25 MiB uploads, against its idle RSS just before (median of 1 s of samples, after one upload
 *    warmed the code up), cross-checked by the kernel's high-water mark VmHWM; the bare handler's
 *    figures alongside. Measured first, before the throughput cases.
 *
 * Throughput = file bytes / wall time from sending the request to reading the whole answer, median of
 * BENCH_FILE_REPS (default 11) repetitions after one warm-up each. MB = 10^6 bytes. The client shares
 * the machine's cores with the targets.
 */
import crypto from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import * as tus from "tus-js-client";
import { SANDBOX_DEV_TOKEN } from "../../sandbox/project";
import { benchDir } from "../helpers-fs";
import { median, reportRows } from "./report";
import { BENCH_APP, startBenchServer } from "./server-process";

const REPS = Number(process.env.BENCH_FILE_REPS ?? 11);
const TUS_CHUNK = Number(process.env.BENCH_TUS_CHUNK_MIB ?? 8) * 1024 * 1024;
const SIZE = 25 * 1024 * 1024;
const CONCURRENT = 8;
const MB = 1e6;
const auth = { authorization: `Bearer ${SANDBOX_DEV_TOKEN}` };

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const mbps = (ms: number) => SIZE / MB / (ms / 1000);

const bytes = crypto.randomBytes(SIZE);
bytes.write("%PDF-1.7\n", 0, "latin1");
const blob = new Blob([bytes], { type: "application/pdf" });
const work = benchDir("svc-bench-files-");
const downloadFile = path.join(work, "bench.pdf");
fs.writeFileSync(downloadFile, bytes);

/** Sends the file as multipart/form-data (one file part) with fetch; answers the elapsed ms and the JSON answer. */
async function uploadMultipart(url: string, headers: Record<string, string> = {}): Promise<{ ms: number; body: any }> {
  const form = new FormData();
  form.append("file", blob, "bench.pdf");
  const t0 = performance.now();
  const res = await fetch(url, { method: "POST", body: form, headers });
  const body = await res.json();
  const ms = performance.now() - t0;
  if (!res.ok) throw new Error(`POST ${url}: ${res.status} ${JSON.stringify(body)}`);
  return { ms, body };
}

/** Reads a whole GET answer as it streams, checking its length; answers the elapsed ms. */
async function download(url: string, headers: Record<string, string> = {}): Promise<number> {
  const t0 = performance.now();
  const res = await fetch(url, { headers });
  if (!res.ok || !res.body) throw new Error(`GET ${url}: ${res.status} ${await res.text()}`);
  let n = 0;
  for await (const chunk of res.body) n += chunk.length;
  const ms = performance.now() - t0;
  if (n !== SIZE) throw new Error(`GET ${url}: ${n} bytes, expected ${SIZE}`);
  return ms;
}

/** Uploads the file through tus with tus-js-client; answers the elapsed ms from creation to the last PATCH. */
function uploadTus(endpoint: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const upload = new tus.Upload(bytes, {
      endpoint,
      chunkSize: TUS_CHUNK,
      retryDelays: [],
      headers: auth,
      metadata: { filename: "bench.pdf", name: "bench.pdf", filetype: "application/pdf", contentType: "application/pdf" },
      onSuccess: () => resolve(performance.now() - t0),
      onError: reject,
    });
    upload.start();
  });
}

/** A `kB` field of /proc/<pid>/status (VmRSS, VmHWM) in bytes. */
function vm(pid: number, field: "VmRSS" | "VmHWM"): number {
  const m = new RegExp(`${field}:\\s+(\\d+) kB`).exec(fs.readFileSync(`/proc/${pid}/status`, "utf8"));
  return Number(m![1]) * 1024;
}
const rss = (pid: number) => vm(pid, "VmRSS");

/**
 * Idle RSS (median of 1 s of samples) of `pid`, then its peak while `load` runs (and 200 ms after),
 * sampled every 20 ms. Cross-check: the kernel's high-water mark (VmHWM), reset just before the load
 * through /proc/<pid>/clear_refs, catches a spike between two samples; undefined where it cannot be reset.
 */
async function peakRss(pid: number, load: () => Promise<unknown>): Promise<{ idle: number; peak: number; hwm?: number; samples: number }> {
  const idleSamples: number[] = [];
  for (let i = 0; i < 50; i++) {
    idleSamples.push(rss(pid));
    await sleep(20);
  }
  const idle = median(idleSamples);
  let hwmReset = true;
  try {
    fs.writeFileSync(`/proc/${pid}/clear_refs`, "5");
  } catch {
    hwmReset = false;
  }
  let peak = idle;
  let samples = 0;
  const timer = setInterval(() => {
    peak = Math.max(peak, rss(pid));
    samples++;
  }, 20);
  try {
    await load();
    await sleep(200);
  } finally {
    clearInterval(timer);
  }
  return { idle, peak: Math.max(peak, rss(pid)), hwm: hwmReset ? vm(pid, "VmHWM") : undefined, samples };
}

/** Runs `bare` and `app` alternately REPS times after one warm-up each; answers both lists of ms. */
async function interleaved(bare: () => Promise<number>, app: () => Promise<number>): Promise<{ bare: number[]; app: number[] }> {
  await bare();
  await app();
  const out = { bare: [] as number[], app: [] as number[] };
  for (let i = 0; i < REPS; i++) {
    out.bare.push(await bare());
    out.app.push(await app());
  }
  return out;
}

const started = performance.now();
console.log(`\nfiles: ${SIZE / 1024 / 1024} MiB file, median of ${REPS} after a warm-up, node ${process.version}, ${os.cpus().length} cores, servers ${BENCH_APP} (BENCH_APP), storage ${process.env.SVC_FILE_STORAGE ?? "local (default)"}\n`);
const bareDir = path.join(work, "bare");
const appDir = path.join(work, "app");
fs.mkdirSync(bareDir);
fs.mkdirSync(appDir);
const [bareSrv, appSrv] = await Promise.all([startBenchServer("bare-files", { SVC_DATA_DIR: bareDir, BENCH_DOWNLOAD_FILE: downloadFile }), startBenchServer("app", { SVC_DATA_DIR: appDir })]);

try {
  const bareUpload = () => uploadMultipart(`${bareSrv.url}/upload`).then((r) => {
    if (r.body.size < SIZE) throw new Error(`bare upload wrote ${r.body.size} bytes`);
    return r.ms;
  });
  const appUpload = () => uploadMultipart(`${appSrv.url}/api/files`, auth).then((r) => {
    if (r.body.size !== SIZE) throw new Error(`app upload stored ${r.body.size} bytes`);
    return r.ms;
  });

  // 4 first, on a target that has served one upload (code loaded) and settled: memory during 8 concurrent uploads
  const { body: file } = await uploadMultipart(`${appSrv.url}/api/files`, auth);
  await bareUpload();
  await sleep(2000);
  const concurrently = (one: () => Promise<number>) => () => Promise.all(Array.from({ length: CONCURRENT }, one));
  const appMem = await peakRss(appSrv.child.pid!, concurrently(appUpload));
  const bareMem = await peakRss(bareSrv.child.pid!, concurrently(bareUpload));

  // 1. multipart upload
  const multipart = await interleaved(bareUpload, appUpload);

  // 2. tus
  const probe = await fetch(`${appSrv.url}/api/files/uploads`, { method: "OPTIONS", headers: { ...auth, "tus-resumable": "1.0.0" } });
  await probe.arrayBuffer();
  const tusAvailable = probe.status < 400 && probe.headers.has("tus-version");
  let tusFigures: { bare: number[]; app: number[] } | undefined;
  let tusNote = "not available (no /api/files/uploads)";
  if (tusAvailable) {
    try {
      tusFigures = await interleaved(bareUpload, () => uploadTus(`${appSrv.url}/api/files/uploads`));
    } catch (err) {
      tusNote = `failed: ${(err as Error).message.split("\n")[0]}`;
    }
  }

  // 3. download through the invoice that holds the file
  const attach = await fetch(`${appSrv.url}/api/actions/invoice.attach-pdf`, {
    method: "POST",
    headers: { ...auth, "content-type": "application/json" },
    body: JSON.stringify({ subject: { kind: "object", objectTypeId: "invoice", primaryId: "inv_1001" }, params: { file: { id: file.id } } }),
  });
  const run = (await attach.json()) as any;
  if (!attach.ok || run.status !== "succeeded") throw new Error(`invoice.attach-pdf: ${attach.status} ${JSON.stringify(run)}`);
  const downloads = await interleaved(
    () => download(`${bareSrv.url}/download`),
    () => download(`${appSrv.url}/api/objects/invoice/inv_1001/files/content?path=/properties/pdf`, auth),
  );

  const cell = (ms: number[]) => `${mbps(median(ms)).toFixed(1)} (${mbps(Math.max(...ms)).toFixed(0)}–${mbps(Math.min(...ms)).toFixed(0)})`;
  const row = (name: string, f: { bare: number[]; app: number[] }, goal: string) =>
    `| ${name} | ${cell(f.app)} | ${cell(f.bare)} | ${(median(f.bare) / median(f.app)).toFixed(3)} | ${goal} |`;
  const mb = (n: number) => (n / MB).toFixed(1);
  console.log(`| case (25 MiB, median of ${REPS}) | app MB/s (min–max) | bare node:http MB/s (min–max) | ratio | goal |\n|---|---:|---:|---:|---:|`);
  console.log(row("upload POST /api/files (fetch, multipart)", multipart, ">= 0.5"));
  console.log(tusFigures ? row(`upload tus /api/files/uploads (tus-js-client, ${TUS_CHUNK / 1024 / 1024} MiB chunks)`, tusFigures, ">= 0.5") : `| upload tus /api/files/uploads | ${tusNote} | | | >= 0.5 |`);
  console.log(row("download GET /api/objects/invoice/inv_1001/files/content", downloads, ">= 0.5"));
  const hwm = (m: { idle: number; hwm?: number }) => (m.hwm === undefined ? "n/a" : `${mb(m.hwm)} (+${mb(m.hwm - m.idle)})`);
  console.log(`\n| RSS during ${CONCURRENT} concurrent 25 MiB uploads | idle MB | peak MB | peak − idle MB | kernel VmHWM MB | goal |\n|---|---:|---:|---:|---:|---:|`);
  console.log(`| app, POST /api/files (${appMem.samples} samples) | ${mb(appMem.idle)} | ${mb(appMem.peak)} | ${mb(appMem.peak - appMem.idle)} | ${hwm(appMem)} | < 100 above idle |`);
  console.log(`| bare node:http, POST /upload (${bareMem.samples} samples) | ${mb(bareMem.idle)} | ${mb(bareMem.peak)} | ${mb(bareMem.peak - bareMem.idle)} | ${hwm(bareMem)} | |`);
  console.log(`\nnode ${process.version}, ${os.cpus().length} cores; files bench took ${((performance.now() - started) / 1000).toFixed(0)} s\n`);
  // the one summary (test/bench/all.ts)
  const ratioOf = (f: { bare: number[]; app: number[] }) => median(f.bare) / median(f.app);
  const ratioRow = (name: string, f: { bare: number[]; app: number[] } | undefined, note = "") => ({ case: name, now: f ? `${mbps(median(f.app)).toFixed(1)} MB/s (ratio ${ratioOf(f).toFixed(3)})` : note, goal: "ratio >= 0.5", met: f ? ratioOf(f) >= 0.5 : null });
  reportRows("files", [
    ratioRow("file upload, multipart, 25 MiB", multipart),
    ratioRow("file upload, tus, 25 MiB", tusFigures, tusNote),
    ratioRow("file download, 25 MiB", downloads),
    { case: `RSS during ${CONCURRENT} concurrent 25 MiB uploads, above idle`, now: `${mb(appMem.peak - appMem.idle)} MB`, goal: "< 100 MB", met: (appMem.peak - appMem.idle) / MB < 100 },
  ]);
} finally {
  await Promise.all([bareSrv.stop(), appSrv.stop()]);
  fs.rmSync(work, { recursive: true, force: true });
}
