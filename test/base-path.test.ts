/**
 * The service behind a reverse proxy that serves it under a path prefix (`SVC_API_PUBLIC_ORIGIN` with a
 * path, `Config.basePath`): a real proxy (http-proxy-3, HTTP and WebSocket) forwards `/svc/…` to the app
 * with the prefix stripped and answers 404 for anything else, so a link, script, fetch, frame or
 * redirect that left the prefix out fails here as it would in production. A real Chromium signs in,
 * opens every kind of artifact, makes an API token, follows the live viewer and the API reference, and
 * signs out, all through the proxy; the session cookie is scoped to the prefix. Like nginx's `$host`, the
 * proxy passes the host name on without its port: the deck frames still name their own URL right.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { createProxyServer } from "http-proxy-3";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { safeNext } from "../plugins/pages";
import { launchBrowser, screenshot } from "./helpers-browser";
import { client, publishAs, startApp } from "./helpers";

// browser globals inside page.evaluate callbacks (this file is type-checked without the DOM library)
declare const document: any;

type App = Awaited<ReturnType<typeof startApp>>;
const PREFIX = "/svc";
let app: App;
let proxy: Awaited<ReturnType<typeof startProxy>>;
/** The public origin with the prefix, as a browser reaches the service: `http://127.0.0.1:<port>/svc`. */
let publicUrl: string;
let browser: Browser;
/** Every path the proxy was asked for, and the ones it refused (outside the prefix). */
const seen: string[] = [];
const refused: string[] = [];

/**
 * A proxy that serves the app under PREFIX, stripping it, as nginx's `location /svc/ { proxy_pass
 * http://app/; proxy_set_header Host $host; }` does: `$host` is the host name without the port.
 */
