import { randomBytes } from "node:crypto";
import fsp from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { tempDir } from "../../test/helpers-fs";
import { WRITE_BATCH_BYTES, writeInBatches } from "./batched-write";

async function* chunksOf(data: Buffer, size: number, thenThrow?: Error) {
  for (let at = 0; at < data.length; at += size) yield data.subarray(at, at + size);
  if (thenThrow) throw thenThrow;
}

describe("writeInBatches", () => {
  it("writes every byte in order across growing batches, from a position", async () => {
    const file = path.join(tempDir(), "f");
    await fsp.writeFile(file, Buffer.alloc(10, "x"));
    const data = randomBytes(3 * WRITE_BATCH_BYTES + 12_345);
    const fh = await fsp.open(file, "r+");
    expect(await writeInBatches(fh, chunksOf(data, 65_537), 10)).toBe(data.length);
    await fh.close();
    const back = await fsp.readFile(file);
    expect(back.subarray(0, 10).toString()).toBe("xxxxxxxxxx");
    expect(back.subarray(10).equals(data)).toBe(true);
  });

  it("writes what a source yielded before it broke, then rethrows its error", async () => {
    const file = path.join(tempDir(), "f");
    const data = randomBytes(300_000);
    const fh = await fsp.open(file, "w");
    await expect(writeInBatches(fh, chunksOf(data, 100_000, new Error("connection dropped")))).rejects.toThrow("connection dropped");
    await fh.close();
    expect((await fsp.readFile(file)).equals(data)).toBe(true);
  });
});
