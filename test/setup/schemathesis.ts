import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

/** The schemathesis release the contract test runs (the newest 4.x installing on Python 3.11). */
export const SCHEMATHESIS_VERSION = "4.32.5";

/** Where its virtual environment lives: `$XDG_CACHE_HOME/svc/schemathesis-<version>/` (default `~/.cache`). */
export function schemathesisVenvDir(): string {
  const cache = process.env.XDG_CACHE_HOME || path.join(os.homedir(), ".cache");
  return path.join(cache, "svc", `schemathesis-${SCHEMATHESIS_VERSION}`);
}

/**
 * Answers the path of a `schemathesis` executable ({@link SCHEMATHESIS_VERSION}), creating a Python
 * virtual environment outside the repo (`python3 -m venv`, see {@link schemathesisVenvDir}) and
 * `pip install`ing it there when it is missing, printing what it does. It installs into a temporary
 * directory beside the target and renames it, so an interrupted install never leaves a broken venv.
 * `SVC_SCHEMATHESIS` names an existing executable instead.
 *
 * @param log receives one line per step (default: stderr)
 * @returns the absolute path of the `schemathesis` executable
 * @throws Error saying what to install when `SVC_SCHEMATHESIS` is not executable, Python 3 or its venv
 *   module is missing, or pip fails
 */
export function ensureSchemathesis(log: (line: string) => void = (l) => process.stderr.write(`${l}\n`)): string {
  const explicit = process.env.SVC_SCHEMATHESIS;
  if (explicit) {
    try {
      fs.accessSync(explicit, fs.constants.X_OK);
      return explicit;
    } catch {
      throw new Error(`SVC_SCHEMATHESIS=${explicit} is not an executable file. Point it at a schemathesis ${SCHEMATHESIS_VERSION} executable, or unset it to install one into ${schemathesisVenvDir()}.`);
    }
  }
  const dir = schemathesisVenvDir();
  const bin = path.join(dir, "bin", "schemathesis");
  if (works(bin)) return bin;

  const advice = `Install Python 3.9+ with its venv module (apt-get install python3 python3-venv), or run: python3 -m venv ${dir} && ${path.join(dir, "bin", "pip")} install schemathesis==${SCHEMATHESIS_VERSION} (or set SVC_SCHEMATHESIS to an existing schemathesis executable)`;
  const python = spawnSync("python3", ["--version"], { encoding: "utf8" });
  if (python.status !== 0) throw new Error(`schemathesis is needed for the contract test and Python 3 is not available to install it (${python.error?.message ?? python.stderr.trim()}). ${advice}`);

  log(`[test setup] schemathesis is missing: installing schemathesis==${SCHEMATHESIS_VERSION} into a virtual environment at ${dir} (${python.stdout.trim()}, pip; first run only)…`);
  fs.mkdirSync(path.dirname(dir), { recursive: true });
  // Building in place and renaming would leave absolute paths of the temporary directory in the
  // venv's scripts; `--copies` does not change that, so the venv is built at a temporary path, the
  // install is verified, and the directory is renamed; the scripts' shebangs are then rewritten.
  const tmp = fs.mkdtempSync(path.join(path.dirname(dir), `.schemathesis-${SCHEMATHESIS_VERSION}-`));
  const fail = (what: string, res: ReturnType<typeof spawnSync>) => {
    fs.rmSync(tmp, { recursive: true, force: true });
    const tail = `${res.stderr ?? ""}${res.error ? res.error.message : ""}`.trim().split("\n").slice(-10).join("\n");
    return new Error(`schemathesis is needed for the contract test and could not be installed: ${what} failed:\n${tail}\n${advice}`);
  };
  const venv = spawnSync("python3", ["-m", "venv", tmp], { encoding: "utf8" });
  if (venv.status !== 0) throw fail("python3 -m venv", venv);
  log(`[test setup]   pip install schemathesis==${SCHEMATHESIS_VERSION} (about a minute)…`);
  const pip = spawnSync(path.join(tmp, "bin", "python"), ["-m", "pip", "install", "--disable-pip-version-check", "--no-input", "-q", `schemathesis==${SCHEMATHESIS_VERSION}`], { encoding: "utf8", maxBuffer: 64 * 1024 * 1024 });
  if (pip.status !== 0) throw fail(`pip install schemathesis==${SCHEMATHESIS_VERSION}`, pip);
  // Entry-point scripts (and pyvenv.cfg) carry the venv's absolute path: point them at the final location.
  for (const file of [...fs.readdirSync(path.join(tmp, "bin")).map((name) => path.join(tmp, "bin", name)), path.join(tmp, "pyvenv.cfg")]) {
    if (!fs.statSync(file).isFile()) continue;
    const text = fs.readFileSync(file);
    if (text.includes(tmp)) fs.writeFileSync(file, text.toString("utf8").split(tmp).join(dir));
  }
  fs.rmSync(dir, { recursive: true, force: true });
  fs.renameSync(tmp, dir);
  if (!works(bin)) throw new Error(`schemathesis was installed into ${dir} but ${bin} does not run. ${advice}`);
  log(`[test setup]   schemathesis ${SCHEMATHESIS_VERSION} is ready: ${bin}`);
  return bin;
}

/** Whether `bin` runs and reports the pinned version. */
function works(bin: string): boolean {
  if (!fs.existsSync(bin)) return false;
  const res = spawnSync(bin, ["--version"], { encoding: "utf8", timeout: 60_000 });
  return res.status === 0 && res.stdout.includes(SCHEMATHESIS_VERSION);
}
