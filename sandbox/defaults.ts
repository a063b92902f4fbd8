/**
 * The sandbox's config defaults, in a module of their own so that the entry point (sandbox/main.ts) reads
 * them without loading the project and the service (it starts Temporal's dev server first).
 */
import path from "node:path";
import { fileURLToPath } from "node:url";

/** Development token of the sandbox (also in the README); override with SVC_DEV_TOKEN. */
export const SANDBOX_DEV_TOKEN = "svc_dev_sandbox_token";
/**
 * The sandbox's data directory: the source tree's `sandbox/.data`, for `npm start`, `npm run svc` and the
 * compiled start (`npm run start:prod`) alike, so a token made with the CLI works against either server.
 * The build keeps this module's `import.meta.url` on its source file rather than its place under `dist/`
 * (`SOURCE_TREE_URLS` in sandbox/build.ts). Override with SVC_DATA_DIR.
 */
export const SANDBOX_DATA_DIR = path.join(path.dirname(fileURLToPath(import.meta.url)), ".data");
