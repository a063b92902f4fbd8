/**
 * Files over real HTTP (spec 2.6, 4.1, 4.3, 5, 7, 8): multipart uploads from a real client (undici's
 * FormData and fetch), reads through the owning object or run, download URLs that need no session.
 */
import { createHash } from "node:crypto";
import fs from "node:fs";
import http from "node:http";
import path from "node:path";
import pino from "pino";
import * as v from "valibot";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEV_TOKEN, client, eventually, startApp, tokenFor } from "./helpers";
import { freePort } from "./setup/global";
import { Database } from "../core/store/db";
import { defineAction, defineConnector, defineProject } from "../core/sdk";
import { sandboxProject } from "../sandbox/project";
import type { App } from "../core/app";
import { FileStore } from "../core/files/file-store";
import type { LocalBlobStore } from "../core/files/local-blob-store";

const MiB = 1024 * 1024;
const LIMIT = 25 * MiB;
const PNG = Buffer.from("89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d4944415478da63f8ffff3f0005fe02fea7d6a0a00000000049454e44ae426082", "hex");
const sha256 = (b: Uint8Array) => createHash("sha256").update(b).digest("hex");

/** The sandbox plus an action that shares an invoice's PDF through the SDK's blob operations. */
const sharing = defineConnector({
  id: "sharing",
  actions: {
    "invoice.share-pdf": defineAction({
      subject: { objectTypeId: "invoice" },
      params: v.object({ expiresInMs: v.optional(v.number()) }),
      async run(ctx) {
        const invoice = await ctx.objects.get("invoice", ctx.subject!.primaryId);
        return ctx.blobs.createDownloadUrl(invoice!.properties.pdf as { id: string }, { expiresInMs: ctx.params.expiresInMs });
      },
    }),
    "download-url.revoke": defineAction({
      params: v.object({ id: v.string() }),
      async run(ctx) {
        await ctx.blobs.revokeDownloadUrl(ctx.params.id);
        return { revoked: ctx.params.id };
      },
    }),
  },
});
const project = defineProject({ ...sandboxProject, connectors: [...sandboxProject.connectors, sharing] });

let app: App;
let dev: ReturnType<typeof client>;
let tokens: Record<string, string>;
let origin: string;
const errorLog: Array<Record<string, unknown>> = [];
beforeAll(async () => {
  const port = await freePort();
  origin = `http://127.0.0.1:${port}`;
  // what the app logs at error level, one JSON object per line
  const logger = pino({ level: "error" }, { write: (line: string) => void errorLog.push(JSON.parse(line)) });
  app = await startApp({ project, env: { PORT: String(port), SVC_API_PUBLIC_ORIGIN: origin }, logger });
  dev = client(app);
  tokens = { alice: await tokenFor(app, "alice"), auditor: await tokenFor(app, "auditor") };
});
afterAll(() => app?.close());

/** POST /api/files with a real multipart body. */
async function upload(parts: Array<[string, Blob | string, string?]>, token = DEV_TOKEN) {
  const form = new FormData();
  for (const [name, value, filename] of parts) {
    if (typeof value === "string") form.append(name, value);
    else form.append(name, value, filename);
  }
  const res = await fetch(`${app.url}/api/files`, { method: "POST", headers: { authorization: `Bearer ${token}` }, body: form });
  return { status: res.status, body: (await res.json()) as any };
}
const file = (bytes: Uint8Array | string, type = "application/octet-stream") => new Blob([bytes], { type });

/** How many file rows and stored blobs exist (nothing may be left behind by a refused upload). */
async function stored(): Promise<{ files: number; blobs: number }> {
  const db = app.container.resolve(Database);
  const files = (await db.get<{ n: number }>("SELECT COUNT(*) AS n FROM files"))!.n;
  const walk = (dir: string): number => (fs.existsSync(dir) ? fs.readdirSync(dir, { withFileTypes: true }).reduce((n, e) => n + (e.isDirectory() ? walk(path.join(dir, e.name)) : 1), 0) : 0);
  return { files, blobs: walk(path.join(app.config.dataDir, "blobs")) };
}

