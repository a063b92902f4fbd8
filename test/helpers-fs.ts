import fs from "node:fs";
import os from "node:os";
import path from "node:path";

/** A fresh temporary directory (no vitest imports, so benchmarks can use it). */
export function tempDir(prefix = "svc-test-"): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), prefix));
}

/** Reads a whole stream into one buffer. */
export async function readAll(stream: AsyncIterable<Uint8Array | string>): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of stream) chunks.push(Buffer.from(c));
  return Buffer.concat(chunks);
}

/** The error `p` rejects with. @throws Error when it resolves */
export async function rejection(p: Promise<unknown>): Promise<any> {
  try {
    await p;
  } catch (err) {
    return err;
  }
  throw new Error("expected a rejection");
}
