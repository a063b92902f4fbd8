/**
 * The sandbox's config defaults, in a module of their own so that the entry point (sandbox/main.ts) reads
 * them without loading the project and the service (it starts Temporal's dev server first).
 */
import path from "node:path";
import { fileURLToPath } from "node:url";

/** Development token of the sandbox (also in the README); override with SVC_DEV_TOKEN. */
export const SANDBOX_DEV_TOKEN = "svc_dev_sandbox_token";
/** The sandbox's data directory (`sandbox/.data`); override with SVC_DATA_DIR. */
export const SANDBOX_DATA_DIR = path.join(path.dirname(fileURLToPath(import.meta.url)), ".data");
