/**
 * A benchmark target in its own process: `bare` (an h3 app with one POST handler) or `app` (the
 * sandbox runtime with its embedded Temporal dev server). Prints "READY <url>" when listening and
 * shuts down on SIGTERM.
 */
import { H3, serve } from "h3";
import pino from "pino";
import { createApp } from "../../core/app";
import { WORKFLOW_ENGINE } from "../../workflows/modules";
import { builtinPlugins } from "../../plugins";
import { sandboxProject, SANDBOX_DEV_TOKEN } from "../../sandbox/project";

const kind = process.argv[2];
if (kind === "bare") {
  const server = serve(new H3().post("/bare", () => ({ ok: true })), { port: Number(process.env.PORT), hostname: "127.0.0.1", silent: true, gracefulShutdown: false });
  await server.ready();
  process.stdout.write(`READY http://127.0.0.1:${process.env.PORT}\n`);
  process.once("SIGTERM", () => void server.close(true).then(() => process.exit(0)));
} else {
  const app = await createApp({ project: sandboxProject, plugins: builtinPlugins, workflowEngine: WORKFLOW_ENGINE, defaults: { devToken: SANDBOX_DEV_TOKEN }, logger: pino({ level: "warn" }) });
  process.stdout.write(`READY ${app.url}\n`);
  process.once("SIGTERM", () => void app.close().then(() => process.exit(0)));
}
