/**
 * The file service over a real SQLite file and a real blob directory: uploads (content types, names,
 * limits), reads, references and collection, and download URLs.
 */
import { createHash, randomBytes } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { Readable, Writable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { readAll, rejection } from "../../test/helpers-fs";
import { isApiError } from "../errors";
import { Database } from "../store/db";
import { LocalBlobStore } from "./local-blob-store";
import { decideContentType, looksBinary, normalizeContentType } from "./content-type";
import { publicOriginOf } from "./download-urls";
import { sanitizeFileName } from "./file-names";
import { FileStore } from "./file-store";
import { DEFAULT_UNREFERENCED_RETENTION_MS, FILE_UPLOAD_MAX_BYTES, MAX_FILE_NAME_BYTES } from "./limits";

const sha = (b: Buffer) => createHash("sha256").update(b).digest("hex");
const HOUR = 3_600_000;
const ORIGIN = "https://files.example.test";

// a real 1x1 PNG
const PNG = Buffer.from("89504e470d0a1a0a0000000d4948445200000001000000010806000000" + "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082", "hex");
const PDF = Buffer.from("%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n");

let dir: string;
let db: Database;
let blobs: LocalBlobStore;
let clock: number;
let files: FileStore;

beforeEach(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "svc-files-"));
  db = await Database.open(path.join(dir, "svc.db"));
  blobs = await LocalBlobStore.open(path.join(dir, "blobs"));
  clock = Date.parse("2026-03-01T12:00:00.000Z");
  files = new FileStore(db, blobs, { now: () => clock });
});

afterEach(async () => {
  await db.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

function blobFiles(): string[] {
  const root = blobs.root;
  const out: string[] = [];
  const walk = (d: string) => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p);
      else out.push(path.relative(root, p));
    }
  };
  walk(root);
  return out;
}


const upload = (data: Buffer | string, opts: { name?: string; declaredContentType?: string; maxBytes?: number } = {}) =>
  files.upload(Readable.from([Buffer.from(data)]), { maxBytes: FILE_UPLOAD_MAX_BYTES, ...opts });

