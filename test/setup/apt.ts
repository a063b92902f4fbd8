import { spawnSync } from "node:child_process";

/**
 * Installs Debian packages with apt-get (`update`, then `install -y`, no recommends), as the test setup
 * does for what the tests need (this machine kind runs as root with Debian's registry reachable).
 * @returns the last line apt-get printed on failure, for the caller's error message (the caller checks
 *   what it needs is there; apt-get's exit status alone does not say)
 */
export function aptGetInstall(packages: readonly string[]): string {
  const install = spawnSync("sh", ["-c", `apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends ${packages.join(" ")}`], {
    encoding: "utf8",
    maxBuffer: 64 * 1024 * 1024,
  });
  return (install.stderr || install.stdout || String(install.error ?? "")).trim().split("\n").pop() ?? "";
}
