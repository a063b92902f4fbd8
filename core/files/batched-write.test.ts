import { randomBytes } from "node:crypto";
import fsp, { type FileHandle } from "node:fs/promises";
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

  /** A file in memory whose writes write at most `most` bytes each; the `failOn`-th call fails (only that one). */
  function shortWrites(most: number, failOn = Infinity) {
    const disk = Buffer.alloc(4 * WRITE_BATCH_BYTES);
    let size = 0;
    let calls = 0;
    const handle = {
      async write(buffer: Buffer, offset: number, length: number, pos: number) {
        if (++calls === failOn) throw Object.assign(new Error("no space left on device"), { code: "ENOSPC" });
        const n = Math.min(length, most);
        buffer.copy(disk, pos, offset, offset + n);
        size = Math.max(size, pos + n);
        return { bytesWritten: n, buffer };
      },
    };
    return { handle: handle as unknown as FileHandle, bytes: () => disk.subarray(0, size) };
  }

  it("goes on from where a short write stopped", async () => {
    const data = randomBytes(2 * WRITE_BATCH_BYTES + 777);
    const file = shortWrites(10_000);
    expect(await writeInBatches(file.handle, chunksOf(data, 65_536), 0)).toBe(data.length);
    expect(file.bytes().equals(data)).toBe(true);
  });

  it("writes nothing more after the disk fails, leaving a prefix of the body", async () => {
    const data = randomBytes(WRITE_BATCH_BYTES);
    // the first batch (64 KiB) takes two calls; the second batch's first call writes 40,000 bytes, its second fails
    const file = shortWrites(40_000, 4);
    await expect(writeInBatches(file.handle, chunksOf(data, 65_536), 0)).rejects.toThrow("no space left on device");
    expect(file.bytes().length).toBe(65_536 + 40_000);
    expect(file.bytes().equals(data.subarray(0, 65_536 + 40_000))).toBe(true);
  });

  it("writes the rest of the batch from where it stopped when the source breaks", async () => {
    const data = randomBytes(100_000);
    const file = shortWrites(30_000);
    await expect(writeInBatches(file.handle, chunksOf(data, 10_000, new Error("connection dropped")), 0)).rejects.toThrow("connection dropped");
    expect(file.bytes().equals(data)).toBe(true);
  });
});