describe("upload and content types", () => {
  it("answers a stored file reference and keeps the declared type when the bytes agree", async () => {
    const ref = await upload(PNG, { name: "pixel.png", declaredContentType: "image/png" });
    expect(ref).toEqual({ id: expect.stringMatching(/^file_[0-9A-HJKMNP-TV-Z]{26}$/), name: "pixel.png", contentType: "image/png", size: PNG.length, sha256: sha(PNG), createdAt: "2026-03-01T12:00:00.000Z" });
    expect(ref).not.toHaveProperty("declaredContentType");
    expect(await files.get(ref.id)).toEqual(ref);
  });

  it("stores what the bytes are when the declared type differs, and says so", async () => {
    const ref = await upload(PNG, { name: "notes.txt", declaredContentType: "text/plain; charset=UTF-8" });
    expect(ref.contentType).toBe("image/png");
    expect(ref.declaredContentType).toBe("text/plain; charset=UTF-8");
    expect(await files.get(ref.id)).toEqual(ref);

    const pdf = await upload(PDF, { name: "invoice.pdf" });
    expect(pdf.contentType).toBe("application/pdf");
    expect(pdf).not.toHaveProperty("declaredContentType");
  });

  it("keeps the declared type when the bytes are not recognizable, and defaults to application/octet-stream", async () => {
    expect((await upload("a,b\n1,2\n", { declaredContentType: "text/csv" })).contentType).toBe("text/csv");
    const plain = await upload("just text");
    expect(plain.contentType).toBe("application/octet-stream");
    expect(plain).not.toHaveProperty("declaredContentType");
    // a container format of the declared family agrees with the bytes
    expect(decideContentType("image/svg+xml", "application/xml")).toEqual({ contentType: "image/svg+xml" });
    expect(decideContentType("application/msword", "application/x-cfb")).toEqual({ contentType: "application/msword" });
    expect(decideContentType("image/jpeg", "application/zip")).toEqual({ contentType: "application/zip", declaredContentType: "image/jpeg" });
  });

  it("stores bytes that are not text, declared text/*, as application/octet-stream, saying what was declared", async () => {
    const binary = await upload(Buffer.from([0x89, 0x00, 0xff, 0x10, 0x41]), { declaredContentType: "text/plain" });
    expect(binary).toMatchObject({ contentType: "application/octet-stream", declaredContentType: "text/plain" });
    const utf8 = await upload("grüße, 東京\n", { declaredContentType: "text/plain; charset=utf-8" });
    expect(utf8).toMatchObject({ contentType: "text/plain; charset=utf-8" });
    expect(utf8).not.toHaveProperty("declaredContentType");
    // the first bytes end inside a character of a longer text: still text
    const long = "é".repeat(40_000);
    expect(looksBinary(Buffer.from(long).subarray(0, 64 * 1024 - 1), true)).toBe(false);
    expect(looksBinary(Buffer.from(long).subarray(0, 64 * 1024 - 1), false)).toBe(true);
    expect(looksBinary(Buffer.from([0xc3, 0x28]), false)).toBe(true);
    // a declared charset other than UTF-8 (a Windows-1252 export): only a NUL makes it binary; UTF-16 with its mark is text
    expect(looksBinary(Buffer.from("caf\xe9;1\n", "latin1"), false, "windows-1252")).toBe(false);
    expect(looksBinary(Buffer.from("caf\xe9;1\n", "latin1"), false)).toBe(true);
    expect(looksBinary(Buffer.from("\ufeffhi", "utf16le"), false)).toBe(false);
    const latin1 = await upload(Buffer.from("name;price\ncaf\xe9;1\n", "latin1"), { declaredContentType: "text/csv; charset=windows-1252" });
    expect(latin1).toMatchObject({ contentType: "text/csv; charset=windows-1252" });
  });

  it("refuses a declared type that is not a media type before reading anything", async () => {
    for (const bad of ["png", "image/png\r\nX-Evil: 1", "image/ png", "a".repeat(300) + "/b"]) {
      const body = Readable.from([PNG]);
      const err = await rejection(files.upload(body, { declaredContentType: bad, maxBytes: 100 }));
      expect(isApiError(err) && { code: err.code, details: err.details }).toEqual({ code: "invalid_request", details: { field: "contentType" } });
    }
    expect(normalizeContentType(" Text/HTML ;Charset=utf-8 ")).toBe("text/html; charset=utf-8");
    expect(normalizeContentType("")).toBeUndefined();
    expect(blobFiles().filter((f) => !f.startsWith(".tmp"))).toEqual([]);
  });

  it("stores a 0-byte file", async () => {
    const ref = await upload(Buffer.alloc(0), { name: "empty.txt", declaredContentType: "text/plain" });
    expect(ref).toMatchObject({ size: 0, sha256: sha(Buffer.alloc(0)), contentType: "text/plain", name: "empty.txt" });
    const opened = await files.open(ref.id);
    expect(opened.contentLength).toBe(0);
    expect((await readAll(opened.stream)).length).toBe(0);
  });

  it("reports a read that fails to onReadError, and a stream its reader destroys as nothing", async () => {
    const failures: Array<{ code: unknown; fileId: string }> = [];
    const reporting = new FileStore(db, blobs, { now: () => clock, onReadError: (err, file) => void failures.push({ code: (err as NodeJS.ErrnoException).code, fileId: file.id }) });
    const ref = await upload(randomBytes(300_000), { name: "data.bin" });
    // the reader goes away after the first chunk: not a failure
    const abandoned = await reporting.open(ref.id);
    await new Promise<void>((resolve) => abandoned.stream.once("data", () => resolve()));
    abandoned.stream.destroy();
    await new Promise((r) => abandoned.stream.once("close", r));
    // as an HTTP response's pipeline does it when the client hangs up
    const piped = await reporting.open(ref.id);
    const sink = new Writable({ write: (_chunk, _enc, done) => setTimeout(done, 5) });
    const pumping = pipeline(piped.stream, sink);
    await new Promise<void>((resolve) => piped.stream.once("data", () => resolve()));
    sink.destroy();
    expect(((await rejection(pumping)) as NodeJS.ErrnoException).code).toBe("ERR_STREAM_PREMATURE_CLOSE");
    expect(failures).toEqual([]);
    // the blob turned into a directory: the first read fails (EISDIR), as a failing disk would
    fs.rmSync(blobs.pathOf(ref.sha256), { force: true });
    fs.mkdirSync(blobs.pathOf(ref.sha256));
    const broken = await reporting.open(ref.id);
    expect((await rejection(readAll(broken.stream))) as NodeJS.ErrnoException).toMatchObject({ code: "EISDIR" });
    expect(failures).toEqual([{ code: "EISDIR", fileId: ref.id }]);
  });

  it("refuses a file over the limit with 413 and records nothing", async () => {
    const data = randomBytes(2049);
    const err = await rejection(files.upload(Readable.from([data]), { name: "big.bin", maxBytes: 2048 }));
    expect(isApiError(err) && { code: err.code, status: err.status }).toEqual({ code: "payload_too_large", status: 413 });
    expect(await db.all("SELECT id FROM files")).toEqual([]);
    expect(blobFiles()).toEqual([]);
    const exact = await files.upload(Readable.from([data.subarray(0, 2048)]), { maxBytes: 2048 });
    expect(exact.size).toBe(2048);
  });

  it("ends concurrent uploads of the same bytes in one blob with one row each", async () => {
    const data = randomBytes(200_000);
    const refs = await Promise.all(Array.from({ length: 6 }, (_, i) => upload(data, { name: `copy-${i}.bin` })));
    expect(new Set(refs.map((r) => r.id)).size).toBe(6);
    expect(new Set(refs.map((r) => r.sha256))).toEqual(new Set([sha(data)]));
    expect(blobFiles()).toEqual([path.join(sha(data).slice(0, 2), sha(data).slice(2, 4), sha(data))]);
  });
});

