/**
 * Starts the sandbox: `npm start`. Listens on PORT (3002), keeps its data in sandbox/.data, starts the
 * Temporal dev server (building the Temporal CLI on first start) unless TEMPORAL_ADDRESS is set.
 */
import { createApp, installSignalHandlers } from "../core";
import { WORKFLOW_ENGINE } from "../workflows/modules";
import { ConfigError } from "../core/config";
import { TemporalCliError } from "../core/temporal/cli";
import { builtinPlugins } from "../plugins";
import { SANDBOX_DATA_DIR, SANDBOX_DEV_TOKEN, sandboxProject } from "./project";

const started = Date.now();
try {
  const app = await createApp({ project: sandboxProject, plugins: builtinPlugins, workflowEngine: WORKFLOW_ENGINE, defaults: { dataDir: SANDBOX_DATA_DIR, devToken: SANDBOX_DEV_TOKEN } });
  installSignalHandlers(app);
  const lines = [
    "",
    `  svc sandbox is up (${((Date.now() - started) / 1000).toFixed(1)} s)`,
    `  API          ${app.url}`,
    `  Docs         ${app.url}/docs`,
    `  Temporal UI  ${app.temporal.uiUrl ?? `(not served; cluster ${app.temporal.address})`}`,
    `  Dev token    ${app.config.devToken}`,
    `  Try          curl -H "Authorization: Bearer ${app.config.devToken}" ${app.url}/api/status`,
    "",
  ];
  process.stdout.write(lines.join("\n") + "\n");
} catch (err) {
  if (err instanceof ConfigError || err instanceof TemporalCliError) {
    process.stderr.write(`\n${err.message}\n`);
    process.exit(2);
  }
  throw err;
}
