/**
 * Starts the sandbox: `npm start`. Listens on PORT (3002), keeps its data in sandbox/.data, starts the
 * Temporal dev server (fetching or building the Temporal CLI on first start) unless TEMPORAL_ADDRESS is set.
 */
import { createApp, installSignalHandlers } from "../core";
import { WORKFLOW_ENGINE } from "../workflows/modules";
import { ConfigError } from "../core/config";
import { TemporalCliError } from "../core/temporal/cli";
import { builtinPlugins } from "../plugins";
import { SANDBOX_DATA_DIR, SANDBOX_DEV_TOKEN, sandboxProject } from "./project";

const started = Date.now();
try {
  // download URLs point at the public origin (spec 4.3); the sandbox defaults it to its own address
  const env = { ...process.env, SVC_API_PUBLIC_ORIGIN: process.env.SVC_API_PUBLIC_ORIGIN || `http://localhost:${process.env.PORT || 3002}` };
  const app = await createApp({ project: sandboxProject, plugins: builtinPlugins, workflowEngine: WORKFLOW_ENGINE, env, defaults: { dataDir: SANDBOX_DATA_DIR, devToken: SANDBOX_DEV_TOKEN } });
  installSignalHandlers(app);
  const lines = [
    "",
    `  svc sandbox is up (${((Date.now() - started) / 1000).toFixed(1)} s)`,
    `  API          ${app.url}`,
    `  Docs         ${app.url}/docs`,
    `  Artifacts    ${app.url}/artifacts (sign in as dev / dev-sandbox-password)`,
    `  Agent        npm run chat -- "Write a report titled Q4 outlook"`,
    `  Temporal UI  ${app.temporal.uiUrl ?? `(not served; cluster ${app.temporal.address})`}`,
    `  Public URL   ${app.config.apiPublicOrigin} (SVC_API_PUBLIC_ORIGIN, used in download URLs; local addresses are unreachable for external services)`,
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
