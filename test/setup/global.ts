/**
 * Global setup: one real Temporal dev server for the whole run (the CLI fetched or built on a fresh machine,
 * then cached), and one workflow bundle shared by every app the tests start. The outside programs some
 * suites run are installed here first when missing, saying so (Chromium and nats-server from Debian's
 * packages, schemathesis with pip, the S3-compatible server built with Go): a fresh machine has none of
 * them, the S3 server's cold Go build takes minutes (longer than a suite's `beforeAll` may wait), and two
 * suites installing at once would race for apt's lock. Each suite still asks for its program itself
 * (`ensure…`), which finds it installed. Every temporary dir of the
 * run (the tests', their apps' data dirs, child processes' files) is made under one dir (`TMPDIR`, which
 * the test processes inherit), removed at the end: a run leaves nothing in the machine's /tmp.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import net from "node:net";
import type { TestProject } from "vitest/node";
import { ensureTemporalCli } from "../../core/temporal/cli";
import { startDevServer, type DevServer } from "../../core/temporal/dev-server";
import { bundleWorkflows } from "../../core/temporal/bundle";
import { sandboxProject } from "../../sandbox/project";
import { WORKFLOW_ENGINE } from "../../workflows/modules";
import { ensureChromium } from "./chromium";
import { ensureNatsServer } from "./nats";
import { ensureS3Server } from "./s3-server";
import { ensureSchemathesis } from "./schemathesis";

declare module "vitest" {
  export interface ProvidedContext {
    temporalAddress: string;
    workflowBundle: string;
    temporalCli: string;
  }
}

/** A free TCP port on loopback. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

let server: DevServer | undefined;

export default async function setup(project: TestProject) {
  const log = (line: string) => process.stderr.write(`[test setup] ${line}\n`);
  const runTmp = fs.mkdtempSync(path.join(os.tmpdir(), "svc-test-run-"));
  process.env.TMPDIR = runTmp;
  log(`temporary files of this run: ${runTmp} (removed at the end)`);
  // the two that download or build in child processes go on while the package installs below run
  const s3Server = ensureS3Server();
  const temporalCli = ensureTemporalCli(process.env.SVC_TEMPORAL_CLI || undefined, log);
  s3Server.catch(() => undefined); // awaited below
  temporalCli.catch(() => undefined);
  ensureChromium();
  ensureNatsServer();
  ensureSchemathesis();
  const [cli] = await Promise.all([temporalCli, s3Server]);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "svc-test-temporal-"));
  server = await startDevServer({ cliPath: cli, port: await freePort(), ui: false, dbFile: path.join(dir, "temporal.db"), namespace: "default", readyTimeoutMs: 90_000, log });
  const bundle = await bundleWorkflows({ engine: WORKFLOW_ENGINE.module, projectWorkflows: sandboxProject.workflowsModule! }, log);
  const bundlePath = path.join(dir, "workflow-bundle.js");
  fs.writeFileSync(bundlePath, bundle.code);
  project.provide("temporalAddress", server.address);
  project.provide("workflowBundle", bundlePath);
  project.provide("temporalCli", cli);
  return async () => {
    await server?.stop();
    fs.rmSync(runTmp, { recursive: true, force: true });
  };
}