describe("file names", () => {
  it("keeps unicode and removes paths, control characters and bidi overrides", async () => {
    const cases: [string | undefined, string][] = [
      ["../../etc/passwd", "passwd"],
      ["..\\..\\Windows\\win.ini", "win.ini"],
      ["/abs/path/report.pdf", "report.pdf"],
      ["Résumé – 履歴書 📄.pdf", "Résumé – 履歴書 📄.pdf"],
      ["👨‍👩‍👧 family.png", "👨‍👩‍👧 family.png"],
      ["evil\u202Egnp.exe", "evilgnp.exe"],
      ["tab\there\nnew\u0000line.txt", "tab here newline.txt"],
      ["  spaced name.txt  ", "spaced name.txt"],
      ["trailing dots...", "trailing dots"],
      ["..", "file"],
      [".", "file"],
      ["dir/", "file"],
      ["", "file"],
      [undefined, "file"],
      [".env", ".env"],
      ["e\u0301.txt", "é.txt"], // NFC
    ];
    for (const [input, expected] of cases) expect(sanitizeFileName(input)).toBe(expected);

    const long = "é".repeat(300) + ".pdf";
    const cut = sanitizeFileName(long);
    expect(Buffer.byteLength(cut, "utf8")).toBeLessThanOrEqual(MAX_FILE_NAME_BYTES);
    expect(cut.endsWith("é.pdf")).toBe(true);
    expect(sanitizeFileName("🎉".repeat(100))).toBe("🎉".repeat(63)); // 4-byte code points are never split

    const ref = await upload("x", { name: "../../../../tmp/pwned\u0007.sh" });
    expect(ref.name).toBe("pwned.sh");
    expect((await files.get(ref.id))!.name).toBe("pwned.sh");
    expect(fs.existsSync("/tmp/pwned.sh")).toBe(false);
  });
});

