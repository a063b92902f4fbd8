/**
 * Local upload sessions hash the bytes their PATCHes write (`LocalSessionStore.write`), so a finished
 * upload becomes a file without being read again (`finishedFile`); where the running hash cannot be
 * trusted it is left out and the file is read once. Real files; the tus server's own use is in
 * test/uploads.test.ts.
 */
import { createHash, randomBytes } from "node:crypto";
import fs from "node:fs";
import fsp from "node:fs/promises";
import path from "node:path";
import { Readable } from "node:stream";
import { Upload } from "@tus/server";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { rejection, tempDir } from "../../test/helpers-fs";
import { LocalSessionStore } from "./local-sessions";

const sha = (b: Buffer) => createHash("sha256").update(b).digest("hex");
const data = randomBytes(3 * 1024 * 1024 + 17);
const KEY = "0123456789abcdef0123456789abcdef";

let dir: string;
let store: LocalSessionStore;

beforeEach(async () => {
  dir = tempDir("svc-sessions-");
  store = new LocalSessionStore(dir, 60_000);
  await store.create(new Upload({ id: KEY, size: data.length, offset: 0, metadata: {} }));
});

afterEach(() => {
  fs.rmSync(dir, { recursive: true, force: true });
});

/** `bytes` as a body of 64 KiB chunks that fails with `failWith` after `failAfter` bytes. */
function body(bytes: Buffer, failAfter = Infinity, failWith = new Error("connection reset")): Readable {
  return Readable.from(
    (async function* () {
      for (let at = 0; at < bytes.length; at += 64 * 1024) {
        if (at >= failAfter) throw failWith;
        yield bytes.subarray(at, Math.min(at + 64 * 1024, bytes.length));
      }
    })(),
  );
}

describe("LocalSessionStore's running hash", () => {
  it("hashes chunk after chunk, so the finished upload's SHA-256 needs no read", async () => {
    let offset = 0;
    for (const end of [1024 * 1024, 2 * 1024 * 1024, data.length]) {
      offset = await store.write(body(data.subarray(offset, end)), KEY, offset);
      expect(offset).toBe(end);
    }
    expect(fs.readFileSync(path.join(dir, KEY)).equals(data)).toBe(true);
    expect(store.finishedFile(KEY, data.length)).toEqual({ path: path.join(dir, KEY), sha256: sha(data) });
    // consumed: asked again, it has no hash to give
    expect(store.finishedFile(KEY, data.length).sha256).toBeUndefined();
  });

  it("keeps the hash across a body that breaks off, resuming from the offset on disk", async () => {
    const err = await rejection(store.write(body(data, 1024 * 1024 + 5), KEY, 0));
    expect(err).toMatchObject({ status_code: 500 }); // tus's FILE_WRITE_ERROR
    const offset = fs.statSync(path.join(dir, KEY)).size;
    expect(offset).toBeGreaterThan(0);
    expect(await store.write(body(data.subarray(offset)), KEY, offset)).toBe(data.length);
    expect(store.finishedFile(KEY, data.length).sha256).toBe(sha(data));
  });

  it("leaves the hash out after a restart (another store over the directory) and for writes it did not see", async () => {
    const half = data.length >> 1;
    await store.write(body(data.subarray(0, half)), KEY, 0);
    const restarted = new LocalSessionStore(dir, 60_000);
    await restarted.write(body(data.subarray(half)), KEY, half);
    expect(restarted.finishedFile(KEY, data.length)).toEqual({ path: path.join(dir, KEY) });
    // the first store's hash stopped at `half`, and a later write there was not its own: it claims nothing
    expect(store.finishedFile(KEY, data.length).sha256).toBeUndefined();
    await expect(store.write(body(Buffer.alloc(0)), KEY, data.length)).resolves.toBe(data.length);
    expect(store.finishedFile(KEY, data.length).sha256).toBeUndefined();
  });

  it("drops the hash when the data file cannot be opened", async () => {
    await store.write(body(data.subarray(0, 1024)), KEY, 0);
    fs.rmSync(path.join(dir, KEY));
    await expect(store.write(body(data.subarray(1024)), KEY, 1024)).rejects.toMatchObject({ status_code: 500 });
    expect(store.finishedFile(KEY, 1024).sha256).toBeUndefined();
  });

  it("drops the hash when the disk fails in the middle of a body, and the resumed upload is read to hash it", async () => {
    // the disk writes part of the second batch, then fails once
    const probe = await fsp.open(path.join(dir, KEY), "r");
    const proto = Object.getPrototypeOf(probe) as fsp.FileHandle;
    await probe.close();
    type Write = (this: fsp.FileHandle, buffer: Buffer, offset: number, length: number, position: number) => Promise<{ bytesWritten: number; buffer: Buffer }>;
    const real = proto.write as unknown as Write;
    let calls = 0;
    const spy = vi.spyOn(proto, "write").mockImplementation(function (this: fsp.FileHandle, buffer: Buffer, offset: number, length: number, position: number) {
      calls++;
      if (calls === 2) return real.call(this, buffer, offset, 40_000, position);
      if (calls === 3) return Promise.reject(Object.assign(new Error("I/O error"), { code: "EIO" }));
      return real.call(this, buffer, offset, length, position);
    } as unknown as typeof proto.write);
    try {
      await expect(store.write(body(data), KEY, 0)).rejects.toMatchObject({ status_code: 500 });
    } finally {
      spy.mockRestore();
    }
    const size = fs.statSync(path.join(dir, KEY)).size;
    expect(size).toBe(64 * 1024 + 40_000);
    expect(fs.readFileSync(path.join(dir, KEY)).equals(data.subarray(0, size))).toBe(true);
    await store.write(body(data.subarray(size)), KEY, size);
    expect(fs.readFileSync(path.join(dir, KEY)).equals(data)).toBe(true);
    expect(store.finishedFile(KEY, data.length).sha256).toBeUndefined();
  });

  it("only ever gives a hash that is the hash of the file on disk", async () => {
    let offset = 0;
    for (const failAfter of [300 * 1024, 1024 * 1024 + 5, Infinity]) {
      await store.write(body(data.subarray(offset), failAfter), KEY, offset).catch(() => undefined);
      offset = fs.statSync(path.join(dir, KEY)).size;
    }
    expect(offset).toBe(data.length);
    const { sha256 } = store.finishedFile(KEY, data.length);
    expect(sha256).toBe(sha(fs.readFileSync(path.join(dir, KEY))));
  });

  it("forgets an upload's hash when it is purged", async () => {
    await store.write(body(data), KEY, 0);
    await store.purge(KEY);
    expect(store.finishedFile(KEY, data.length).sha256).toBeUndefined();
  });
});
