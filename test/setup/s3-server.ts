/**
 * A real S3-compatible server for the tests of the S3 blob backend (issue 10: never a mock): versitygw
 * (https://github.com/versity/versitygw, Apache-2.0) with its posix backend, built from the Go module
 * proxy on first use and cached like the Temporal CLI (`core/temporal/cli.ts`).
 */
import { spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import http from "node:http";
import path from "node:path";
import { cachedBinaryPath, goInstall } from "../../core/temporal/go-install";
import { processState } from "../helpers-fs";

/** The versitygw release the tests build (`go install` works for it: its go.mod has no replace directive). */
export const S3_SERVER_VERSION = "v1.8.0";
/** The Go package of the versitygw command. */
export const S3_SERVER_MODULE = "github.com/versity/versitygw/cmd/versitygw";

/** Where the built server is cached: `$XDG_CACHE_HOME/svc/versitygw-v1.8.0/versitygw` (default `~/.cache`). */
export function defaultS3ServerPath(): string {
  return cachedBinaryPath("versitygw", S3_SERVER_VERSION);
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
  return goInstall({ module: S3_SERVER_MODULE, version: S3_SERVER_VERSION, target: defaultS3ServerPath(), label: "the S3-compatible test server (versitygw)", instead: "set SVC_TEST_S3_SERVER to a versitygw binary", progress: (line) => log(`[test setup] ${line}`) });
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
  /**
   * Freezes the server (SIGSTOP: it accepts connections, through the kernel, and answers nothing) and
   * waits until it is stopped (the signal lands asynchronously: a request sent at once could still be
   * answered). @throws Error when it has not stopped within 5 s
   */
  pause(): Promise<void>;
  /** Lets a paused server go on (SIGCONT). */
  resume(): void;
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
    pause: async () => {
      child.kill("SIGSTOP");
      for (const t0 = performance.now(); performance.now() - t0 < 5000; await new Promise((r) => setTimeout(r, 10))) {
        if (processState(child.pid!) === "T") return;
      }
      throw new Error(`the S3 server (pid ${child.pid}) did not stop within 5 s of SIGSTOP`);
    },
    resume: () => void child.kill("SIGCONT"),
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