describe("reading", () => {
  it("opens a file whole or by range, and refuses an unknown file or a range outside it", async () => {
    const data = randomBytes(5000);
    const ref = await upload(data);
    const whole = await files.open(ref.id);
    expect(whole).toMatchObject({ reference: ref, size: 5000, contentLength: 5000, range: undefined });
    expect((await readAll(whole.stream)).equals(data)).toBe(true);

    const part = await files.open(ref.id, { start: 100, end: 199 });
    expect(part).toMatchObject({ size: 5000, contentLength: 100, range: { start: 100, end: 199 } });
    expect((await readAll(part.stream)).equals(data.subarray(100, 200))).toBe(true);

    const outside = await rejection(files.open(ref.id, { start: 4990, end: 5000 }));
    expect(isApiError(outside) && { code: outside.code, status: outside.status, headers: outside.headers }).toEqual({ code: "range_not_satisfiable", status: 416, headers: { "content-range": "bytes */5000" } });
    const unknown = await rejection(files.open("file_01HZZZZZZZZZZZZZZZZZZZZZZZ"));
    expect(isApiError(unknown) && unknown.status).toBe(404);
    expect(await files.get("file_01HZZZZZZZZZZZZZZZZZZZZZZZ")).toBeUndefined();
  });

  it("reports a missing blob as an internal error, not as a missing file", async () => {
    const ref = await upload("bytes that go missing");
    await blobs.delete(ref.sha256);
    const err = await rejection(files.open(ref.id));
    expect(isApiError(err)).toBe(false);
    expect((err as Error).message).toMatch(/missing from the local blob store/);
  });
});

describe("references and collection of unreferenced files", () => {
  const owner = { kind: "object", id: "invoice/inv_1001", path: "/properties/pdf" };

  it("removes old never-referenced files, keeps referenced and recent ones, and answers how many", async () => {
    const orphan = await upload("orphan bytes");
    const kept = await upload("referenced bytes");
    await db.transaction((tx) => files.addReference(tx, kept.id, owner));
    await db.transaction((tx) => files.addReference(tx, kept.id, owner)); // idempotent
    expect(await files.references(kept.id)).toEqual([{ ...owner, createdAt: "2026-03-01T12:00:00.000Z" }]);

    clock += DEFAULT_UNREFERENCED_RETENTION_MS - 1000;
    const recent = await upload("recent orphan");
    expect(await files.collectUnreferenced()).toBe(0); // nothing is older than 24 h yet

    clock += 2000;
    expect(await files.collectUnreferenced()).toBe(1);
    expect(await files.get(orphan.id)).toBeUndefined();
    expect(await blobs.exists(orphan.sha256)).toBe(false);
    expect(await files.get(kept.id)).toEqual(kept);
    expect(await blobs.exists(kept.sha256)).toBe(true);
    expect(await files.get(recent.id)).toEqual(recent);

    // a file once referenced stays even when its references are removed (runs and events may hold it)
    expect(await db.transaction((tx) => files.removeReferences(tx, { kind: "object", id: "invoice/inv_1001" }))).toBe(1);
    expect(await files.references(kept.id)).toEqual([]);
    clock += 10 * DEFAULT_UNREFERENCED_RETENTION_MS;
    expect(await files.collectUnreferenced()).toBe(1); // only `recent`
    expect(await files.get(kept.id)).toEqual(kept);
    expect(await files.get(recent.id)).toBeUndefined();
  });

  it("keeps a blob shared by two file rows when one of them is removed", async () => {
    const bytes = randomBytes(1000);
    const first = await upload(bytes, { name: "a.bin" });
    const second = await upload(bytes, { name: "b.bin" });
    expect(first.sha256).toBe(second.sha256);
    await db.transaction((tx) => files.addReference(tx, second.id, owner));
    clock += DEFAULT_UNREFERENCED_RETENTION_MS + 1;
    expect(await files.collectUnreferenced()).toBe(1);
    expect(await files.get(first.id)).toBeUndefined();
    expect(await blobs.exists(second.sha256)).toBe(true);
    expect((await readAll((await files.open(second.id)).stream)).equals(bytes)).toBe(true);

    // two unreferenced rows of the same bytes: the blob goes with the last one
    const x = await upload("twins");
    const y = await upload("twins");
    clock += DEFAULT_UNREFERENCED_RETENTION_MS + 1;
    expect(await files.collectUnreferenced()).toBe(2);
    expect(await files.get(x.id)).toBeUndefined();
    expect(await files.get(y.id)).toBeUndefined();
    expect(await blobs.exists(x.sha256)).toBe(false);
  });

  it("rolls a reference back with the owner's transaction and refuses an unknown file", async () => {
    const ref = await upload("held by a failed write");
    await expect(
      db.transaction(async (tx) => {
        await files.addReference(tx, ref.id, owner);
        throw new Error("the owner's write failed");
      }),
    ).rejects.toThrow("the owner's write failed");
    expect(await files.references(ref.id)).toEqual([]);
    clock += DEFAULT_UNREFERENCED_RETENTION_MS + 1;
    expect(await files.collectUnreferenced()).toBe(1); // it was never referenced after all

    const err = await rejection(db.transaction((tx) => files.addReference(tx, "file_nope", owner)));
    expect(isApiError(err) && { code: err.code, details: err.details }).toEqual({ code: "invalid_request", details: { fileId: "file_nope" } });
    const bad = await rejection(db.transaction((tx) => files.addReference(tx, ref.id, { kind: "", id: "x", path: "/p" })));
    expect(isApiError(bad) && bad.code).toBe("invalid_request");
  });

  it("keeps an unreferenced file while a download URL for it is live", async () => {
    const ref = await upload("shared by URL");
    const dl = await files.createDownloadUrl(ref.id, { publicOrigin: ORIGIN, expiresInMs: 48 * HOUR });
    clock += DEFAULT_UNREFERENCED_RETENTION_MS + 1;
    expect(await files.collectUnreferenced()).toBe(0);
    await files.revokeDownloadUrl(dl.id);
    expect(await files.collectUnreferenced()).toBe(1);
    expect(await db.all("SELECT id FROM download_urls")).toEqual([]);
  });

  it("never deletes the blob of an upload racing a collection of the same bytes", async () => {
    for (let i = 0; i < 15; i++) {
      const bytes = Buffer.from(`race ${i} ${"x".repeat(i * 1000)}`);
      await upload(bytes);
      clock += DEFAULT_UNREFERENCED_RETENTION_MS + 1;
      const [collected, fresh] = await Promise.all([files.collectUnreferenced(), upload(bytes)]);
      expect(collected).toBe(1);
      expect((await readAll((await files.open(fresh.id)).stream)).equals(bytes)).toBe(true);
      await db.transaction((tx) => files.addReference(tx, fresh.id, { ...owner, path: `/properties/f${i}` }));
    }
  });

  it("retries a blob deletion that failed", async () => {
    const ref = await upload("deletion fails once");
    clock += DEFAULT_UNREFERENCED_RETENTION_MS + 1;
    const original = blobs.delete.bind(blobs);
    blobs.delete = async () => {
      throw new Error("disk said no");
    };
    await expect(files.collectUnreferenced()).rejects.toThrow("disk said no");
    expect(await files.get(ref.id)).toBeUndefined();
    expect(await blobs.exists(ref.sha256)).toBe(true);
    blobs.delete = original;
    expect(await files.collectUnreferenced()).toBe(0);
    expect(await blobs.exists(ref.sha256)).toBe(false);
    expect(await db.all("SELECT sha256 FROM blob_deletions")).toEqual([]);
  });
});

