import fs from "node:fs";
import os from "node:os";
import path from "node:path";

/** A fresh temporary directory (no vitest imports, so benchmarks can use it). */
export function tempDir(prefix = "svc-test-"): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), prefix));
}
