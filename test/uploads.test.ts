/**
 * Upload sessions at `/api/files/uploads` (tus 1.0.0; issue 10) with a real tus client (tus-js-client
 * in Node, unchanged): chunks, a dropped connection resumed, a process SIGKILLed mid-upload and
 * restarted, ownership, limits, public Locations, expiry, and the S3 backend on a real S3-compatible
 * server (versitygw).
 */
import { createHash, randomBytes } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { CreateBucketCommand, ListMultipartUploadsCommand, ListObjectsV2Command, S3Client } from "@aws-sdk/client-s3";
import * as tus from "tus-js-client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEV_TOKEN, client, eventually, startApp, tempDir, tokenFor, startFixtureProcess } from "./helpers";
import { freePort } from "./setup/global";
import { ensureS3Server, startS3Server, type S3Server } from "./setup/s3-server";
import { Database } from "../core/store/db";
import type { App } from "../core/app";

const KiB = 1024;
const MiB = 1024 * KiB;
const AUTH = { authorization: `Bearer ${DEV_TOKEN}` };
const TUS = { "tus-resumable": "1.0.0" };
const sha = (b: Buffer) => createHash("sha256").update(b).digest("hex");
/** Bytes that file-type recognizes as a PDF, followed by `size - 9` random bytes. */
const pdfBytes = (size: number) => Buffer.concat([Buffer.from("%PDF-1.7\n"), randomBytes(size - 9)]);

/** Runs one tus-js-client upload; `result` settles with onSuccess / onError. */
function send(data: Buffer, options: tus.UploadOptions): { upload: tus.Upload; result: Promise<tus.OnSuccessPayload> } {
  let upload!: tus.Upload;
  const result = new Promise<tus.OnSuccessPayload>((resolve, reject) => {
    upload = new tus.Upload(data, { retryDelays: [], headers: AUTH, ...options, onSuccess: resolve, onError: reject });
  });
  upload.start();
  return { upload, result };
}

const idOf = (url: string) => url.split("/").pop()!;
const json = async (res: Response): Promise<any> => res.json();
/** tus-js-client's Node build exports FileUrlStorage (its typings do not declare it). */
const { FileUrlStorage } = tus as unknown as { FileUrlStorage: new (path: string) => tus.UrlStorage };

async function head(url: string, headers: Record<string, string> = { ...AUTH, ...TUS }) {
  return fetch(url, { method: "HEAD", headers });
}

/** Attaches file `id` to invoice inv_1001 and reads it back through the object. */
async function attachAndRead(app: App, id: string): Promise<Buffer> {
  const api = client(app);
  const run = await api.post("/api/actions/invoice.attach-pdf", { subject: { kind: "object", objectTypeId: "invoice", primaryId: "inv_1001" }, params: { file: { id } } });
  expect(run.status).toBe(200);
  expect(run.body.status).toBe("succeeded");
  const res = await fetch(`${app.url}/api/objects/invoice/inv_1001/files/content?path=/properties/pdf`, { headers: AUTH });
  expect(res.status).toBe(200);
  return Buffer.from(await res.arrayBuffer());
}

