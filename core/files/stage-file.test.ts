/**
 * A finished file on local disk becoming a stored file without a copy (spec 4.1: a finished tus
 * upload): `LocalBlobStore.stageFile` (flush, hash unless given, hard link on commit, a copy across
 * filesystems) and `FileStore.uploadFile` over it, on a real SQLite file and real directories.
 */
import { createHash, randomBytes } from "node:crypto";
import fs from "node:fs";
import fsp from "node:fs/promises";
import path from "node:path";
import { Readable } from "node:stream";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { readAll, rejection, tempDir } from "../../test/helpers-fs";
import { isApiError } from "../errors";
import { Database } from "../store/db";
import type { BlobStore } from "./blob-store";
import { FileStore } from "./file-store";
import { LocalBlobStore } from "./local-blob-store";

const sha = (b: Buffer) => createHash("sha256").update(b).digest("hex");
const PDF = Buffer.concat([Buffer.from("%PDF-1.7\n"), randomBytes(200 * 1024)]);

let dir: string;
let blobs: LocalBlobStore;
let db: Database;

beforeEach(async () => {
  dir = tempDir("svc-stage-file-");
  blobs = await LocalBlobStore.open(path.join(dir, "blobs"));
  db = await Database.open(path.join(dir, "svc.db"));
});