describe("download URLs", () => {
  it("creates a distinct URL each time that resolves to the file", async () => {
    const ref = await upload(PDF, { name: "invoice.pdf" });
    const a = await files.createDownloadUrl(ref.id, { publicOrigin: `${ORIGIN}/`, createdBy: "dev" });
    const b = await files.createDownloadUrl(ref.id, { publicOrigin: ORIGIN });
    expect(a).toEqual({ id: expect.stringMatching(/^dl_[0-9A-Z]{26}$/), url: expect.stringMatching(/^https:\/\/files\.example\.test\/api\/download\/[A-Za-z0-9_-]{43}$/), expiresAt: "2026-03-01T13:00:00.000Z" });
    expect(b.id).not.toBe(a.id);
    expect(b.url).not.toBe(a.url);
    const secret = a.url.split("/").pop()!;
    expect(await files.resolveDownloadUrl(secret)).toEqual(ref);
    expect(await files.resolveDownloadUrl(b.url.split("/").pop()!)).toEqual(ref);
  });

  it("answers 410 download_url_expired after expiry", async () => {
    const ref = await upload("expiring");
    const dl = await files.createDownloadUrl(ref.id, { publicOrigin: ORIGIN, expiresInMs: 60_000 });
    const secret = dl.url.split("/").pop()!;
    clock += 59_999;
    expect((await files.resolveDownloadUrl(secret)).id).toBe(ref.id);
    clock += 1;
    const err = await rejection(files.resolveDownloadUrl(secret));
    expect(isApiError(err) && { code: err.code, status: err.status, details: err.details }).toEqual({ code: "download_url_expired", status: 410, details: { expiredAt: dl.expiresAt } });
  });

  it("answers 410 download_url_revoked after revocation, of that URL only", async () => {
    const ref = await upload("revocable");
    const dl = await files.createDownloadUrl(ref.id, { publicOrigin: ORIGIN });
    const other = await files.createDownloadUrl(ref.id, { publicOrigin: ORIGIN });
    const revoked = await files.revokeDownloadUrl(dl.id);
    expect(revoked).toEqual({ id: dl.id, revokedAt: "2026-03-01T12:00:00.000Z" });
    clock += 1000;
    expect(await files.revokeDownloadUrl(dl.id)).toEqual(revoked); // idempotent
    const err = await rejection(files.resolveDownloadUrl(dl.url.split("/").pop()!));
    expect(isApiError(err) && { code: err.code, status: err.status }).toEqual({ code: "download_url_revoked", status: 410 });
    expect((await files.resolveDownloadUrl(other.url.split("/").pop()!)).id).toBe(ref.id);
    const unknown = await rejection(files.revokeDownloadUrl("dl_nope"));
    expect(isApiError(unknown) && unknown.status).toBe(404);
  });

  it("answers 404 for a secret that was never issued", async () => {
    const ref = await upload("x");
    await files.createDownloadUrl(ref.id, { publicOrigin: ORIGIN });
    for (const secret of [randomBytes(32).toString("base64url"), "short", "../../etc/passwd", ""]) {
      const err = await rejection(files.resolveDownloadUrl(secret));
      expect(isApiError(err) && { code: err.code, status: err.status }).toEqual({ code: "not_found", status: 404 });
    }
  });

  it("needs SVC_API_PUBLIC_ORIGIN, a file, and a sane lifetime", async () => {
    const ref = await upload("x");
    await expect(files.createDownloadUrl(ref.id, { publicOrigin: undefined })).rejects.toThrow(/SVC_API_PUBLIC_ORIGIN/);
    await expect(files.createDownloadUrl(ref.id, { publicOrigin: "" })).rejects.toThrow(/SVC_API_PUBLIC_ORIGIN/);
    await expect(files.createDownloadUrl(ref.id, { publicOrigin: "ftp://x" })).rejects.toThrow(/SVC_API_PUBLIC_ORIGIN/);
    expect(publicOriginOf("https://api.example.com/svc/")).toBe("https://api.example.com/svc");
    for (const expiresInMs of [0, -1, 1.5, 8 * 24 * HOUR]) {
      const err = await rejection(files.createDownloadUrl(ref.id, { publicOrigin: ORIGIN, expiresInMs }));
      expect(isApiError(err) && err.code).toBe("invalid_request");
    }
    const missing = await rejection(files.createDownloadUrl("file_nope", { publicOrigin: ORIGIN }));
    expect(isApiError(missing) && missing.code).toBe("not_found");
    expect(await db.all("SELECT id FROM download_urls")).toEqual([]);
  });

  it("stores the secret only as a hash", async () => {
    const ref = await upload("secret-bearing");
    const dl = await files.createDownloadUrl(ref.id, { publicOrigin: ORIGIN });
    const secret = dl.url.split("/").pop()!;
    const hash = createHash("sha256").update(secret).digest("base64url");
    const row = await db.get<{ secret_hash: string }>("SELECT secret_hash FROM download_urls WHERE id = ?", [dl.id]);
    expect(row!.secret_hash).toBe(hash);
    // the database file and its write-ahead log hold the hash (the check can see) but never the secret
    const bytes = Buffer.concat(["svc.db", "svc.db-wal"].filter((f) => fs.existsSync(path.join(dir, f))).map((f) => fs.readFileSync(path.join(dir, f))));
    expect(bytes.includes(Buffer.from(hash))).toBe(true);
    expect(bytes.includes(Buffer.from(secret))).toBe(false);
  });
});