describe("tus upload sessions (local storage)", () => {
  let app: App & { dataDir: string };
  let endpoint: string;
  beforeAll(async () => {
    app = await startApp();
    endpoint = `${app.url}/api/files/uploads`;
  });
  afterAll(async () => {
    await app?.close();
  });

  it("GET /api/status has a files part: the local blob directory, writable", async () => {
    const status = (await fetch(`${app.url}/api/status`, { headers: { authorization: `Bearer ${DEV_TOKEN}` } }).then((r) => r.json())) as any;
    expect(status.parts.files).toMatchObject({ status: "ok", storage: "local", latencyMs: expect.any(Number) });
    // and the store part says how long the single writer keeps writes waiting (unhealthy past 10 s)
    expect(status.parts.store).toMatchObject({ status: "ok", writerWaitMs: expect.any(Number) });
  });

  it("uploads in chunks and finishes into a file reference that is read through an object", async () => {
    const data = pdfBytes(3 * MiB + 123);
    const patches: string[] = [];
    const { upload, result } = send(data, {
      endpoint,
      chunkSize: 512 * KiB,
      metadata: { filename: "big report.pdf", filetype: "application/octet-stream" },
      onBeforeRequest: (req) => void (req.getMethod() === "PATCH" && patches.push(req.getHeader("Upload-Offset") ?? "")),
    });
    const { lastResponse } = await result;
    expect(patches).toHaveLength(7); // 3 MiB + 123 bytes in 512 KiB chunks
    expect(upload.url).toMatch(new RegExp(`^${endpoint}/[0-9a-f]{32}$`));
    expect(lastResponse.getStatus()).toBe(200);
    const reference = JSON.parse(lastResponse.getBody());
    expect(reference).toMatchObject({ name: "big report.pdf", size: data.length, sha256: sha(data), contentType: "application/pdf", declaredContentType: "application/octet-stream" });
    expect(reference.id).toMatch(/^file_/);
    expect(lastResponse.getHeader("Upload-File-Id")).toBe(reference.id);

    // for clients that only see the 204s: GET answers the same reference; HEAD says complete
    const got = await client(app).get(`/api/files/uploads/${idOf(upload.url!)}`);
    expect(got.status).toBe(200);
    expect(got.body).toEqual(reference);
    const h = await head(upload.url!);
    expect(h.status).toBe(200);
    expect([h.headers.get("upload-offset"), h.headers.get("upload-length"), h.headers.get("upload-file-id")]).toEqual([String(data.length), String(data.length), reference.id]);

    // the session's own bytes are gone; only its small record stays
    const uploads = path.join(app.dataDir, "uploads");
    expect(fs.existsSync(path.join(uploads, idOf(upload.url!)))).toBe(false);
    expect(fs.existsSync(path.join(uploads, `${idOf(upload.url!)}.json`))).toBe(true);

    const read = await attachAndRead(app, reference.id);
    expect(read.length).toBe(data.length);
    expect(sha(read)).toBe(sha(data));
  });

  it("finishes a 0-byte upload at creation, and a whole file sent with the creation request", async () => {
    const empty = await send(Buffer.alloc(0), { endpoint, metadata: { filename: "empty.txt" } }).result;
    expect(empty.lastResponse.getStatus()).toBe(201);
    expect(JSON.parse(empty.lastResponse.getBody())).toMatchObject({ name: "empty.txt", size: 0, sha256: sha(Buffer.alloc(0)) });

    const small = Buffer.from("hello, tus\n");
    const whole = await send(small, { endpoint, uploadDataDuringCreation: true, metadata: { name: "hello.txt", type: "text/plain" } }).result;
    expect(whole.lastResponse.getStatus()).toBe(201);
    expect(JSON.parse(whole.lastResponse.getBody())).toMatchObject({ name: "hello.txt", size: small.length, sha256: sha(small), contentType: "text/plain" });
  });

  it("resumes after a dropped connection: HEAD gives the offset, findPreviousUploads continues from it", async () => {
    const data = randomBytes(4 * MiB);
    const urlStorage = new FileUrlStorage(path.join(tempDir(), "tus-urls.json"));
    let abort: Promise<void> | undefined;
    const first = send(data, {
      endpoint,
      chunkSize: MiB,
      urlStorage,
      metadata: { filename: "resumed.bin" },
      onProgress: (sent) => {
        // Node reports progress when the first 16 KiB of a chunk are on the wire: this is the middle of the third chunk
        if (sent > 2 * MiB) abort ??= first.upload.abort();
      },
    });
    first.result.catch(() => undefined);
    await eventually(async () => abort !== undefined);
    await abort;
    const url = first.upload.url!;

    const h = await head(url);
    expect(h.status).toBe(200);
    const offset = Number(h.headers.get("upload-offset"));
    expect(offset).toBeGreaterThanOrEqual(2 * MiB);
    expect(offset).toBeLessThan(data.length);
    expect(h.headers.get("upload-length")).toBe(String(data.length));
    expect(h.headers.get("cache-control")).toBe("no-store");
    expect((await client(app).get(`/api/files/uploads/${idOf(url)}`)).status).toBe(404); // not finished

    const offsets: string[] = [];
    const second = new tus.Upload(data, { endpoint, chunkSize: MiB, urlStorage, headers: AUTH, retryDelays: [] });
    const previous = await second.findPreviousUploads();
    expect(previous).toHaveLength(1);
    second.resumeFromPreviousUpload(previous[0]!);
    const done = new Promise<tus.OnSuccessPayload>((resolve, reject) => {
      second.options.onSuccess = resolve;
      second.options.onError = reject;
      second.options.onBeforeRequest = (req) => void (req.getMethod() === "PATCH" && offsets.push(req.getHeader("Upload-Offset") ?? ""));
    });
    second.start();
    const { lastResponse } = await done;
    expect(second.url).toBe(url);
    expect(offsets[0]).toBe(String(offset));
    const reference = JSON.parse(lastResponse.getBody());
    expect(reference).toMatchObject({ name: "resumed.bin", size: data.length, sha256: sha(data) });
    // a finished upload resumed again is complete at once (HEAD), with the same file
    const third = new tus.Upload(data, { endpoint, urlStorage, headers: AUTH, retryDelays: [] });
    const again = await third.findPreviousUploads();
    third.resumeFromPreviousUpload(again[0]!);
    const res = await new Promise<tus.OnSuccessPayload>((resolve, reject) => {
      third.options.onSuccess = resolve;
      third.options.onError = reject;
      third.start();
    });
    expect(res.lastResponse.getHeader("Upload-File-Id")).toBe(reference.id);
  });

  it("keeps sessions to their creator: another identity gets 404, no token 401", async () => {
    const created = await fetch(endpoint, { method: "POST", headers: { ...AUTH, ...TUS, "upload-length": "10", "upload-metadata": `filename ${Buffer.from("mine.txt").toString("base64")}` } });
    expect(created.status).toBe(201);
    const url = created.headers.get("location")!;
    const alice = { authorization: `Bearer ${await tokenFor(app, "alice")}` };
    const patch = (headers: Record<string, string>, body = "01234", offset = 0) =>
      fetch(url, { method: "PATCH", headers: { ...TUS, "upload-offset": String(offset), "content-type": "application/offset+octet-stream", ...headers }, body });

    expect((await head(url, { ...alice, ...TUS })).status).toBe(404);
    const refused = await patch(alice);
    expect(refused.status).toBe(404);
    expect((await json(refused)).error.code).toBe("not_found");
    expect((await fetch(url, { method: "DELETE", headers: { ...alice, ...TUS } })).status).toBe(404);
    expect((await fetch(url, { headers: alice })).status).toBe(404);

    expect((await head(url, TUS)).status).toBe(401);
    const anonymous = await patch({});
    expect(anonymous.status).toBe(401);
    expect((await json(anonymous)).error.code).toBe("unauthorized");
    expect((await fetch(endpoint, { method: "POST", headers: { ...TUS, "upload-length": "10" } })).status).toBe(401);
    expect((await fetch(url)).status).toBe(401);

    // nothing of that reached the upload; its owner carries on, and sees the metadata it sent (not svc's own keys)
    const during = await head(url);
    expect([during.headers.get("upload-offset"), during.headers.get("upload-metadata")]).toEqual(["0", `filename ${Buffer.from("mine.txt").toString("base64")}`]);
    expect((await patch(AUTH)).status).toBe(204);
    const last = await patch(AUTH, "56789", 5);
    expect([last.status, last.headers.get("upload-offset")]).toEqual([200, "10"]);
    expect((await head(url)).headers.get("upload-metadata")).toBe(`filename ${Buffer.from("mine.txt").toString("base64")}`);
    expect((await json(last)).size).toBe(10);
    // its answer lost, the last chunk sent again at its old offset: 409 naming the file and how to read it
    const again = await patch(AUTH, "56789", 5);
    expect([again.status, (await json(again)).error]).toEqual([409, expect.objectContaining({ code: "conflict", message: expect.stringMatching(/^The upload is complete at offset 10: it is file file_\w+ \(send a PATCH at offset 10 with an empty body for its reference\)$/), details: { offset: 10, fileId: expect.stringMatching(/^file_/) } })]);
    const reference = await fetch(url, { method: "PATCH", headers: { ...AUTH, ...TUS, "upload-offset": "10", "content-type": "application/offset+octet-stream" } });
    expect([reference.status, (await json(reference)).size]).toEqual([200, 10]);
    // and alice's own upload is hers alone
    const hers = send(Buffer.from("alice's"), { endpoint, headers: alice });
    await hers.result;
    expect((await head(hers.upload.url!, { ...alice, ...TUS })).status).toBe(200);
    expect((await head(hers.upload.url!)).status).toBe(404);
  });

  it("answers tus protocol errors with structured codes", async () => {
    const created = await fetch(endpoint, { method: "POST", headers: { ...AUTH, ...TUS, "upload-length": "4" } });
    const url = created.headers.get("location")!;
    const patch = (headers: Record<string, string>) => fetch(url, { method: "PATCH", headers: { ...AUTH, ...TUS, "upload-offset": "0", "content-type": "application/offset+octet-stream", ...headers }, body: "ab" });

    const noVersion = await fetch(endpoint, { method: "POST", headers: { ...AUTH, "upload-length": "4" } });
    expect(noVersion.status).toBe(412);
    expect(noVersion.headers.get("tus-version")).toBe("1.0.0");
    expect((await json(noVersion)).error.code).toBe("precondition_failed");
    const noLength = await fetch(endpoint, { method: "POST", headers: { ...AUTH, ...TUS } });
    expect([noLength.status, (await json(noLength)).error]).toEqual([400, expect.objectContaining({ code: "invalid_request", message: "Send Upload-Length (the size in bytes), or Upload-Defer-Length: 1 to tell the size later" })]);
    const bothLengths = await fetch(endpoint, { method: "POST", headers: { ...AUTH, ...TUS, "upload-length": "4", "upload-defer-length": "1" } });
    expect([bothLengths.status, (await json(bothLengths)).error]).toEqual([400, expect.objectContaining({ code: "invalid_request", message: expect.stringContaining("not both") })]);
    const badType = await fetch(endpoint, { method: "POST", headers: { ...AUTH, ...TUS, "upload-length": "4", "upload-metadata": `filetype ${Buffer.from("not a type").toString("base64")}` } });
    expect([badType.status, (await json(badType)).error.code]).toEqual([400, "invalid_request"]);
    const wrongOffset = await patch({ "upload-offset": "3" });
    expect([wrongOffset.status, (await json(wrongOffset)).error.code]).toEqual([409, "conflict"]);
    const wrongType = await patch({ "content-type": "text/plain" });
    expect([wrongType.status, (await json(wrongType)).error.code]).toEqual([415, "unsupported_media_type"]);
    const tooMuch = await fetch(url, { method: "PATCH", headers: { ...AUTH, ...TUS, "upload-offset": "0", "content-type": "application/offset+octet-stream" }, body: "abcdef" });
    // the limit it names is the upload's own length, not the service's maximum
    expect([tooMuch.status, (await json(tooMuch)).error]).toEqual([413, expect.objectContaining({ code: "payload_too_large", message: "The body goes past the upload's length of 4 bytes (Upload-Length)", details: { limitBytes: 4 } })]);
    const unknown = await head(`${endpoint}/${"0".repeat(32)}`);
    expect(unknown.status).toBe(404);

    const options = await fetch(endpoint, { method: "OPTIONS" });
    expect(options.status).toBe(204);
    expect(options.headers.get("tus-version")).toBe("1.0.0");
    expect(options.headers.get("tus-max-size")).toBe(String(5 * 1024 ** 3));
    expect(options.headers.get("tus-extension")).toContain("creation-with-upload");

    const terminated = await fetch(url, { method: "DELETE", headers: { ...AUTH, ...TUS } });
    expect(terminated.status).toBe(204);
    expect((await head(url)).status).toBe(404);
  });

  it("points Locations at the request's own origin when SVC_API_PUBLIC_ORIGIN is unset", async () => {
    const created = await fetch(endpoint, { method: "POST", headers: { ...AUTH, ...TUS, "upload-length": "1" } });
    expect(created.headers.get("location")).toMatch(new RegExp(`^${endpoint}/[0-9a-f]{32}$`));
    expect(new Date(created.headers.get("upload-expires")!).getTime()).toBeGreaterThan(Date.now() + 23 * 3_600_000);
  });

  it("documents every upload route in OpenAPI", async () => {
    const doc = (await client(app).get("/docs/openapi.json")).body;
    const ops = doc.paths["/api/files/uploads"];
    const one = doc.paths["/api/files/uploads/{id}"];
    expect(Object.keys(ops).sort()).toEqual(["options", "post"]);
    expect(Object.keys(one).sort()).toEqual(["delete", "get", "head", "options", "patch"]);
    expect(Object.keys(ops.post.responses)).toEqual(expect.arrayContaining(["201", "400", "401", "412", "413"]));
    expect(Object.keys(one.patch.responses)).toEqual(expect.arrayContaining(["200", "204", "404", "409", "410", "412", "413", "415"]));
    expect(ops.post.description).toMatch(/Upload-Length/);
    expect(one.head.description).toMatch(/Upload-Offset/);
    expect(ops.options["x-svc-bearer-auth"]).toBe(false);
    expect(one.patch["x-svc-bearer-auth"]).toBe(true);
  });
});

