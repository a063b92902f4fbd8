import { spawn, spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

/** The Temporal CLI release the runtime builds (later tags carry a replace directive and do not `go install`). */
export const TEMPORAL_CLI_VERSION = "v1.5.1";
const MODULE = "github.com/temporalio/cli/cmd/temporal";

/** Where the built CLI is cached: `$XDG_CACHE_HOME/svc/temporal-cli-v1.5.1/temporal` (default `~/.cache`). */
export function defaultTemporalCliPath(): string {
  const cache = process.env.XDG_CACHE_HOME || path.join(os.homedir(), ".cache");
  return path.join(cache, "svc", `temporal-cli-${TEMPORAL_CLI_VERSION}`, "temporal");
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
  const target = defaultTemporalCliPath();
  if (fs.existsSync(target)) return target;

  const go = spawnSync("go", ["version"], { encoding: "utf8" });
  if (go.status !== 0) {
    throw new TemporalCliError(`The Temporal CLI is not built yet and Go is not available to build it (${go.error?.message ?? go.stderr.trim()}). Install Go 1.22+ or set SVC_TEMPORAL_CLI to an existing temporal binary, or TEMPORAL_ADDRESS to a running cluster.`);
  }
  fs.mkdirSync(path.dirname(target), { recursive: true });
  const tmpBin = fs.mkdtempSync(path.join(path.dirname(target), ".build-"));
  progress(`Building the Temporal CLI ${TEMPORAL_CLI_VERSION} with ${go.stdout.trim()} into ${target} (first start only; this takes a few minutes)…`);
  const started = Date.now();
  const tail: string[] = [];
  const code = await new Promise<number | null>((resolve) => {
    const child = spawn("go", ["install", `${MODULE}@${TEMPORAL_CLI_VERSION}`], { env: { ...process.env, GOBIN: tmpBin, GOFLAGS: "-mod=mod" }, stdio: ["ignore", "pipe", "pipe"] });
    let downloads = 0;
    const onLine = (line: string) => {
      tail.push(line);
      if (tail.length > 30) tail.shift();
      if (line.startsWith("go: downloading")) downloads++;
      else if (line.trim()) progress(`  ${line}`);
    };
    let buf = "";
    const onData = (d: Buffer) => {
      buf += d.toString();
      const lines = buf.split("\n");
      buf = lines.pop() ?? "";
      lines.forEach(onLine);
    };
    child.stdout.on("data", onData);
    child.stderr.on("data", onData);
    const timer = setInterval(() => progress(`  still building the Temporal CLI (${Math.round((Date.now() - started) / 1000)} s, ${downloads} modules downloaded)…`), 15_000);
    child.on("error", () => resolve(null));
    child.on("close", (c) => {
      clearInterval(timer);
      resolve(c);
    });
  });
  const built = path.join(tmpBin, "temporal");
  if (code !== 0 || !fs.existsSync(built)) {
    fs.rmSync(tmpBin, { recursive: true, force: true });
    throw new TemporalCliError(`Building the Temporal CLI failed (go install exit ${code}):\n${tail.join("\n")}\nSet SVC_TEMPORAL_CLI to an existing temporal binary, or TEMPORAL_ADDRESS to a running cluster.`);
  }
  fs.renameSync(built, target);
  fs.rmSync(tmpBin, { recursive: true, force: true });
  progress(`Built the Temporal CLI in ${Math.round((Date.now() - started) / 1000)} s.`);
  return target;
}