async function startProxy(): Promise<http.Server & { setTarget(url: string): void }> {
  let target = "";
  const forwarder = createProxyServer({ ws: true });
  forwarder.on("error", (_err, _req, res) => {
    if (res instanceof http.ServerResponse && !res.headersSent) res.writeHead(502).end("bad gateway");
  });
  const strip = (req: http.IncomingMessage): boolean => {
    const url = req.url ?? "/";
    seen.push(url);
    if (url !== PREFIX && !url.startsWith(`${PREFIX}/`) && !url.startsWith(`${PREFIX}?`)) {
      refused.push(url);
      return false;
    }
    req.url = url.slice(PREFIX.length) || "/";
    req.headers.host = new URL(`http://${req.headers.host}`).hostname;
    return true;
  };
  const server = http.createServer((req, res) => {
    if (!strip(req)) return void res.writeHead(404, { "content-type": "text/plain" }).end("outside the proxy's prefix");
    forwarder.web(req, res, { target });
  });
  server.on("upgrade", (req, socket, head) => {
    if (!strip(req)) return void socket.destroy();
    forwarder.ws(req, socket, head, { target });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return Object.assign(server, { setTarget: (url: string) => void (target = url) });
}

/** A page that records every response it gets (status and URL) and every console error. */
async function watchedPage(context: BrowserContext): Promise<{ page: Page; failures: string[] }> {
  const page = await context.newPage();
  const failures: string[] = [];
  page.on("response", (res) => {
    if (res.status() >= 400) failures.push(`${res.status()} ${res.url()}`);
  });
  page.on("requestfailed", (req) => failures.push(`failed ${req.url()} (${req.failure()?.errorText})`));
  page.on("pageerror", (err) => failures.push(`page error: ${err.message}`));
  return { page, failures };
}

beforeAll(async () => {
  proxy = await startProxy();
  publicUrl = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}${PREFIX}`;
  app = await startApp({ env: { SVC_API_PUBLIC_ORIGIN: publicUrl } });
  proxy.setTarget(app.url);
  await publishAs(app, "dev", "file", "Signed contract", { "contract.txt": "Signed on 2026-11-30." });
  // 300 rows (the page sends the first 100; the grid fetches the rest from the rows API as it scrolls),
  // each linking to the contract's page: links drawn by the server and by the browser
  const contract = (await client(app).get("/api/artifacts")).body.data.find((a: any) => a.title === "Signed contract").id;
  const rows = Array.from({ length: 300 }, (_, i) => `Item ${i + 1},artifact:${contract}`);
  await publishAs(app, "dev", "sheet", "Ledger", {
    "workbook.json": JSON.stringify({ sheets: [{ name: "Items", columns: { Item: "text", Source: "link" } }] }),
    "sheets/Items.csv": ["Item,Source", ...rows].join("\n") + "\n",
  });
  browser = await launchBrowser();
}, 180_000);

afterAll(async () => {
  await browser?.close();
  await app?.close();
  await new Promise((resolve) => proxy?.close(resolve));
});

describe("safeNext under a path prefix", () => {
  it("keeps a path under the prefix and sends anything else to the prefix's artifacts list", () => {
    expect(safeNext("/svc/tokens?x=1", "/svc")).toBe("/svc/tokens?x=1");
    expect(safeNext("/svc/artifacts/art_1#a", "/svc")).toBe("/svc/artifacts/art_1#a");
    // an encoded / \ or . may be decoded by the proxy and climb out of the prefix
    for (const bad of ["/tokens", "/svcx/artifacts", "/svc/../other", "//evil.example/svc/", "https://evil.example/svc/x", "/svc\\..\\x", "/svc/..%2fother", "/svc/..%2F..%2Fevil", "/svc/%5c%5cevil.example", "/svc/%2f%2fevil.example", "/svc/%2E%2E/other", undefined]) {
      expect(safeNext(bad, "/svc"), String(bad)).toBe("/svc/artifacts");
    }
    expect(safeNext("/tokens")).toBe("/tokens");
  });
});

describe("the pages through a proxy's path prefix", () => {
  it("signs in, opens every kind of artifact, makes a token and signs out without a request leaving the prefix", async () => {
    const list = await client(app).get("/api/artifacts");
    const byTitle = (t: string) => list.body.data.find((a: any) => a.title === t).id as string;
    const context = await browser.newContext({ viewport: { width: 1360, height: 900 } });
    const { page, failures } = await watchedPage(context);

    // the front page leads to the artifacts, and signed out on to the sign-in page
    await page.goto(`${publicUrl}/`);
    await page.waitForURL(`${publicUrl}/sign-in?next=${encodeURIComponent(`${PREFIX}/artifacts`)}`);
    // signed out: to the sign-in page under the prefix, and back to the artifact after
    const doc = byTitle("Q3 billing review");
    await page.goto(`${publicUrl}/artifacts/${doc}`);
    await page.waitForURL(`${publicUrl}/sign-in?next=${encodeURIComponent(`${PREFIX}/artifacts/${doc}`)}`);
    await page.getByLabel("Identity").fill("dev");
    await page.getByLabel("Password").fill("dev-sandbox-password");
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.waitForURL(`${publicUrl}/artifacts/${doc}`);
    const cookie = (await context.cookies()).find((c) => c.name === "svc_session");
    expect(cookie?.path).toBe(PREFIX);
    // the document's embeds (a chart and a range of the sheet) and their links to the sheet's page
    await expect.poll(() => page.locator(".embed-body").count()).toBeGreaterThan(0);
    const embedLinks = await page.locator(".embed-source a").evaluateAll((as: any[]) => as.map((a) => new URL(a.href).pathname));
    expect(embedLinks.length).toBeGreaterThan(0);
    for (const href of embedLinks) expect(href).toMatch(/^\/svc\/artifacts\/art_/);

    // the list and its previews, the header's links
    await page.getByRole("link", { name: "Artifacts", exact: true }).first().click();
    await page.waitForURL(`${publicUrl}/artifacts`);
    await expect.poll(() => page.locator(".card").count()).toBeGreaterThanOrEqual(4);
    await expect.poll(() => page.locator('.card[data-kind="slides"] iframe.preview-frame').count()).toBe(1);

    // the sheet: its grid's rows come from the rows API under the prefix (scrolling loads more)
    await page.goto(`${publicUrl}/artifacts/${byTitle("Revenue 2026")}`);
    await expect.poll(() => page.locator("[data-svc-sheet] .sheet-row").count()).toBeGreaterThan(0);
    await page.locator(".sheet-tab-chart").first().click();
    await expect.poll(() => page.locator(".sheet-chart-panel:not([hidden])").count()).toBe(1);
    // a long sheet: scrolled to its end, the rows come from the rows API, their links under the prefix
    await page.goto(`${publicUrl}/artifacts/${byTitle("Ledger")}`);
    const firstLink = await page.locator("[data-svc-sheet] .sheet-row a").first().getAttribute("href");
    expect(firstLink).toBe(`${PREFIX}/artifacts/${byTitle("Signed contract")}`);
    await page.locator("[data-svc-sheet] .sheet-scroll").first().evaluate((el: any) => (el.scrollTop = el.scrollHeight));
    const last = page.locator("[data-svc-sheet] .sheet-row", { hasText: "Item 300" });
    await expect.poll(() => last.count()).toBe(1);
    expect(await last.locator("a").getAttribute("href")).toBe(`${PREFIX}/artifacts/${byTitle("Signed contract")}`);
    expect(seen.some((u) => /^\/svc\/api\/artifacts\/art_\w+\/versions\/1\/sheets\/Items\/rows\?/.test(u))).toBe(true);
    // the deck, in its sandboxed frame from a link under the prefix
    await page.goto(`${publicUrl}/artifacts/${byTitle("Q3 in four slides")}`);
    const frame = (await (await page.waitForSelector("iframe[data-deck-frame]")).contentFrame())!;
    await frame.waitForFunction(() => (globalThis as any).svcKit?.count > 0);
    expect(new URL(frame.url()).pathname).toMatch(/^\/svc\/artifact-frames\//);
    await page.getByRole("button", { name: "Next slide" }).click();
    await expect.poll(() => page.locator("[data-deck-position]").textContent()).toBe("2 / 4");
    // the file artifact: its preview and download under the prefix
    await page.goto(`${publicUrl}/artifacts/${byTitle("Signed contract")}`);
    expect(await page.locator(".file-text").textContent()).toBe("Signed on 2026-11-30.");
    const download = await page.getByRole("link", { name: "Download" }).getAttribute("href");
    expect(download).toMatch(/^\/svc\/api\/artifacts\/art_\w+\/versions\/1\/files\/contract\.txt$/);

    // the tokens page: make one (POST /svc/api/tokens with the CSRF token) and use it through the proxy
    await page.getByRole("link", { name: "API tokens" }).click();
    await page.waitForURL(`${publicUrl}/tokens`);
    await page.getByLabel("Name").fill("behind the proxy");
    await page.getByRole("button", { name: "Create token" }).click();
    await expect.poll(() => page.locator("[data-secret]").textContent()).toMatch(/^svc_/);
    const secret = await page.locator("[data-secret]").textContent();
    const mine = await fetch(`${publicUrl}/api/artifacts`, { headers: { authorization: `Bearer ${secret}` } });
    expect(mine.status).toBe(200);
    expect(((await mine.json()) as any).data.map((a: any) => a.title)).toContain("Signed contract");
    await screenshot(page, "tokens-behind-proxy");

    // signing out lands on the sign-in page under the prefix
    await page.getByRole("button", { name: "Sign out" }).click();
    await page.waitForURL(`${publicUrl}/sign-in`);
    expect(failures).toEqual([]);
    expect(refused).toEqual([]);
    expect(seen.length).toBeGreaterThan(20);
    await context.close();
  });

  it("signs in with the form alone (no JavaScript): the 303 goes back under the prefix, with the cookie scoped to it", async () => {
    const body = new URLSearchParams({ identity: "dev", password: "dev-sandbox-password", next: `${PREFIX}/tokens` });
    const origin = new URL(publicUrl).origin;
    const res = await fetch(`${publicUrl}/sign-in`, { method: "POST", redirect: "manual", headers: { "content-type": "application/x-www-form-urlencoded", origin }, body });
    expect(res.status).toBe(303);
    expect(res.headers.get("location")).toBe(`${PREFIX}/tokens`);
    expect(res.headers.get("set-cookie")).toMatch(/; Path=\/svc; HttpOnly; SameSite=Lax;/);
    // a next outside the prefix goes to the prefix's artifacts list
    const away = await fetch(`${publicUrl}/sign-in`, { method: "POST", redirect: "manual", headers: { "content-type": "application/x-www-form-urlencoded", origin }, body: new URLSearchParams({ identity: "dev", password: "dev-sandbox-password", next: "/tokens" }) });
    expect(away.headers.get("location")).toBe(`${PREFIX}/artifacts`);
    // the sign-in page's form posts under the prefix
    const page = await (await fetch(`${publicUrl}/sign-in?next=${encodeURIComponent(`${PREFIX}/tokens`)}`)).text();
    expect(page).toContain('action="/svc/sign-in"');
    expect(page).toContain("Sign in to manage your API tokens.");
  });
});

describe("the live viewer and the API reference through the prefix", () => {
  it("follows /svc/ws/events in the viewer: a run of diagnostics.noop shows up", async () => {
    const context = await browser.newContext();
    const { page, failures } = await watchedPage(context);
    await page.goto(`${publicUrl}/viewer`);
    await page.getByLabel("Password").fill("dev-sandbox-password");
    await page.getByRole("button", { name: "Sign in" }).click();
    await expect.poll(() => page.locator("#status").textContent(), { timeout: 15_000 }).toMatch(/^live/);
    await page.getByRole("button", { name: "Run diagnostics.noop" }).click();
    await expect.poll(() => page.locator("#events").textContent(), { timeout: 15_000 }).toContain("action.completed");
    // the viewer asks for the session once before signing in (401: signed out); nothing else failed
    expect(failures).toEqual([`401 ${publicUrl}/api/auth/session`]);
    await context.close();
  });

  it("serves the reference with its assets under the prefix, and names the prefix as the document's server", async () => {
    const context = await browser.newContext();
    const { page, failures } = await watchedPage(context);
    await page.goto(`${publicUrl}/docs`);
    await expect.poll(() => page.locator(".swagger-ui .opblock").count(), { timeout: 20_000 }).toBeGreaterThan(10);
    expect(failures).toEqual([]);
    const doc = (await (await fetch(`${publicUrl}/docs/openapi.json`)).json()) as any;
    expect(doc.servers).toEqual([{ url: PREFIX, description: expect.any(String) }]);
    await context.close();
  });
});