describe("tus upload sessions with small limits, a public origin and a short TTL", () => {
  let app: App & { dataDir: string };
  let endpoint: string;
  const PUBLIC = "https://uploads.example.test/svc";
  beforeAll(async () => {
    app = await startApp({ env: { SVC_UPLOAD_MAX_BYTES: String(MiB), SVC_API_PUBLIC_ORIGIN: PUBLIC, SVC_UPLOAD_SESSION_TTL_MS: "60000" } });
    endpoint = `${app.url}/api/files/uploads`;
  });
  afterAll(async () => {
    await app?.close();
  });

  /** A client that sends to this app whatever host the Location names (as a reverse proxy would). */
  const local = (url: string) => url.replace(PUBLIC, app.url);

  it("refuses uploads over SVC_UPLOAD_MAX_BYTES and accepts exactly the limit", async () => {
    const over = send(randomBytes(MiB + 1), { endpoint });
    const err = (await over.result.catch((e: unknown) => e)) as tus.DetailedError;
    expect(err.originalResponse?.getStatus()).toBe(413);
    expect(JSON.parse(err.originalResponse!.getBody()).error).toMatchObject({ code: "payload_too_large", details: { limitBytes: MiB } });

    // a deferred length is cut off at the limit too
    const deferred = await fetch(endpoint, { method: "POST", headers: { ...AUTH, ...TUS, "upload-defer-length": "1" } });
    expect(deferred.status).toBe(201);
    const tooBig = await fetch(local(deferred.headers.get("location")!), { method: "PATCH", headers: { ...AUTH, ...TUS, "upload-offset": "0", "content-type": "application/offset+octet-stream" }, body: randomBytes(MiB + 1) });
    expect(tooBig.status).toBe(413);

    const options = await fetch(endpoint, { method: "OPTIONS" });
    expect(options.headers.get("tus-max-size")).toBe(String(MiB));

    const exact = randomBytes(MiB);
    const ok = await fetch(endpoint, { method: "POST", headers: { ...AUTH, ...TUS, "upload-length": String(MiB), "content-type": "application/offset+octet-stream" }, body: exact });
    expect(ok.status).toBe(201);
    expect((await json(ok)).sha256).toBe(sha(exact));
  });

  it("points Locations at SVC_API_PUBLIC_ORIGIN", async () => {
    const created = await fetch(endpoint, { method: "POST", headers: { ...AUTH, ...TUS, "upload-length": "3" } });
    expect(created.status).toBe(201);
    const location = created.headers.get("location")!;
    expect(location).toMatch(/^https:\/\/uploads\.example\.test\/svc\/api\/files\/uploads\/[0-9a-f]{32}$/);
    // the upload behind it is the one created
    expect((await head(local(location))).headers.get("upload-length")).toBe("3");
  });

  it("expires a session SVC_UPLOAD_SESSION_TTL_MS after its last chunk, and removes it", async () => {
    const create = async () => {
      const res = await fetch(endpoint, { method: "POST", headers: { ...AUTH, ...TUS, "upload-length": "8" } });
      return local(res.headers.get("location")!);
    };
    const record = (url: string) => path.join(app.dataDir, "uploads", `${idOf(url)}.json`);
    /** Moves the session's last activity `ms` into the past (as if that much time had passed). */
    const age = (url: string, ms: number) => {
      const rec = JSON.parse(fs.readFileSync(record(url), "utf8"));
      rec.creation_date = new Date(Date.now() - ms).toISOString();
      fs.writeFileSync(record(url), JSON.stringify(rec));
    };
    const patch = (url: string, offset: number, body: string) => fetch(url, { method: "PATCH", headers: { ...AUTH, ...TUS, "upload-offset": String(offset), "content-type": "application/offset+octet-stream" }, body });

    // active 50 s ago (created long before): a chunk now extends it by the full TTL
    const active = await create();
    age(active, 50_000);
    const chunk = await patch(active, 0, "abcd");
    expect(chunk.status).toBe(204);
    const expires = new Date(chunk.headers.get("upload-expires")!).getTime();
    expect(expires).toBeGreaterThan(Date.now() + 55_000);
    expect(Date.parse(JSON.parse(fs.readFileSync(record(active), "utf8")).creation_date)).toBeGreaterThan(Date.now() - 5_000);

    // idle for two minutes: gone
    const idle = await create();
    await patch(idle, 0, "abcd");
    age(idle, 120_000);
    expect((await head(idle)).status).toBe(410);
    const late = await patch(idle, 4, "efgh");
    expect([late.status, (await json(late)).error.code]).toEqual([410, "upload_expired"]);
    expect((await fetch(idle, { headers: AUTH })).status).toBe(410);

    // the background pass (every TTL/4 = 15 s) removes it, and only it
    await eventually(async () => !fs.existsSync(record(idle)), 30_000, 500);
    expect(fs.existsSync(path.join(app.dataDir, "uploads", idOf(idle)))).toBe(false);
    expect((await head(idle)).status).toBe(404);
    expect((await head(active)).headers.get("upload-offset")).toBe("4");
  });
});

