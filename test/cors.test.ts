/**
 * Browser apps on another origin (spec 5: "the browser origin must be allowed by the API"): an origin in
 * `SVC_ALLOWED_ORIGINS` gets CORS answers with credentials, a preflight of a known path says what it may
 * send, and any other origin gets neither. Real HTTP, then a real Chromium on a page of another origin.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEV_TOKEN, startApp } from "./helpers";
import { freePort } from "./setup/global";
import { launchBrowser } from "./helpers-browser";
import type { App } from "../core/app";

let app: App;
let appOrigin: string;
/** A page server of another origin (127.0.0.1 on its own port: another origin than the app's localhost). */
let pages: http.Server;
let pagesOrigin: string;

/** A server of one page on 127.0.0.1 (an origin of its own), and its origin. */
async function pageServer(): Promise<{ server: http.Server; origin: string }> {
  const server = http.createServer((_req, res) => res.writeHead(200, { "content-type": "text/html" }).end("<!doctype html><title>app</title><p>another origin's app</p>"));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { server, origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

beforeAll(async () => {
  ({ server: pages, origin: pagesOrigin } = await pageServer());
  const port = await freePort();
  appOrigin = `http://localhost:${port}`;
  app = await startApp({ env: { PORT: String(port), HOST: "127.0.0.1", SVC_ALLOWED_ORIGINS: `${appOrigin},${pagesOrigin}` } });
}, 120_000);
afterAll(async () => {
  await app?.close();
  await new Promise((resolve) => pages?.close(resolve));
});

const preflight = (path: string, origin: string, method: string, headers = "content-type, authorization") =>
  fetch(`${app.url}${path}`, { method: "OPTIONS", headers: { origin, "access-control-request-method": method, "access-control-request-headers": headers } });

describe("CORS for the allowed origins (spec 5)", () => {
  it("answers an allowed origin's preflight of a known path with what it may send, and refuses another origin's", async () => {
    const ok = await preflight("/api/actions/diagnostics.noop", pagesOrigin, "POST");
    expect(ok.status).toBe(204);
    expect(Object.fromEntries([...ok.headers].filter(([k]) => k.startsWith("access-control-") || k === "vary"))).toEqual({
      "access-control-allow-origin": pagesOrigin,
      "access-control-allow-credentials": "true",
      "access-control-allow-methods": "POST",
      "access-control-allow-headers": "content-type, authorization",
      "access-control-max-age": "600",
      vary: "origin, access-control-request-headers",
    });
    const refused = await preflight("/api/actions/diagnostics.noop", "https://evil.example", "POST");
    expect(refused.status).toBe(403);
    expect(refused.headers.get("access-control-allow-origin")).toBeNull();
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe("origin_not_allowed");
    // a plain OPTIONS (no preflight) is still 405 with Allow
    const plain = await fetch(`${app.url}/api/project`, { method: "OPTIONS" });
    expect([plain.status, plain.headers.get("allow")]).toEqual([405, "GET, HEAD"]);
  });

  it("marks an allowed origin's answers readable, errors included, with the headers a client needs exposed; another origin's are not", async () => {
    const auth = { authorization: `Bearer ${DEV_TOKEN}` };
    const ok = await fetch(`${app.url}/api/project`, { headers: { ...auth, origin: pagesOrigin } });
    expect(ok.status).toBe(200);
    expect(ok.headers.get("access-control-allow-origin")).toBe(pagesOrigin);
    expect(ok.headers.get("access-control-allow-credentials")).toBe("true");
    expect(ok.headers.get("access-control-expose-headers")).toBe("Link, Location, Retry-After, Deprecation, Sunset, ETag, Content-Disposition, Content-Range, Accept-Ranges");
    expect(ok.headers.get("vary")).toBe("Origin");
    const missing = await fetch(`${app.url}/api/objects/invoice/inv_nope`, { headers: { ...auth, origin: pagesOrigin } });
    expect([missing.status, missing.headers.get("access-control-allow-origin")]).toEqual([404, pagesOrigin]);
    for (const origin of ["https://evil.example", "null"]) {
      const other = await fetch(`${app.url}/api/project`, { headers: { ...auth, origin } });
      expect(other.status).toBe(200);
      expect(other.headers.get("access-control-allow-origin"), origin).toBeNull();
    }
    // an answer with CORS headers of its own (the tus server's) keeps them, ours beside
    const upload = await fetch(`${app.url}/api/files/uploads`, { method: "POST", headers: { ...auth, origin: pagesOrigin, "tus-resumable": "1.0.0", "upload-length": "5", "upload-metadata": `filename ${Buffer.from("a.txt").toString("base64")}` } });
    expect(upload.status).toBe(201);
    expect(upload.headers.get("access-control-allow-origin")).toBe(pagesOrigin);
    expect(upload.headers.get("access-control-allow-credentials")).toBe("true");
    expect(upload.headers.get("access-control-expose-headers")).toMatch(/Location.*Upload-Offset.*, Link, Location, Retry-After/);
    // without an Origin (scripts, services): no CORS headers at all
    expect((await fetch(`${app.url}/api/project`, { headers: auth })).headers.get("access-control-allow-origin")).toBeNull();
  });

  it("lets a page of an allowed origin call the API in Chromium (preflight, then the call), and blocks one of another origin", { timeout: 60_000 }, async () => {
    const browser = await launchBrowser();
    try {
      const page = await browser.newPage();
      await page.goto(pagesOrigin);
      const call = (url: string, token: string) =>
        page.evaluate(
          async ([u, t]) => {
            try {
              const res = await fetch(u, { method: "POST", credentials: "include", headers: { authorization: `Bearer ${t}`, "content-type": "application/json" }, body: JSON.stringify({ params: {} }) });
              return { status: res.status, body: await res.json() };
            } catch (err) {
              return { error: String(err) };
            }
          },
          [url, token] as const,
        );
      const allowed = await call(`${appOrigin}/api/actions/diagnostics.noop`, DEV_TOKEN);
      expect(allowed).toMatchObject({ status: 200, body: { status: "succeeded" } });
      // a resumable upload (the tus routes answer CORS themselves), with credentials: created, then its bytes sent
      const uploaded = await page.evaluate(
        async ([base, t]) => {
          try {
            const headers = { authorization: `Bearer ${t}`, "tus-resumable": "1.0.0" };
            const created = await fetch(`${base}/api/files/uploads`, { method: "POST", credentials: "include", headers: { ...headers, "upload-length": "5", "upload-metadata": `filename ${btoa("a.txt")}` } });
            const location = created.headers.get("location")!;
            const patched = await fetch(location, { method: "PATCH", credentials: "include", headers: { ...headers, "upload-offset": "0", "content-type": "application/offset+octet-stream" }, body: "hello" });
            return { created: created.status, patched: patched.status, offset: patched.headers.get("upload-offset"), fileId: patched.headers.get("upload-file-id") };
          } catch (err) {
            return { error: String(err) };
          }
        },
        [appOrigin, DEV_TOKEN] as const,
      );
      // the request that completes it answers 200 with the file's id, a header the page may read
      expect(uploaded).toEqual({ created: 201, patched: 200, offset: "5", fileId: expect.stringMatching(/^file_/) });

      // the same page on an origin the service does not allow: the browser refuses it the answer
      const blockedPages = await pageServer();
      try {
        await page.goto(blockedPages.origin);
        const blocked = await call(`${appOrigin}/api/actions/diagnostics.noop`, DEV_TOKEN);
        expect(blocked).toEqual({ error: expect.stringContaining("Failed to fetch") });
      } finally {
        await new Promise((resolve) => blockedPages.server.close(resolve));
      }
    } finally {
      await browser.close();
    }
  });
});
