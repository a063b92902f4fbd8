import fs from "node:fs";
import { cachedBinaryPath, goInstall, GoInstallError } from "./go-install";

/** The Temporal CLI release the runtime builds (later tags carry a replace directive and do not `go install`). */
export const TEMPORAL_CLI_VERSION = "v1.5.1";
const MODULE = "github.com/temporalio/cli/cmd/temporal";

/** Where the built CLI is cached: `$XDG_CACHE_HOME/svc/temporal-cli-v1.5.1/temporal` (default `~/.cache`). */
export function defaultTemporalCliPath(): string {
  return cachedBinaryPath("temporal-cli", TEMPORAL_CLI_VERSION, "temporal");
}

/** Thrown when no Temporal CLI can be found or built; the message says why and what to set. */
export class TemporalCliError extends Error {
  override name = "TemporalCliError";
}

/**
 * Answers the path of a usable `temporal` binary: `explicitPath` (from `SVC_TEMPORAL_CLI`) when given,
 * else the per-user cache, building it there with `go install …@v1.5.1` when it is missing. The build
 * takes minutes the first time; progress goes to `progress` (a line every 15 s at least). It installs
 * into a temporary directory and renames, so an interrupted build never leaves a broken binary.
 *
 * @throws {TemporalCliError} when the explicit path is not an executable, Go is missing, or the build fails
 */
export async function ensureTemporalCli(explicitPath: string | undefined, progress: (line: string) => void): Promise<string> {
  if (explicitPath) {
    try {
      fs.accessSync(explicitPath, fs.constants.X_OK);
      return explicitPath;
    } catch {
      throw new TemporalCliError(`SVC_TEMPORAL_CLI=${explicitPath} is not an executable file. Point it at a Temporal CLI binary, or unset it to build ${TEMPORAL_CLI_VERSION} into ${defaultTemporalCliPath()}.`);
    }
  }
  try {
    return await goInstall({ module: MODULE, version: TEMPORAL_CLI_VERSION, target: defaultTemporalCliPath(), label: "the Temporal CLI", instead: "set SVC_TEMPORAL_CLI to an existing temporal binary, or TEMPORAL_ADDRESS to a running cluster", progress });
  } catch (err) {
    if (err instanceof GoInstallError) throw new TemporalCliError(err.message);
    throw err;
  }
}