describe("a process killed in the middle of an upload", () => {
  const start = (dataDir: string, port: number) => startFixtureProcess("sandbox-server.ts", dataDir, port);
  const fileCount = async (dataDir: string) => {
    const db = await Database.open(path.join(dataDir, "svc.db"));
    try {
      // the upload's own files (the sandbox's seed stores files of its own)
      return (await db.get<{ n: number }>("SELECT COUNT(*) AS n FROM files WHERE name = 'survivor.bin'"))!.n;
    } finally {
      await db.close();
    }
  };
  const blobs = (dataDir: string) => (fs.existsSync(path.join(dataDir, "blobs")) ? fs.readdirSync(path.join(dataDir, "blobs"), { recursive: true }).map(String).filter((n) => /[0-9a-f]{64}$/.test(n)) : []);

  it("resumes after restart over the same data directory; no half file is ever a file", async () => {
    const dataDir = tempDir();
    const port = await freePort();
    const endpoint = `http://127.0.0.1:${port}/api/files/uploads`;
    const data = randomBytes(6 * MiB);
    let child = await start(dataDir, port);
    let killed = false;
    const first = send(data, {
      endpoint,
      chunkSize: 2 * MiB,
      metadata: { filename: "survivor.bin" },
      onProgress: (sent) => {
        // Node reports progress when the first 16 KiB of a chunk are on the wire: this is the middle of the second chunk
        if (sent > 2 * MiB && !killed) {
          killed = true;
          child.kill("SIGKILL");
        }
      },
    });
    await expect(first.result).rejects.toThrow();
    await child.exited;
    const url = first.upload.url!;
    expect(url).toMatch(new RegExp(`^${endpoint}/[0-9a-f]{32}$`));
    expect(await fileCount(dataDir)).toBe(0);
    expect(blobs(dataDir).filter((b) => b.endsWith(sha(data)))).toEqual([]);

    child = await start(dataDir, port);
    try {
      const h = await head(url);
      expect(h.status).toBe(200);
      const offset = Number(h.headers.get("upload-offset"));
      expect(offset).toBeGreaterThanOrEqual(2 * MiB);
      expect(offset).toBeLessThan(data.length);
      const notYet = await fetch(`${endpoint}/${idOf(url)}`, { headers: AUTH });
      expect(notYet.status).toBe(404);
      expect((await json(notYet)).error.details).toEqual({ offset, length: data.length });

      const offsets: string[] = [];
      const { lastResponse } = await send(data, { endpoint, uploadUrl: url, chunkSize: 2 * MiB, onBeforeRequest: (req) => void (req.getMethod() === "PATCH" && offsets.push(req.getHeader("Upload-Offset") ?? "")) }).result;
      expect(offsets[0]).toBe(String(offset));
      const reference = JSON.parse(lastResponse.getBody());
      expect(reference).toMatchObject({ name: "survivor.bin", size: data.length, sha256: sha(data) });
      const got = await fetch(`${endpoint}/${idOf(url)}`, { headers: AUTH });
      expect(await json(got)).toEqual(reference);
    } finally {
      child.kill("SIGTERM");
      await child.exited;
    }
    expect(await fileCount(dataDir)).toBe(1);
    expect(blobs(dataDir).filter((b) => b.endsWith(sha(data)))).toHaveLength(1);
  });
});

