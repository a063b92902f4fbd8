/**
 * A real S3-compatible server for the tests of the S3 blob backend (issue 10: never a mock): versitygw
 * (https://github.com/versity/versitygw, Apache-2.0) with its posix backend, built from the Go module
 * proxy on first use and cached like the Temporal CLI (`core/temporal/cli.ts`).
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";

/** The versitygw release the tests build (`go install` works for it: its go.mod has no replace directive). */
export const S3_SERVER_VERSION = "v1.8.0";
/** The Go package of the versitygw command. */
export const S3_SERVER_MODULE = "github.com/versity/versitygw/cmd/versitygw";

/** Where the built server is cached: `$XDG_CACHE_HOME/svc/versitygw-v1.8.0/versitygw` (default `~/.cache`). */
export function defaultS3ServerPath(): string {
  const cache = process.env.XDG_CACHE_HOME || path.join(os.homedir(), ".cache");
  return path.join(cache, "svc", `versitygw-${S3_SERVER_VERSION}`, "versitygw");
}

/**
 * Answers the path of a versitygw binary: `SVC_TEST_S3_SERVER` when set, else the per-user cache,
 * building it there with `go install github.com/versity/versitygw/cmd/versitygw@v1.8.0` when missing
 * (measured: 313 s cold on 2 cores, 165 s with a shared Go module cache). It installs into a
 * temporary directory beside the target and renames, so an interrupted build never leaves a broken
 * binary; progress goes to `log` (a line at least every 15 s).
 *
 * @throws Error saying what to install or set when Go is missing or the build fails
 */
export async function ensureS3Server(log: (line: string) => void = (l) => process.stderr.write(`${l}\n`)): Promise<string> {
  const explicit = process.env.SVC_TEST_S3_SERVER;
  if (explicit) {
    try {
      fs.accessSync(explicit, fs.constants.X_OK);
      return explicit;
    } catch {
      throw new Error(`SVC_TEST_S3_SERVER=${explicit} is not an executable file. Point it at a versitygw binary, or unset it to build ${S3_SERVER_VERSION} into ${defaultS3ServerPath()}.`);
    }
  }
  const target = defaultS3ServerPath();
  if (fs.existsSync(target)) return target;

  const go = spawnSync("go", ["version"], { encoding: "utf8" });
  if (go.status !== 0) {
    throw new Error(`The S3-compatible test server (versitygw) is not built yet and Go is not available to build it (${go.error?.message ?? go.stderr.trim()}). Install Go 1.25+, or set SVC_TEST_S3_SERVER to a versitygw binary.`);
  }
  fs.mkdirSync(path.dirname(target), { recursive: true });
  const tmpBin = fs.mkdtempSync(path.join(path.dirname(target), ".build-"));
  log(`[test setup] Building the S3-compatible test server versitygw ${S3_SERVER_VERSION} with ${go.stdout.trim()} into ${target} (first run only; this takes a few minutes)…`);
  const started = Date.now();
  const tail: string[] = [];
  const code = await new Promise<number | null>((resolve) => {
    const child = spawn("go", ["install", `${S3_SERVER_MODULE}@${S3_SERVER_VERSION}`], { env: { ...process.env, GOBIN: tmpBin, GOFLAGS: "-mod=mod" }, stdio: ["ignore", "pipe", "pipe"] });
    let downloads = 0;
    const onLine = (line: string) => {
      tail.push(line);
      if (tail.length > 30) tail.shift();
      if (line.startsWith("go: downloading")) downloads++;
      else if (line.trim()) log(`[test setup]   ${line}`);
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
    const timer = setInterval(() => log(`[test setup]   still building versitygw (${Math.round((Date.now() - started) / 1000)} s, ${downloads} modules downloaded)…`), 15_000);
    child.on("error", () => resolve(null));
    child.on("close", (c) => {
      clearInterval(timer);
      resolve(c);
    });
  });
  const built = path.join(tmpBin, "versitygw");
  if (code !== 0 || !fs.existsSync(built)) {
    fs.rmSync(tmpBin, { recursive: true, force: true });
    throw new Error(`Building versitygw failed (go install exit ${code}):\n${tail.join("\n")}\nSet SVC_TEST_S3_SERVER to an existing versitygw binary.`);
  }
  fs.renameSync(built, target);
  fs.rmSync(tmpBin, { recursive: true, force: true });
  log(`[test setup] Built versitygw in ${Math.round((Date.now() - started) / 1000)} s.`);
  return target;
}

/** A running test S3 server. */
export interface S3Server {
  /** `http://127.0.0.1:<port>`, the endpoint for the S3 client (path-style addressing). */
  endpoint: string;
  accessKey: string;
  secretKey: string;
  /** The region it signs for: us-east-1. */
  region: string;
  process: ChildProcess;
  /** Stops the server (SIGTERM, then SIGKILL after 5 s) and waits for it to exit. */
  stop(): Promise<void>;
}

/** One HTTP request to the server; true when it answered anything at all (403 to an anonymous GET is fine). */
function answers(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const req = http.get({ host: "127.0.0.1", port, path: "/", timeout: 1000 }, (res) => {
      res.resume();
      resolve(true);
    });
    req.once("timeout", () => req.destroy());
    req.once("error", () => resolve(false));
  });
}

/**
 * Starts versitygw on `127.0.0.1:<port>` only, serving buckets as directories of `dir` (posix backend),
 * with one root account; resolves once it answers HTTP.
 *
 * @throws Error with the server's last output when it exits or does not answer within 20 s
 */
export async function startS3Server(bin: string, opts: { port: number; dir: string; accessKey: string; secretKey: string }): Promise<S3Server> {
  fs.mkdirSync(opts.dir, { recursive: true });
  const region = "us-east-1";
  const child = spawn(bin, ["--access", opts.accessKey, "--secret", opts.secretKey, "--region", region, "--port", `127.0.0.1:${opts.port}`, "--quiet", "posix", opts.dir], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  const output: string[] = [];
  const keep = (d: Buffer) => {
    output.push(d.toString());
    if (output.length > 50) output.shift();
  };
  child.stdout.on("data", keep);
  child.stderr.on("data", keep);
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const deadline = Date.now() + 20_000;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`versitygw exited (${child.exitCode ?? child.signalCode}) before answering on port ${opts.port}:\n${output.join("")}`);
    if (await answers(opts.port)) break;
    if (Date.now() > deadline) {
      child.kill("SIGKILL");
      throw new Error(`versitygw did not answer on 127.0.0.1:${opts.port} within 20 s:\n${output.join("")}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    endpoint: `http://127.0.0.1:${opts.port}`,
    accessKey: opts.accessKey,
    secretKey: opts.secretKey,
    region,
    process: child,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill("SIGTERM");
        const timer = setTimeout(() => child.kill("SIGKILL"), 5000);
        await exited;
        clearTimeout(timer);
      }
    },
  };
}
