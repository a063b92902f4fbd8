import fs from "node:fs";
import { spawnSync } from "node:child_process";

/** Where Debian's `chromium` package puts the browser; the deck checker launches it from here. */
export const CHROMIUM_PATH = "/usr/bin/chromium";

/**
 * Answers the path of Debian's Chromium (`/usr/bin/chromium`), installing the `chromium` package with
 * apt-get when it is missing (this machine kind runs as root with Debian's registry reachable), printing
 * what it does. Playwright's own browser download cannot work here and is never used.
 * @throws Error saying what to install when it cannot
 */
export function ensureChromium(log: (line: string) => void = (l) => process.stderr.write(`${l}\n`)): string {
  const found = () => fs.existsSync(CHROMIUM_PATH);
  if (found()) return CHROMIUM_PATH;
  log("[test setup] chromium is missing: installing Debian's chromium package (apt-get, ~350 MB)…");
  const started = Date.now();
  const install = spawnSync("sh", ["-c", "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium"], {
    encoding: "utf8",
    maxBuffer: 64 * 1024 * 1024,
  });
  if (!found()) {
    const why = (install.stderr || install.stdout || String(install.error ?? "")).trim().split("\n").pop();
    throw new Error(`Chromium is needed for the deck checks and could not be installed (${why}). Install Debian's package: apt-get update && apt-get install chromium (it provides ${CHROMIUM_PATH})`);
  }
  const version = spawnSync(CHROMIUM_PATH, ["--version"], { encoding: "utf8" }).stdout.trim();
  log(`[test setup] installed ${version || "chromium"} at ${CHROMIUM_PATH} in ${Math.round((Date.now() - started) / 1000)} s`);
  return CHROMIUM_PATH;
}