describe("tus upload sessions on S3 (real S3-compatible server)", () => {
  const BUCKET = "svc-upload-sessions";
  let server: S3Server | undefined;
  let s3dir: string | undefined;
  let admin: S3Client | undefined;
  let app: (App & { dataDir: string }) | undefined;
  beforeAll(async () => {
    const bin = await ensureS3Server((line) => process.stderr.write(`${line}\n`));
    s3dir = tempDir();
    server = await startS3Server(bin, { port: await freePort(), dir: s3dir, accessKey: "svcuploadaccess", secretKey: "svc-upload-secret-key-0123456789" });
    admin = new S3Client({ region: server.region, endpoint: server.endpoint, forcePathStyle: true, credentials: { accessKeyId: server.accessKey, secretAccessKey: server.secretKey } });
    await admin.send(new CreateBucketCommand({ Bucket: BUCKET }));
    // short timeouts, so a bucket that stops answering fails requests within the tests' time
    app = await startApp({ env: { SVC_FILE_STORAGE: "s3", SVC_S3_ENDPOINT: server.endpoint, SVC_S3_BUCKET: BUCKET, SVC_S3_ACCESS_KEY_ID: server.accessKey, SVC_S3_SECRET_ACCESS_KEY: server.secretKey, SVC_S3_CONNECT_TIMEOUT_MS: "1000", SVC_S3_IDLE_TIMEOUT_MS: "1000" } });
  });
  afterAll(async () => {
    await app?.close();
    admin?.destroy();
    await server?.stop();
    if (s3dir) fs.rmSync(s3dir, { recursive: true, force: true });
  });

  const keys = async (prefix: string) => ((await admin!.send(new ListObjectsV2Command({ Bucket: BUCKET, Prefix: prefix }))).Contents ?? []).map((o) => o.Key!);

  it("GET /api/status has a files part: degraded while the bucket does not answer, ok again once it does", async () => {
    const status = async () => (await fetch(`${app!.url}/api/status`, { headers: { authorization: `Bearer ${DEV_TOKEN}` } }).then((r) => r.json())) as any;
    await server!.pause();
    try {
      const away = await status();
      expect(away.status).toBe("degraded");
      expect(away.parts.files).toMatchObject({ status: "unhealthy", storage: "s3", error: expect.stringMatching(/no answer within 2000 ms|timed out|abort/i) });
      expect((await fetch(`${app!.url}/health`)).status).toBe(503);
    } finally {
      server!.resume();
    }
    await new Promise((r) => setTimeout(r, 5_100)); // the last answer is reused for 5 s
    const back = await status();
    expect(back.parts.files).toMatchObject({ status: "ok", storage: "s3", latencyMs: expect.any(Number) });
  }, 30_000);

  it("writes the chunks straight to the bucket under uploads/ and finishes into a file reference", async () => {
    const endpoint = `${app!.url}/api/files/uploads`;
    const data = pdfBytes(11 * MiB + 7);
    let midway: string[] | undefined;
    const sent = send(data, {
      endpoint,
      chunkSize: 3 * MiB,
      metadata: { filename: "statement.pdf", filetype: "application/pdf" },
      onChunkComplete: (_chunk, accepted) => {
        if (accepted === 6 * MiB) void keys("uploads/").then((k) => (midway = k));
      },
    });
    const { lastResponse } = await sent.result;
    const id = idOf(sent.upload.url!);
    expect(sent.upload.url).toBe(`${endpoint}/${id}`);
    const reference = JSON.parse(lastResponse.getBody());
    expect(reference).toMatchObject({ name: "statement.pdf", size: data.length, sha256: sha(data), contentType: "application/pdf" });

    // while it ran, the session lived in the bucket (the record, and a multipart upload)
    await eventually(async () => midway);
    expect(midway).toContain(`uploads/${id}.info`);
    // afterwards only its record is left there; the bytes are a blob
    expect(await keys("uploads/")).toEqual([`uploads/${id}.info`]);
    expect((await admin!.send(new ListMultipartUploadsCommand({ Bucket: BUCKET, Prefix: "uploads/" }))).Uploads ?? []).toEqual([]);
    expect(await keys("blobs/")).toContain(`blobs/${sha(data)}`);
    expect(fs.existsSync(path.join(app!.dataDir, "uploads"))).toBe(false);

    expect((await client(app!).get(`/api/files/uploads/${id}`)).body).toEqual(reference);
    const read = await attachAndRead(app!, reference.id);
    expect(sha(read)).toBe(sha(data));
  });

  it("answers an upload session's requests 503 unavailable, naming the bucket, while the bucket does not answer (tus answered 500), and resumes after", async () => {
    const endpoint = `${app!.url}/api/files/uploads`;
    const create = () => fetch(endpoint, { method: "POST", headers: { ...AUTH, ...TUS, "upload-length": "10" } });
    const created = await create();
    expect(created.status).toBe(201);
    const location = created.headers.get("location")!;
    const chunk = () => fetch(location, { method: "PATCH", headers: { ...AUTH, ...TUS, "upload-offset": "0", "content-type": "application/offset+octet-stream" }, body: "0123456789" });
    const away = { code: "unavailable", message: expect.stringMatching(new RegExp(`^File storage did not answer \\(S3 bucket "${BUCKET}" at http://127\\.0\\.0\\.1:\\d+\\)`)) };
    await server!.pause();
    try {
      const [patch, again] = await Promise.all([chunk(), create()]);
      expect([patch.status, (await json(patch)).error]).toEqual([503, expect.objectContaining(away)]);
      expect([again.status, (await json(again)).error]).toEqual([503, expect.objectContaining(away)]);
    } finally {
      server!.resume();
    }
    // nothing was lost: the session takes the same chunk once the bucket answers, and becomes a file
    const done = await chunk();
    expect(done.status).toBe(200);
    expect(await done.json()).toMatchObject({ size: 10, sha256: sha(Buffer.from("0123456789")) });
    // and outside tus's own handling (ending a finished upload: svc deletes its session itself), the same 503
    await server!.pause();
    try {
      const ended = await fetch(location, { method: "DELETE", headers: { ...AUTH, ...TUS } });
      expect([ended.status, (await json(ended)).error]).toEqual([503, expect.objectContaining(away)]);
    } finally {
      server!.resume();
    }
    expect((await fetch(location, { method: "DELETE", headers: { ...AUTH, ...TUS } })).status).toBe(204);
  }, 90_000);
});
