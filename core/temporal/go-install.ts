import { spawn, spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

/**
 * svc's own cache directory: `SVC_CACHE_DIR` when set, else `$XDG_CACHE_HOME/svc` (default
 * `~/.cache/svc`). `env` is where both are read (the process's environment unless given).
 * `SVC_CACHE_DIR` moves only svc's cache (an empty one makes a start pay the first-start cost, as the
 * start-up bench does); `XDG_CACHE_HOME` also moves other tools' caches (Go's build cache among them).
 */
export function svcCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  return env.SVC_CACHE_DIR || path.join(env.XDG_CACHE_HOME || path.join(os.homedir(), ".cache"), "svc");
}

/**
 * Where a fetched or built binary is cached: `<svc cache dir>/<name>-<version>/<binary>` (see
 * {@link svcCacheDir}: `SVC_CACHE_DIR`, else `$XDG_CACHE_HOME/svc`, default `~/.cache/svc`).
 */
export function cachedBinaryPath(name: string, version: string, binary = name, env: NodeJS.ProcessEnv = process.env): string {
  return path.join(svcCacheDir(env), `${name}-${version}`, binary);
}

/** Thrown when Go is missing or `go install` fails; the message says why and what to set instead. */
export class GoInstallError extends Error {
  override name = "GoInstallError";
}

/**
 * Builds `module@version` with `go install` into `target` (once: an existing target is answered as it
 * is). It installs into a temporary directory beside the target and renames, so an interrupted build
 * never leaves a broken binary. Progress goes to `progress`: go's own lines (downloads counted, not
 * printed) and a line at least every 15 s.
 *
 * @param opts.module Go package path of the command, e.g. `github.com/temporalio/cli/cmd/temporal`
 * @param opts.label what to call it in messages, e.g. `the Temporal CLI`
 * @param opts.instead what the user can set instead, appended to errors
 * @throws {GoInstallError} when Go is missing or the build fails (with the last 30 lines of its output)
 */
export async function goInstall(opts: { module: string; version: string; target: string; label: string; instead: string; progress: (line: string) => void }): Promise<string> {
  const { target, label, progress } = opts;
  if (fs.existsSync(target)) return target;
  const go = spawnSync("go", ["version"], { encoding: "utf8" });
  if (go.status !== 0) throw new GoInstallError(`${label} is not built yet and Go is not available to build it (${go.error?.message ?? go.stderr.trim()}). Install Go, or ${opts.instead}.`);
  fs.mkdirSync(path.dirname(target), { recursive: true });
  const tmpBin = fs.mkdtempSync(path.join(path.dirname(target), ".build-"));
  progress(`Building ${label} ${opts.version} with ${go.stdout.trim()} into ${target} (first run only; this takes a few minutes)…`);
  const started = Date.now();
  const tail: string[] = [];
  const code = await new Promise<number | null>((resolve) => {
    const child = spawn("go", ["install", `${opts.module}@${opts.version}`], { env: { ...process.env, GOBIN: tmpBin, GOFLAGS: "-mod=mod" }, stdio: ["ignore", "pipe", "pipe"] });
    let downloads = 0;
    let buf = "";
    const onData = (d: Buffer) => {
      buf += d.toString();
      const lines = buf.split("\n");
      buf = lines.pop() ?? "";
      for (const line of lines) {
        tail.push(line);
        if (tail.length > 30) tail.shift();
        if (line.startsWith("go: downloading")) downloads++;
        else if (line.trim()) progress(`  ${line}`);
      }
    };
    child.stdout.on("data", onData);
    child.stderr.on("data", onData);
    const timer = setInterval(() => progress(`  still building ${label} (${Math.round((Date.now() - started) / 1000)} s, ${downloads} modules downloaded)…`), 15_000);
    child.on("error", () => resolve(null));
    child.on("close", (c) => {
      clearInterval(timer);
      resolve(c);
    });
  });
  const built = path.join(tmpBin, path.basename(opts.module));
  if (code !== 0 || !fs.existsSync(built)) {
    fs.rmSync(tmpBin, { recursive: true, force: true });
    throw new GoInstallError(`Building ${label} failed (go install exit ${code}):\n${tail.join("\n")}\n${opts.instead[0]!.toUpperCase()}${opts.instead.slice(1)}.`);
  }
  fs.renameSync(built, path.join(path.dirname(target), path.basename(target)));
  fs.rmSync(tmpBin, { recursive: true, force: true });
  progress(`Built ${label} in ${Math.round((Date.now() - started) / 1000)} s.`);
  return target;
}
