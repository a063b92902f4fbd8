/**
 * A benchmark target in its own process: `bare` (an h3 app with one POST handler), `bare-files` (a
 * bare `node:http` server streaming bodies to and from disk: `POST /upload` writes the request body to
 * a file under SVC_DATA_DIR, `GET /download` streams the file BENCH_DOWNLOAD_FILE) or `app` (the
 * sandbox runtime with its embedded Temporal dev server). Prints "READY <url>" when listening and
 * shuts down on SIGTERM. Only `app` loads the runtime, so the bare targets stay lean. `runner` starts
 * the app the same way, measures its handler runner in process (./runner-probe.ts), prints
 * "RUNNER <json>" and exits.
 */
import { randomUUID } from "node:crypto";
import fs from "node:fs";
import http from "node:http";
import path from "node:path";
import { pipeline } from "node:stream/promises";
import { H3, serve } from "h3";

const kind = process.argv[2];
if (kind === "bare") {
  const server = serve(new H3().post("/bare", () => ({ ok: true })), { port: Number(process.env.PORT), hostname: "127.0.0.1", silent: true, gracefulShutdown: false });
  await server.ready();
  process.stdout.write(`READY http://127.0.0.1:${process.env.PORT}\n`);
  process.once("SIGTERM", () => void server.close(true).then(() => process.exit(0)));
} else if (kind === "bare-files") {
  const dir = process.env.SVC_DATA_DIR!;
  const downloadFile = process.env.BENCH_DOWNLOAD_FILE;
  const server = http.createServer((req, res) => {
    const fail = (err: unknown) => {
      if (!res.headersSent) res.writeHead(500, { "content-type": "text/plain" });
      res.end(String(err));
    };
    if (req.method === "POST" && req.url === "/upload") {
      // the raw body (multipart framing included) streamed to a new file, as it arrives
      const file = path.join(dir, `${randomUUID()}.part`);
      pipeline(req, fs.createWriteStream(file))
        .then(() => fs.promises.stat(file))
        .then(({ size }) => {
          res.writeHead(200, { "content-type": "application/json" });
          res.end(JSON.stringify({ size }));
          return fs.promises.rm(file, { force: true });
        })
        .catch(fail);
    } else if (req.method === "GET" && req.url === "/download" && downloadFile) {
      fs.promises
        .stat(downloadFile)
        .then(({ size }) => {
          res.writeHead(200, { "content-type": "application/octet-stream", "content-length": size });
          return pipeline(fs.createReadStream(downloadFile), res);
        })
        .catch(fail);
    } else {
      req.resume();
      res.writeHead(404).end();
    }
  });
  await new Promise<void>((resolve) => server.listen(Number(process.env.PORT), "127.0.0.1", resolve));
  process.stdout.write(`READY http://127.0.0.1:${process.env.PORT}\n`);
  process.once("SIGTERM", () => {
    server.closeAllConnections();
    server.close(() => process.exit(0));
  });
} else {
  // the production start's GC setting (sandbox/main.ts), from the same variable
  const [{ applyHeapGrowingPercent }, { loadConfig }] = await Promise.all([import("../../core/heap"), import("../../core/config")]);
  applyHeapGrowingPercent(loadConfig(process.env, {}).heapGrowingPercent);
  const [{ default: pino }, { createApp }, { WORKFLOW_ENGINE }, { builtinPlugins }, { sandboxProject, SANDBOX_DEV_TOKEN }] = await Promise.all([
    import("pino"),
    import("../../core/app"),
    import("../../workflows/modules"),
    import("../../plugins"),
    import("../../sandbox/project"),
  ]);
  // where the time goes inside the process (server-side latency, event loop, GC, run-queue wait)
  const { ServerProbe } = await import("./server-probe");
  const probe = new ServerProbe();
  const app = await createApp({ project: sandboxProject, plugins: builtinPlugins, workflowEngine: WORKFLOW_ENGINE, defaults: { devToken: SANDBOX_DEV_TOKEN }, logger: pino({ level: "warn" }) });
  if (kind === "runner") {
    const { measureRunner } = await import("./runner-probe");
    const figures = await measureRunner(app);
    await app.close();
    process.stdout.write(`RUNNER ${JSON.stringify(figures)}\n`);
    process.exit(0);
  }
  process.stdout.write(`READY ${app.url}\n`);
  // SIGUSR2: print the store's counters (statements, transactions, commits) and the probe's figures since
  // the previous SIGUSR2 (test/bench/server-probe.ts) as one `STATS {json}` line
  const { Database } = await import("../../core/store/db");
  const db = app.container.resolve(Database);
  process.on("SIGUSR2", () => void process.stdout.write(`STATS ${JSON.stringify({ ...(db.stats?.() ?? {}), ...probe.take() })}\n`));
  process.once("SIGTERM", () => void app.close().then(() => process.exit(0)));
}