async function attach(invoiceId: string, fileId: string) {
  const res = await dev.post("/api/actions/invoice.attach-pdf", { subject: { kind: "object", objectTypeId: "invoice", primaryId: invoiceId }, params: { file: { id: fileId } } });
  expect(res.body.status).toBe("succeeded");
  return res.body;
}

describe("POST /api/files (spec 4.1, 8)", () => {
  it("stores a file part and answers its reference", async () => {
    const bytes = Buffer.from("Invoice INV-1001\nTotal: 1200 USD\n");
    const res = await upload([["file", file(bytes, "text/plain"), "inv-1001.txt"]]);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ id: expect.stringMatching(/^file_[0-9A-Z]+$/), name: "inv-1001.txt", contentType: "text/plain", size: bytes.length, sha256: sha256(bytes), createdAt: expect.any(String) });
  });

  it("takes the name field (before or after the file), keeps unicode and drops path components", async () => {
    expect((await upload([["name", "Résumé — 2026.pdf"], ["file", file("%PDF-1.4\n"), "x.pdf"]])).body.name).toBe("Résumé — 2026.pdf");
    expect((await upload([["file", file("x"), "../../etc/passwd"]])).body.name).toBe("passwd");
    expect((await upload([["file", file("x"), "..\\..\\boot.ini"]])).body.name).toBe("boot.ini");
    expect((await upload([["file", file("x"), "a.txt"], ["name", "late.txt"]])).body.name).toBe("late.txt");
    expect((await upload([["name", "n".repeat(256)], ["file", file("x"), "a.txt"]])).body.error.details.reason).toBe("name_too_long");
    // an empty name names nothing: the part's filename stays
    expect((await upload([["file", file("x"), "kept.txt"], ["name", ""]])).body.name).toBe("kept.txt");
    expect((await upload([["name", " "], ["file", file("x"), "kept.txt"]])).body.name).toBe("kept.txt");
  });

  it("stores 0 bytes", async () => {
    const res = await upload([["file", file(new Uint8Array(0)), "empty.bin"]]);
    expect(res.body).toMatchObject({ size: 0, sha256: sha256(new Uint8Array(0)) });
  });

  it("checks the declared content type against the bytes", async () => {
    const res = await upload([["file", file(PNG, "text/plain"), "pixel.txt"]]);
    expect(res.body).toMatchObject({ contentType: "image/png", declaredContentType: "text/plain" });
  });

  it("stores binary bytes in a part without a Content-Type (text/plain by RFC 7578) as application/octet-stream", async () => {
    const bytes = Buffer.from([0x00, 0x9f, 0x92, 0x96, 0xff, 0x10, 0x20]);
    const raw = Buffer.concat([Buffer.from('--b\r\nContent-Disposition: form-data; name="file"; filename="data.bin"\r\n\r\n'), bytes, Buffer.from("\r\n--b--\r\n")]);
    const res = await fetch(`${app.url}/api/files`, { method: "POST", headers: { authorization: `Bearer ${DEV_TOKEN}`, "content-type": "multipart/form-data; boundary=b" }, body: raw });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ name: "data.bin", size: bytes.length, contentType: "application/octet-stream", declaredContentType: "text/plain" });
  });

  it("accepts exactly 25 MiB and refuses 25 MiB + 1 with 413, leaving nothing stored", async () => {
    const exact = Buffer.alloc(LIMIT, 7);
    expect((await upload([["file", file(exact), "exact.bin"]])).body).toMatchObject({ size: LIMIT, sha256: sha256(exact) });
    const before = await stored();
    const over = await upload([["file", file(Buffer.alloc(LIMIT + 1, 8)), "over.bin"]]);
    expect(over).toMatchObject({ status: 413, body: { error: { code: "payload_too_large" } } });
    expect(await stored()).toEqual(before);
  });

  it("refuses an oversized chunked body (no Content-Length) with 413 as it streams", async () => {
    const before = await stored();
    const boundary = "svc-test-boundary";
    const url = new URL(`${app.url}/api/files`);
    const status = await new Promise<number>((resolve, reject) => {
      const req = http.request({ host: url.hostname, port: url.port, path: url.pathname, method: "POST", headers: { authorization: `Bearer ${DEV_TOKEN}`, "content-type": `multipart/form-data; boundary=${boundary}`, "transfer-encoding": "chunked" } }, (res) => {
        res.resume();
        resolve(res.statusCode!);
      });
      req.on("error", (err) => ((err as NodeJS.ErrnoException).code === "EPIPE" || (err as NodeJS.ErrnoException).code === "ECONNRESET" ? undefined : reject(err)));
      req.write(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="big.bin"\r\nContent-Type: application/octet-stream\r\n\r\n`);
      const chunk = Buffer.alloc(MiB, 1);
      let sent = 0;
      const pump = () => {
        while (sent < 27) {
          sent++;
          if (!req.write(chunk)) return void req.once("drain", pump);
        }
        req.end(`\r\n--${boundary}--\r\n`);
      };
      pump();
    });
    expect(status).toBe(413);
    await expect.poll(stored).toEqual(before);
  });

  it("closes a keep-alive connection after refusing an upload it stopped reading, so the next request is answered", async () => {
    const boundary = "svc-test-boundary";
    const url = new URL(`${app.url}/api/files`);
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const send = (field: string, chunks: number) =>
      new Promise<{ status: number; connection?: string }>((resolve, reject) => {
        const req = http.request({ agent, host: url.hostname, port: url.port, path: url.pathname, method: "POST", headers: { authorization: `Bearer ${DEV_TOKEN}`, "content-type": `multipart/form-data; boundary=${boundary}`, "transfer-encoding": "chunked" } }, (res) => {
          res.resume();
          res.on("end", () => resolve({ status: res.statusCode!, connection: res.headers.connection }));
        });
        req.on("error", (err) => ((err as NodeJS.ErrnoException).code === "EPIPE" || (err as NodeJS.ErrnoException).code === "ECONNRESET" ? undefined : reject(err)));
        req.write(`--${boundary}\r\nContent-Disposition: form-data; name="${field}"; filename="a.bin"\r\nContent-Type: application/octet-stream\r\n\r\n`);
        const chunk = Buffer.alloc(64 * 1024, 1);
        let sent = 0;
        const pump = () => {
          while (sent < chunks) {
            sent++;
            if (!req.write(chunk)) return void req.once("drain", pump);
          }
          req.end(`\r\n--${boundary}--\r\n`);
        };
        pump();
      });
    try {
      // a file part under another name is refused at its headers; 3 MiB of it are still on the way
      expect(await send("attachment", 48)).toEqual({ status: 400, connection: "close" });
      const started = Date.now();
      expect((await send("file", 1)).status).toBe(200);
      expect(Date.now() - started).toBeLessThan(2000);
    } finally {
      agent.destroy();
    }
  });

  it("refuses a body that is not multipart (415), has no file part or two of them (400), storing nothing", async () => {
    const before = await stored();
    expect((await dev.post("/api/files", { file: "x" })).body.error.code).toBe("unsupported_media_type");
    expect((await upload([["name", "only-a-name.txt"]])).body.error).toMatchObject({ code: "invalid_request", details: { reason: "no_file_part" } });
    const two = await upload([["file", file("first"), "a.txt"], ["file", file("second"), "b.txt"]]);
    expect(two).toMatchObject({ status: 400, body: { error: { details: { reason: "several_file_parts" } } } });
    expect((await upload([["attachment", file("x"), "a.txt"]])).body.error.details.reason).toBe("unknown_field");
    expect((await upload([["note", "hi"], ["file", file("x"), "a.txt"]])).body.error.details.reason).toBe("unknown_field");
    // a file part without a filename is a field to multipart: said so, not "unexpected field"
    const raw = '--b\r\nContent-Disposition: form-data; name="file"\r\nContent-Type: application/pdf\r\n\r\n%PDF-1.4\r\n--b--\r\n';
    const nameless = await fetch(`${app.url}/api/files`, { method: "POST", headers: { authorization: `Bearer ${DEV_TOKEN}`, "content-type": "multipart/form-data; boundary=b" }, body: raw });
    expect(((await nameless.json()) as any).error).toMatchObject({ code: "invalid_request", message: expect.stringMatching(/^The "file" part has no filename/), details: { reason: "no_filename" } });
    expect(await stored()).toEqual(before);
    expect((await client(app, null).post("/api/files")).status).toBe(401);
  });

  it("stores the bytes of concurrent uploads of the same content once", async () => {
    const bytes = Buffer.from(`same bytes ${Date.now()}`);
    const results = await Promise.all(Array.from({ length: 6 }, (_, i) => upload([["file", file(bytes), `copy-${i}.txt`]])));
    expect(new Set(results.map((r) => r.body.id)).size).toBe(6);
    expect(new Set(results.map((r) => r.body.sha256))).toEqual(new Set([sha256(bytes)]));
    const hash = sha256(bytes);
    expect(fs.existsSync(path.join(app.config.dataDir, "blobs", hash.slice(0, 2), hash.slice(2, 4), hash))).toBe(true);
  });
});

describe("reading through the owner (spec 4.3)", () => {
  let pdf: { id: string; sha256: string; size: number };
  const bytes = Buffer.from("%PDF-1.4\n% sandbox invoice 1002\n" + "x".repeat(5000));
  const content = (query: string, token = DEV_TOKEN, headers: Record<string, string> = {}) => fetch(`${app.url}/api/objects/invoice/inv_1002/files/content?${query}`, { headers: { authorization: `Bearer ${token}`, ...headers } });

  beforeAll(async () => {
    pdf = (await upload([["file", file(bytes, "application/pdf"), "INV-1002.pdf"]])).body;
    await attach("inv_1002", pdf.id);
  });

  it("stores the whole reference in the file property", async () => {
    const invoice = (await dev.get("/api/objects/invoice/inv_1002")).body;
    expect(invoice.properties.pdf).toEqual({ id: pdf.id, name: "INV-1002.pdf", contentType: "application/pdf", size: bytes.length, sha256: sha256(bytes) });
  });

  it("answers the bytes with type, safe disposition, ETag, nosniff; ranges; 304", async () => {
    const res = await content("path=/properties/pdf");
    expect(res.status).toBe(200);
    expect(Buffer.from(await res.arrayBuffer())).toEqual(bytes);
    expect(Object.fromEntries(["content-type", "content-disposition", "etag", "x-content-type-options", "accept-ranges", "content-length"].map((h) => [h, res.headers.get(h)]))).toEqual({
      "content-type": "application/pdf",
      "content-disposition": "attachment; filename=INV-1002.pdf",
      etag: `"${sha256(bytes)}"`,
      "x-content-type-options": "nosniff",
      "accept-ranges": "bytes",
      "content-length": String(bytes.length),
    });
    const part = await content("path=/properties/pdf", DEV_TOKEN, { range: "bytes=5-14" });
    expect(part.status).toBe(206);
    expect(part.headers.get("content-range")).toBe(`bytes 5-14/${bytes.length}`);
    expect(Buffer.from(await part.arrayBuffer())).toEqual(bytes.subarray(5, 15));
    expect((await content("path=/properties/pdf", DEV_TOKEN, { range: `bytes=${bytes.length + 10}-` })).status).toBe(416);
    expect((await content("path=/properties/pdf", DEV_TOKEN, { "if-none-match": `"${sha256(bytes)}"` })).status).toBe(304);
    // If-None-Match compares weakly (RFC 9110 13.1.2)
    expect((await content("path=/properties/pdf", DEV_TOKEN, { "if-none-match": `"other", W/"${sha256(bytes)}"` })).status).toBe(304);
    // a HEAD of a range names it as the GET does (RFC 9110 15.3.7)
    const head = await fetch(`${app.url}/api/objects/invoice/inv_1002/files/content?path=/properties/pdf`, { method: "HEAD", headers: { authorization: `Bearer ${DEV_TOKEN}`, range: "bytes=5-14" } });
    expect([head.status, head.headers.get("content-range"), head.headers.get("content-length")]).toEqual([206, `bytes 5-14/${bytes.length}`, "10"]);
    expect((await content("path=/properties/pdf&disposition=inline")).headers.get("content-disposition")).toBe("inline; filename=INV-1002.pdf");
  });

  it("streams a large file from its store and lets go of it when the client goes away", async () => {
    const big = Buffer.alloc(16 * MiB, 7);
    big.write("%PDF-1.4\n");
    const stored = (await upload([["file", file(big, "application/pdf"), "big.pdf"]])).body;
    await attach("inv_1004", stored.id);
    const whole = await fetch(`${app.url}/api/objects/invoice/inv_1004/files/content?path=/properties/pdf`, { headers: { authorization: `Bearer ${DEV_TOKEN}` } });
    expect(whole.headers.get("content-length")).toBe(String(big.length));
    expect(sha256(Buffer.from(await whole.arrayBuffer()))).toBe(stored.sha256);
    // the blob's open file descriptors in this process (the app runs here)
    const blobFds = () =>
      fs.readdirSync("/proc/self/fd").filter((fd) => {
        try {
          return fs.readlinkSync(`/proc/self/fd/${fd}`).includes(stored.sha256);
        } catch {
          return false; // closed meanwhile
        }
      });
    // read the first bytes, then hang up: the file must be closed, not read to its end into the void
    const store = app.container.resolve(FileStore);
    const open = store.open.bind(store);
    const opened: Array<{ destroyed: boolean; bytesRead?: number }> = [];
    store.open = async (...args: Parameters<typeof store.open>) => {
      const result = await open(...args);
      opened.push(result.stream as unknown as { destroyed: boolean; bytesRead?: number });
      return result;
    };
    const firstBytes = await new Promise<number>((resolve, reject) => {
      const req = http.get(`${app.url}/api/objects/invoice/inv_1004/files/content?path=/properties/pdf`, { headers: { authorization: `Bearer ${DEV_TOKEN}` } }, (res) => {
        expect(res.statusCode).toBe(200);
        res.once("data", (chunk: Buffer) => {
          expect(blobFds().length).toBeGreaterThan(0); // still streaming: the file is open
          req.destroy();
          resolve(chunk.length);
        });
      });
      req.on("error", () => undefined);
      setTimeout(() => reject(new Error("no bytes")), 10_000);
    });
    store.open = open;
    expect(firstBytes).toBeGreaterThan(0);
    await eventually(async () => blobFds().length === 0, 5_000, 20).catch(() => undefined);
    expect(blobFds()).toEqual([]);
    expect(opened).toHaveLength(1);
    expect(opened[0]!.destroyed).toBe(true);
    expect(opened[0]!.bytesRead).toBeLessThan(big.length); // stopped early, not read to the end
    expect(errorLog.filter((l) => l.fileId === stored.id)).toEqual([]); // a client hanging up is no read failure
  });

  it("answers 500 and logs why when a file's bytes cannot be read", async () => {
    const bytes = Buffer.concat([Buffer.from("%PDF-1.4\n"), crypto.getRandomValues(Buffer.alloc(4096))]);
    const stored = (await upload([["file", file(bytes, "application/pdf"), "unreadable.pdf"]])).body;
    await attach("inv_1004", stored.id);
    // the blob becomes a directory: opening it works, the first read fails (EISDIR), as a failing disk would
    const blobs = app.container.resolve(FileStore).blobs as LocalBlobStore;
    const blob = blobs.pathOf(stored.sha256);
    fs.rmSync(blob, { force: true });
    fs.mkdirSync(blob);
    const res = await fetch(`${app.url}/api/objects/invoice/inv_1004/files/content?path=/properties/pdf`, { headers: { authorization: `Bearer ${DEV_TOKEN}` } });
    expect(res.status).toBe(500);
    await res.arrayBuffer();
    const logged = errorLog.find((l) => l.fileId === stored.id);
    expect(logged).toMatchObject({ msg: "reading a file's bytes failed", sha256: stored.sha256, blobStore: "local", err: { code: "EISDIR" } });
  });

  it("checks the caller may view the owner, and says what is wrong with a path", async () => {
    expect((await content("path=/properties/pdf", tokens.auditor)).status).toBe(403); // auditor sees customers only
    expect((await content("path=/properties/pdf", tokens.alice)).status).toBe(200);
    const errors = await Promise.all(["path=/properties/number", "path=properties/pdf", "path=/properties/../pdf", "path=/properties/nope"].map(async (q) => [(await content(q)).status, q]));
    expect(errors).toEqual([[404, "path=/properties/number"], [400, "path=properties/pdf"], [400, "path=/properties/../pdf"], [404, "path=/properties/nope"]]);
    expect((await fetch(`${app.url}/api/objects/invoice/inv_1001/files/content?path=/properties/pdf`, { headers: { authorization: `Bearer ${DEV_TOKEN}` } })).status).toBe(404); // holds no file
    expect((await fetch(`${app.url}/api/objects/invoice/inv_9999/files/content?path=/properties/pdf`, { headers: { authorization: `Bearer ${DEV_TOKEN}` } })).status).toBe(404);
  });

  it("has no route that reads a file by its id alone", async () => {
    for (const p of [`/api/files/${pdf.id}`, `/api/files/${pdf.id}/content`]) expect((await dev.get(p)).status).toBe(404);
    // a file id handed to an action does not make it readable: params the action drops hold nothing,
    const smuggled = await client(app, await tokenFor(app, "ops-bot")).post("/api/actions/diagnostics.noop", { params: { x: { id: pdf.id } } });
    expect(smuggled.body.status).toBe("succeeded");
    const read = await fetch(`${app.url}/api/actions/diagnostics.noop/runs/${smuggled.body.runId}/files/content?path=/params/x`, { headers: { authorization: `Bearer ${DEV_TOKEN}` } });
    expect(read.status).toBe(404);
    // and a caller may pass only files it uploaded itself
    const hers = (await upload([["file", file("alice's notes"), "notes.txt"]], tokens.alice)).body;
    const taken = await dev.post("/api/actions/invoice.attach-pdf", { subject: { kind: "object", objectTypeId: "invoice", primaryId: "inv_1005" }, params: { file: { id: hers.id } } });
    expect(taken).toMatchObject({ status: 403, body: { error: { code: "forbidden", details: { path: "/params/file", fileId: hers.id } } } });
  });

  it("never serves active content inline, whatever its parameters", async () => {
    const html = (await upload([["file", file("<script>alert(1)</script>", "text/html; charset=utf-8"), "x.html"]])).body;
    await attach("inv_1006", html.id);
    const res = await fetch(`${app.url}/api/objects/invoice/inv_1006/files/content?path=/properties/pdf&disposition=inline`, { headers: { authorization: `Bearer ${DEV_TOKEN}` } });
    expect(res.headers.get("content-disposition")).toMatch(/^attachment/);
    expect(res.headers.get("content-security-policy")).toMatch(/^sandbox/);
  });

  it("reads a file an action run holds in its params, with the run's permission", async () => {
    const run = await attach("inv_1003", pdf.id);
    const url = `${app.url}/api/actions/invoice.attach-pdf/runs/${run.runId}/files/content?path=/params/file`;
    const res = await fetch(url, { headers: { authorization: `Bearer ${DEV_TOKEN}` } });
    expect(res.status).toBe(200);
    expect(sha256(Buffer.from(await res.arrayBuffer()))).toBe(pdf.sha256);
    expect((await fetch(url, { headers: { authorization: `Bearer ${tokens.alice}` } })).status).toBe(403); // alice may not run attach-pdf
    expect((await fetch(url.replace("/params/file", "/params/nothing"), { headers: { authorization: `Bearer ${DEV_TOKEN}` } })).status).toBe(404);
    // the run's record id names it too (both are in the record; the record id was 404)
    expect(run.id).not.toBe(run.runId);
    const byId = await fetch(url.replace(run.runId, run.id), { headers: { authorization: `Bearer ${DEV_TOKEN}` } });
    expect(byId.status).toBe(200);
    expect((await dev.get(`/api/actions/invoice.attach-pdf/runs/${run.id}`)).body).toMatchObject({ id: run.id, runId: run.runId });
  });

  it("keeps a referenced file and removes one never referenced after the retention", async () => {
    const loose = (await upload([["file", file(`loose ${Date.now()}`), "loose.txt"]])).body;
    const removed = await app.container.resolve(FileStore).collectUnreferenced(0);
    expect(removed).toBeGreaterThanOrEqual(1);
    const ids = (await app.container.resolve(Database).all<{ id: string }>("SELECT id FROM files")).map((r) => r.id);
    expect(ids).toContain(pdf.id);
    expect(ids).not.toContain(loose.id);
  });
});

describe("download URLs (spec 2.6, 4.3, 5)", () => {
  let pdf: { id: string; sha256: string };
  const bytes = Buffer.from("%PDF-1.4\n% shared invoice\n");
  beforeAll(async () => {
    pdf = (await upload([["file", file(bytes, "application/pdf"), "shared.pdf"]])).body;
    await attach("inv_1004", pdf.id);
  });
  const create = (body: Record<string, unknown>, token = DEV_TOKEN) => client(app, token).post("/api/objects/invoice/inv_1004/files/download-urls", { path: "/properties/pdf", ...body });

  it("serves one file with no session at the public origin, distinct per creation, until revoked (410)", async () => {
    const a = await create({});
    const b = await create({});
    expect(a.status).toBe(200);
    expect(a.body).toEqual({ id: expect.stringMatching(/^dl_/), url: expect.stringMatching(new RegExp(`^${origin}/api/download/`)), expiresAt: expect.any(String) });
    expect(Date.parse(a.body.expiresAt) - Date.now()).toBeGreaterThan(3_590_000); // 1 hour by default
    expect(b.body.url).not.toBe(a.body.url);
    const url = a.body.url.replace(origin, app.url);
    const res = await fetch(url);
    expect(res.status).toBe(200);
    expect(Buffer.from(await res.arrayBuffer())).toEqual(bytes);
    expect((await fetch(url, { headers: { range: "bytes=0-3" } })).status).toBe(206);
    // the secret is the capability for this one file only: not a token, not another route
    const secret = url.split("/").pop()!;
    expect((await client(app, secret).get("/api/objects/invoice/inv_1004")).status).toBe(401);
    // only its creator revokes it through the API
    expect((await client(app, tokens.alice).post(`/api/download-urls/${a.body.id}/revoke`, {})).status).toBe(404);
    const revoked = await dev.post(`/api/download-urls/${a.body.id}/revoke`, {});
    expect(revoked).toMatchObject({ status: 200, body: { id: a.body.id, revokedAt: expect.any(String) } });
    expect(await (await fetch(url)).json()).toMatchObject({ error: { code: "download_url_revoked" } });
    expect((await fetch(url)).status).toBe(410);
    expect((await fetch(b.body.url.replace(origin, app.url))).status).toBe(200);
  });

  it("answers 410 after expiry and 404 for a secret never issued", async () => {
    const short = await create({ expiresInMs: 1 });
    await new Promise((r) => setTimeout(r, 20));
    const res = await fetch(short.body.url.replace(origin, app.url));
    expect(res.status).toBe(410);
    expect(((await res.json()) as any).error.code).toBe("download_url_expired");
    expect((await fetch(`${app.url}/api/download/${"A".repeat(43)}`)).status).toBe(404);
  });

  it("needs view access to the owner to create one", async () => {
    expect((await create({}, tokens.auditor)).status).toBe(403);
  });

  it("is created by handlers through the SDK's blob operations", async () => {
    const run = await dev.post("/api/actions/invoice.share-pdf", { subject: { kind: "object", objectTypeId: "invoice", primaryId: "inv_1004" }, params: { expiresInMs: 60_000 } });
    expect(run.body.status).toBe("succeeded");
    const shared = run.body.result;
    expect(shared.url.startsWith(`${origin}/api/download/`)).toBe(true);
    expect(Date.parse(shared.expiresAt) - Date.now()).toBeLessThanOrEqual(60_000);
    expect((await fetch(shared.url.replace(origin, app.url))).status).toBe(200);
    // at most 7 days, through the SDK and over HTTP alike
    const tooLong = await dev.post("/api/actions/invoice.share-pdf", { subject: { kind: "object", objectTypeId: "invoice", primaryId: "inv_1004" }, params: { expiresInMs: 7 * 86_400_000 + 1 } });
    expect(tooLong.body).toMatchObject({ status: "failed", error: { code: "invalid_request", message: "expiresInMs must be a whole number of milliseconds from 1 to 604800000 (7 days)" } });
    const overHttp = await dev.post("/api/objects/invoice/inv_1004/files/download-urls", { path: "/properties/pdf", expiresInMs: 7 * 86_400_000 + 1 });
    expect(overHttp.status).toBe(400);
    // and revoked by id through them (spec 4.3): the URL answers 410 from then on
    const revoked = await dev.post("/api/actions/download-url.revoke", { params: { id: shared.id } });
    expect(revoked.body).toMatchObject({ status: "succeeded", result: { revoked: shared.id } });
    const gone = await fetch(shared.url.replace(origin, app.url));
    expect(gone.status).toBe(410);
    expect(((await gone.json()) as { error: { code: string } }).error.code).toBe("download_url_revoked");
  });

  it("with PORT=0, a public origin on port 0 (as the sandbox derives it from PORT) names the port bound", async () => {
    const zero = await startApp({ project, env: { SVC_API_PUBLIC_ORIGIN: "http://localhost:0" } });
    try {
      const port = new URL(zero.url).port;
      expect(port).not.toBe("0");
      expect(zero.config).toMatchObject({ publicOrigin: `http://localhost:${port}`, apiPublicOrigin: `http://localhost:${port}` });
      expect(zero.config.allowedOrigins.filter((o) => o.endsWith(":0"))).toEqual([]);
      const c = client(zero);
      const ref = (await (await fetch(`${zero.url}/api/files`, { method: "POST", headers: { authorization: `Bearer ${DEV_TOKEN}` }, body: (() => { const f = new FormData(); f.append("file", file("zero"), "zero.txt"); return f; })() })).json()) as { id: string };
      await c.post("/api/actions/invoice.attach-pdf", { subject: { kind: "object", objectTypeId: "invoice", primaryId: "inv_1001" }, params: { file: { id: ref.id } } });
      const created = await c.post("/api/objects/invoice/inv_1001/files/download-urls", { path: "/properties/pdf" });
      expect(created.body.url).toMatch(new RegExp(`^http://localhost:${port}/api/download/`));
      // the link works as given (localhost is this server)
      expect(await (await fetch(created.body.url)).text()).toBe("zero");
    } finally {
      await zero.close();
    }
  });

  it("fails clearly without SVC_API_PUBLIC_ORIGIN", async () => {
    const bare = await startApp({ project });
    try {
      const c = client(bare);
      const ref = (await (await fetch(`${bare.url}/api/files`, { method: "POST", headers: { authorization: `Bearer ${DEV_TOKEN}` }, body: (() => { const f = new FormData(); f.append("file", file("x"), "x.txt"); return f; })() })).json()) as { id: string };
      await c.post("/api/actions/invoice.attach-pdf", { subject: { kind: "object", objectTypeId: "invoice", primaryId: "inv_1001" }, params: { file: { id: ref.id } } });
      const res = await c.post("/api/objects/invoice/inv_1001/files/download-urls", { path: "/properties/pdf" });
      expect(res).toMatchObject({ status: 503, body: { error: { code: "not_configured", details: { variable: "SVC_API_PUBLIC_ORIGIN" } } } });
      const viaSdk = await c.post("/api/actions/invoice.share-pdf", { subject: { kind: "object", objectTypeId: "invoice", primaryId: "inv_1001" }, params: {} });
      expect(viaSdk.body).toMatchObject({ status: "failed", error: { code: "not_configured", message: expect.stringContaining("SVC_API_PUBLIC_ORIGIN") } });
    } finally {
      await bare.close();
    }
  });
});
