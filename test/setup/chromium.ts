import fs from "node:fs";
import { spawnSync } from "node:child_process";
import { CHROMIUM_PATH, HEADLESS_SHELL_PATH } from "../../core/artifacts/chromium";
import { aptGetInstall } from "./apt";

/** Where Debian's `chromium` package puts the browser: the tests' own browser (pages, the sheet grid). */
export { CHROMIUM_PATH };

/** Debian's packages the tests need: the browser, and the headless shell the deck checks launch by default (core/artifacts/chromium.ts). */
const PACKAGES: Array<{ name: string; path: string }> = [
  { name: "chromium", path: CHROMIUM_PATH },
  { name: "chromium-headless-shell", path: HEADLESS_SHELL_PATH },
];

/**
 * Answers the path of Debian's Chromium (`/usr/bin/chromium`), installing the `chromium` and
 * `chromium-headless-shell` packages with apt-get when either is missing (this machine kind runs as
 * root with Debian's registry reachable), printing what it does. Playwright's own browser download
 * cannot work here and is never used.
 * @throws Error saying what to install when it cannot
 */
export function ensureChromium(log: (line: string) => void = (l) => process.stderr.write(`${l}\n`)): string {
  const missing = () => PACKAGES.filter((p) => !fs.existsSync(p.path));
  const wanted = missing();
  if (wanted.length === 0) return CHROMIUM_PATH;
  const names = wanted.map((p) => p.name).join(" ");
  log(`[test setup] ${names} missing: installing Debian's ${wanted.length > 1 ? "packages" : "package"} (apt-get${wanted.some((p) => p.name === "chromium") ? ", ~350 MB" : ""})…`);
  const started = Date.now();
  const why = aptGetInstall(wanted.map((p) => p.name));
  const still = missing();
  if (still.length) {
    throw new Error(`Chromium is needed for the deck checks and pages and could not be installed (${why}). Install Debian's packages: apt-get update && apt-get install ${still.map((p) => p.name).join(" ")} (they provide ${still.map((p) => p.path).join(", ")})`);
  }
  const version = spawnSync(CHROMIUM_PATH, ["--version"], { encoding: "utf8" }).stdout.trim();
  log(`[test setup] installed ${names} (${version || "chromium"}) in ${Math.round((Date.now() - started) / 1000)} s`);
  return CHROMIUM_PATH;
}