afterEach(async () => {
  await db.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

/** Writes `bytes` to a new file under `parent` and answers its path. */
function fileWith(bytes: Buffer, parent = dir): string {
  const file = path.join(parent, `upload-${randomBytes(4).toString("hex")}`);
  fs.writeFileSync(file, bytes);
  return file;
}

describe("LocalBlobStore.stageFile", () => {
  it("hashes the file, and on commit links it to its address: one inode, no copy", async () => {
    const file = fileWith(PDF);
    const staged = await blobs.stageFile(file, { maxBytes: PDF.length });
    expect(staged).toMatchObject({ sha256: sha(PDF), size: PDF.length });
    expect(await blobs.exists(sha(PDF))).toBe(false); // not visible before commit
    await staged.commit();
    const blob = blobs.pathOf(sha(PDF));
    expect(fs.statSync(blob).ino).toBe(fs.statSync(file).ino);
    expect(fs.statSync(blob).nlink).toBe(2);
    expect(fs.statSync(blob).mode & 0o777).toBe(0o444); // read-only: a stray writer of the session's file is refused
    // the caller deletes its file; the blob keeps the bytes
    fs.rmSync(file);
    expect((await readAll(await blobs.read(sha(PDF)))).equals(PDF)).toBe(true);
    await expect(staged.commit()).rejects.toThrow(/already committed/);
  });

  it("takes a given SHA-256 as the caller's word (its contract), reading nothing to check it", async () => {
    const file = fileWith(PDF);
    // an address the bytes do not have: the store believes the caller, which is what skipping the read means
    const claimed = sha(Buffer.from("another body"));
    const staged = await blobs.stageFile(file, { maxBytes: PDF.length, sha256: claimed });
    expect(staged.sha256).toBe(claimed);
    await staged.discard();
    expect(fs.existsSync(file)).toBe(true); // discard leaves the caller's file alone
    expect(await blobs.exists(claimed)).toBe(false);
    await expect(blobs.stageFile(file, { maxBytes: PDF.length, sha256: "not-hex" })).rejects.toSatisfy(isApiError);
  });

  it("drops the staged file when the blob is already stored, keeping the stored one", async () => {
    const stored = await blobs.write(Readable.from([PDF]), { maxBytes: PDF.length });
    const file = fileWith(PDF);
    const staged = await blobs.stageFile(file, { maxBytes: PDF.length });
    await staged.commit();
    expect(staged.sha256).toBe(stored.sha256);
    expect(fs.statSync(blobs.pathOf(stored.sha256)).nlink).toBe(1);
    expect(fs.statSync(file).nlink).toBe(1);
  });

  it("refuses a file over maxBytes, staging nothing", async () => {
    const file = fileWith(PDF);
    const err = await rejection(blobs.stageFile(file, { maxBytes: PDF.length - 1 }));
    expect(isApiError(err) && err.code).toBe("payload_too_large");
    expect(fs.readdirSync(path.join(blobs.root, ".tmp"))).toEqual([]);
  });

  it("stages a 0-byte file", async () => {
    const staged = await blobs.stageFile(fileWith(Buffer.alloc(0)), { maxBytes: 10 });
    await staged.commit();
    expect(await blobs.stat(sha(Buffer.alloc(0)))).toEqual({ sha256: sha(Buffer.alloc(0)), size: 0 });
  });

  it("answers the filesystem's error for a missing file", async () => {
    const err = (await rejection(blobs.stageFile(path.join(dir, "missing"), { maxBytes: 10 }))) as NodeJS.ErrnoException;
    expect(err.code).toBe("ENOENT");
  });

  it("copies the file when it lies on another filesystem (EXDEV)", async () => {
    // the kernel's answer to a link across filesystems, whatever filesystems this machine has
    const link = vi.spyOn(fsp, "link").mockRejectedValue(Object.assign(new Error("cross-device link not permitted"), { code: "EXDEV" }));
    try {
      const file = fileWith(PDF);
      const staged = await blobs.stageFile(file, { maxBytes: PDF.length });
      await staged.commit();
      expect(link).toHaveBeenCalledTimes(1);
      const blob = blobs.pathOf(sha(PDF));
      expect(fs.statSync(blob).nlink).toBe(1);
      expect(fs.readFileSync(blob).equals(PDF)).toBe(true);
      expect(fs.readdirSync(path.join(blobs.root, ".tmp"))).toEqual([]);
      expect(fs.existsSync(file)).toBe(true);
    } finally {
      link.mockRestore();
    }
  });
});

describe("FileStore.uploadFile", () => {
  it("records the same reference an upload of the bytes would, linking the file into the blob store", async () => {
    const files = new FileStore(db, blobs);
    const file = fileWith(PDF);
    const ref = await files.uploadFile(file, { name: "report.pdf", declaredContentType: "application/octet-stream", maxBytes: PDF.length, createdBy: "alice", sha256: sha(PDF) });
    expect(ref).toMatchObject({ name: "report.pdf", size: PDF.length, sha256: sha(PDF), contentType: "application/pdf", declaredContentType: "application/octet-stream" });
    expect(fs.statSync(blobs.pathOf(sha(PDF))).ino).toBe(fs.statSync(file).ino);
    const opened = await files.open(ref.id);
    expect((await readAll(opened.stream)).equals(PDF)).toBe(true);
    expect(await db.get("SELECT created_by FROM files WHERE id = ?", [ref.id])).toEqual({ created_by: "alice" });
    // the same bytes through a body: the same content type and address
    const again = await files.upload(Readable.from([PDF]), { name: "report.pdf", declaredContentType: "application/octet-stream", maxBytes: PDF.length });
    expect(again).toMatchObject({ sha256: ref.sha256, contentType: ref.contentType, declaredContentType: ref.declaredContentType });
  });

  it("refuses a bad declared type before touching the file, and an oversized file with nothing stored", async () => {
    const files = new FileStore(db, blobs);
    const bad = await rejection(files.uploadFile(path.join(dir, "never-read"), { declaredContentType: "not a type", maxBytes: 10 }));
    expect(isApiError(bad) && bad.code).toBe("invalid_request");
    const big = await rejection(files.uploadFile(fileWith(PDF), { maxBytes: 1000 }));
    expect(isApiError(big) && big.code).toBe("payload_too_large");
    expect(await db.get("SELECT COUNT(*) AS n FROM files")).toEqual({ n: 0 });
    expect(await blobs.exists(sha(PDF))).toBe(false);
  });

  it("gives a blob store without stageFile the file's bytes", async () => {
    // the S3 store has no stageFile: the file is streamed into stage() like any body
    const streamed: BlobStore = { kind: "local", write: blobs.write.bind(blobs), stage: blobs.stage.bind(blobs), read: blobs.read.bind(blobs), stat: blobs.stat.bind(blobs), exists: blobs.exists.bind(blobs), delete: blobs.delete.bind(blobs), health: blobs.health, close: blobs.close.bind(blobs) };
    const files = new FileStore(db, streamed);
    const file = fileWith(PDF);
    const ref = await files.uploadFile(file, { name: "copied.pdf", maxBytes: PDF.length });
    expect(ref).toMatchObject({ size: PDF.length, sha256: sha(PDF), contentType: "application/pdf" });
    expect(fs.statSync(blobs.pathOf(sha(PDF))).ino).not.toBe(fs.statSync(file).ino);
  });
});
