/**
 * The sheet grid and live charts in a real Chromium (spec 2.8, 2.11): renderSheetView's markup with
 * sheet.css and the bundled sheet.js / charts.js, on a page served from loopback whose `/api/` is the real
 * app's (proxied with the owner's token, so the rows API is same-origin as in the pages). A 100,000-row
 * sheet keeps a bounded number of rows in the DOM, fetches pages as it scrolls, keeps its header and
 * frozen columns in place, formats in the reader's locale, and passes axe-core.
 */
import fs from "node:fs";
import http from "node:http";
import { createRequire } from "node:module";
import path from "node:path";
import type { AddressInfo } from "node:net";
import { chromium, type Browser, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEV_TOKEN, startApp, uploadFile } from "./helpers";
import { ensureChromium } from "./setup/chromium";
import { CHROMIUM_ARGS } from "../core/artifacts/deck-check";
import { SheetData } from "../core/artifacts/sheet-data";
import { browserScript, echartsBrowserPath, sheetCss } from "../core/artifacts/render/assets";
import { chartOption, chartStyle, renderChartSvg } from "../core/artifacts/render/chart";
import { formatCell } from "../core/artifacts/render/format";
import { renderSheetView } from "../core/artifacts/render/sheet-view";
import type { App } from "../core/app";

// browser globals inside page.evaluate callbacks (this file is type-checked without the DOM library)
declare const document: any;
declare const window: any;
declare const requestAnimationFrame: (fn: (t: number) => void) => number;

const N = 100_000;
const SCREENSHOTS = path.join(import.meta.dirname, "screenshots");
const AXE = createRequire(import.meta.url).resolve("axe-core/axe.min.js");
const CUSTOMERS = ["Acme Corporation", "Globex", "Initech", "Umbrella Health", "Stark Industries", "Wayne Enterprises", "Hooli", "Vandelay Imports", "Soylent Foods", "Wonka Confections", "Tyrell Systems", "Cyberdyne"];
const REGIONS = ["North America", "Europe", "Asia Pacific", "Latin America"];
const amount = (i: number) => (1200 + ((i * 7919) % 480_000) / 10 + (i % 7) * 0.25).toFixed(2);
const day = (i: number) => new Date(Date.UTC(2020, 0, 1) + Math.floor(i / 40) * 86_400_000).toISOString().slice(0, 10);
const ledgerRow = (i: number) => [day(i), CUSTOMERS[i % CUSTOMERS.length]!, REGIONS[i % REGIONS.length]!, amount(i), (Number(amount(i)) * 0.08).toFixed(2), ((i % 400) / 1000).toFixed(3), `https://billing.example.com/invoices/INV-${String(i + 1).padStart(6, "0")}`, i % 5 === 0 ? "Paid by wire transfer after reminder" : ""];
const LEDGER_CSV = ["Date,Customer,Region,Amount,Tax,Margin,Invoice,Notes", ...Array.from({ length: N }, (_, i) => ledgerRow(i).join(","))].join("\n") + "\n";
const MONTHS = ["2026-01-31", "2026-02-28", "2026-03-31", "2026-04-30", "2026-05-31", "2026-06-30"];
const SUMMARY_CSV = ["Month,Revenue,Costs", ...MONTHS.map((m, i) => `${m},${182000 + i * 9100},${121000 + i * 3300}`)].join("\n") + "\n";
const WORKBOOK = {
  sheets: [
    {
      name: "Ledger",
      frozenRows: 1,
      frozenColumns: 2,
      widths: { Date: 124, Customer: 190, Region: 150, Amount: 150, Tax: 130, Margin: 100, Invoice: 330, Notes: 300 },
      columns: { Date: "date", Amount: { type: "currency", currency: "USD" }, Tax: { type: "currency", currency: "USD" }, Margin: { type: "percent", decimals: 1 }, Invoice: "link" },
    },
    { name: "Summary", columns: { Month: "date", Revenue: { type: "currency", currency: "USD" }, Costs: { type: "currency", currency: "USD" } } },
  ],
  charts: [{ name: "Revenue and costs", type: "bar", sheet: "Summary", x: "Month", y: ["Revenue", "Costs"], title: "Revenue and costs by month" }],
};

let app: App;
let browser: Browser;
let server: http.Server;
let base: string;
let artifactId: string;
const rowsRequests: string[] = [];

const put = (content: string, name: string, type: string) => uploadFile(app, content, name, type);

/** The page: the view as the pages would render it for an en-US reader (tab from `part`), inside a themed artifact box. */
async function pageHtml(part?: string): Promise<string> {
  const data = app.container.resolve(SheetData);
  const reader = { kind: "identity", id: "dev" } as const;
  const book = await data.workbook(reader, artifactId, 1);
  const style = chartStyle(book.theme, book.theme?.mode ?? "light");
  const sheets = await Promise.all(book.sheets.map(async (s) => ({ ...s, firstRows: (await data.table(reader, artifactId, 1, s.name)).rows.slice(0, 200) })));
  const charts = await Promise.all(
    book.charts.map(async (chart) => {
      const sheet = book.sheets.find((s) => s.name === chart.sheet)!;
      const table = await data.table(reader, artifactId, 1, chart.sheet);
      const option = chartOption(chart, { columns: table.columns, rows: table.rows, types: sheet.types }, style, "en-US");
      return { name: chart.name, title: chart.title ?? chart.name, option, svg: renderChartSvg(option, { width: 960, height: 420 }) };
    }),
  );
  const view = renderSheetView({ artifactId, version: 1, sheets, charts, part, locale: "en-US" });
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Revenue ledger · svc</title>
<link rel="stylesheet" href="/assets/pages/tokens.css"><link rel="stylesheet" href="/assets/pages/sheet.css">
<style>body { margin: 0; background: var(--background, #fff); } main { padding: 24px 32px; font-family: var(--font-sans, sans-serif); color: var(--foreground, #0f172a); } h1 { margin: 0 0 16px; font-size: 22px; }</style>
<script src="/assets/pages/echarts.js" defer></script><script src="/assets/pages/charts.js" defer></script><script src="/assets/pages/sheet.js" defer></script>
</head><body><main data-svc-artifact><h1>Revenue ledger</h1>${view}</main></body></html>`;
}

beforeAll(async () => {
  app = await startApp();
  const res = await fetch(`${app.url}/api/artifacts`, {
    method: "POST",
    headers: { authorization: `Bearer ${DEV_TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify({
      kind: "sheet",
      title: "Revenue ledger",
      files: [
        { path: "workbook.json", file: await put(JSON.stringify(WORKBOOK), "workbook.json", "application/json") },
        { path: "sheets/Ledger.csv", file: await put(LEDGER_CSV, "Ledger.csv", "text/csv") },
        { path: "sheets/Summary.csv", file: await put(SUMMARY_CSV, "Summary.csv", "text/csv") },
      ],
    }),
  });
  expect(res.status).toBe(200);
  artifactId = ((await res.json()) as { artifact: { id: string } }).artifact.id;
  const tokensPath = path.join(import.meta.dirname, "..", "core", "artifacts", "kit", "tokens.css");
  const assets: Record<string, [() => Promise<string> | string, string]> = {
    "/assets/pages/sheet.js": [() => browserScript("sheet"), "text/javascript"],
    "/assets/pages/charts.js": [() => browserScript("charts"), "text/javascript"],
    "/assets/pages/echarts.js": [() => fs.readFileSync(echartsBrowserPath(), "utf8"), "text/javascript"],
    "/assets/pages/sheet.css": [() => sheetCss(), "text/css"],
    "/assets/pages/tokens.css": [() => (fs.existsSync(tokensPath) ? fs.readFileSync(tokensPath, "utf8") : ""), "text/css"],
  };
  server = http.createServer((req, res) => {
    void (async () => {
      const url = new URL(req.url ?? "/", "http://loopback");
      if (url.pathname.startsWith("/api/")) {
        if (url.pathname.endsWith("/rows")) rowsRequests.push(url.search);
        const answer = await fetch(`${app.url}${url.pathname}${url.search}`, { headers: { authorization: `Bearer ${DEV_TOKEN}` } });
        res.writeHead(answer.status, { "content-type": answer.headers.get("content-type") ?? "application/octet-stream" });
        res.end(Buffer.from(await answer.arrayBuffer()));
        return;
      }
      const asset = assets[url.pathname];
      if (asset) {
        res.writeHead(200, { "content-type": `${asset[1]}; charset=utf-8` });
        res.end(await asset[0]());
        return;
      }
      if (url.pathname === "/favicon.ico") return void res.writeHead(204).end();
      res.writeHead(url.pathname === "/" ? 200 : 404, { "content-type": "text/html; charset=utf-8" });
      res.end(url.pathname === "/" ? await pageHtml(url.searchParams.get("part") ?? undefined) : "not found");
    })().catch((err) => {
      res.writeHead(500);
      res.end(String(err));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  // the deck checker's flags, except that loopback (this test's server) bypasses the dead-end proxy
  const args = CHROMIUM_ARGS.filter((a) => a !== "--proxy-bypass-list=<-loopback>");
  browser = await chromium.launch({ executablePath: ensureChromium(), args, headless: true });
}, 180_000);

afterAll(async () => {
  await browser?.close();
  await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)));
  await app?.close();
});

async function openPage(): Promise<Page> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 860 }, locale: "en-US", colorScheme: "light" });
  const page = await context.newPage();
  const errors: string[] = [];
  page.on("pageerror", (err) => errors.push(String(err)));
  page.on("console", (msg) => msg.type() === "error" && errors.push(`${msg.text()} ${msg.location().url}`));
  await page.goto(base);
  await page.waitForSelector("[data-svc-sheet][data-live] .sheet-body .sheet-row:not(.sheet-pending)");
  expect(errors).toEqual([]);
  return page;
}

/** Rows of the ledger grid in the DOM, and the one with `aria-rowindex` = `index` (its cells' text), if rendered. */
const gridState = (page: Page, index: number) =>
  page.evaluate((i: number) => {
    const grid = document.querySelector("#sheet-panel-0 [data-svc-sheet]");
    const row = grid.querySelector(`.sheet-body tr[aria-rowindex="${i}"]:not(.sheet-pending)`);
    return { rows: grid.querySelectorAll(".sheet-body tr.sheet-row").length, cells: row ? [...row.children].map((c: any) => c.textContent) : undefined };
  }, index);

const save = async (page: Page, name: string) => {
  fs.mkdirSync(SCREENSHOTS, { recursive: true });
  await page.screenshot({ path: path.join(SCREENSHOTS, `${name}.png`) });
};

describe("the sheet grid in Chromium (spec 2.8)", () => {
  it("shows 100,000 rows with a bounded DOM, formats in en-US, scrolls to the last row, keeps header and frozen columns", async () => {
    const page = await openPage();
    const table = page.locator("#sheet-panel-0 table.sheet-table");
    expect(await table.getAttribute("aria-rowcount")).toBe(String(N + 1));
    const first = await gridState(page, 2);
    expect(first.rows).toBeLessThan(120);
    expect(first.cells).toEqual(["2", "Jan 1, 2020", "Acme Corporation", "North America", expect.stringMatching(/^USD\s1,200\.00$/), expect.stringMatching(/^USD\s96\.00$/), "0.0%", "https://billing.example.com/invoices/INV-000001", "Paid by wire transfer after reminder"]);
    expect(await page.locator("#sheet-panel-0 .sheet-body tr[aria-rowindex='2'] a").getAttribute("href")).toBe("https://billing.example.com/invoices/INV-000001");
    expect(rowsRequests).toEqual([]); // the first page came inline

    // jump around like a reader dragging the scrollbar, then wheel-scroll: the DOM stays bounded
    // (how fast each frame is: test/bench/sheet-grid.ts, run by test/bench/artifacts.ts)
    await page.evaluate(async () => {
      const scroll = document.querySelector("#sheet-panel-0 .sheet-scroll");
      const frame = () => new Promise<number>((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve)));
      for (let k = 1; k <= 40; k++) {
        scroll.scrollTop = (scroll.scrollHeight * ((k * 37) % 100)) / 100;
        await frame();
      }
    });
    await page.locator("#sheet-panel-0 .sheet-scroll").hover();
    for (let k = 0; k < 60; k++) await page.mouse.wheel(0, 900);
    expect((await gridState(page, 2)).rows).toBeLessThan(120);

    // the bottom: row 100,001 (data row 100,000) arrives from the rows API, formatted
    await page.evaluate(() => {
      const scroll = document.querySelector("#sheet-panel-0 .sheet-scroll");
      scroll.scrollTop = scroll.scrollHeight;
    });
    await page.waitForSelector(`#sheet-panel-0 .sheet-body tr[aria-rowindex="${N + 1}"]:not(.sheet-pending)`);
    const last = await gridState(page, N + 1);
    const expected = ledgerRow(N - 1);
    expect(last.cells!.slice(0, 5)).toEqual([String(N + 1), formatCell(expected[0]!, { type: "date" }, "en-US").text, expected[1], expected[2], formatCell(expected[3]!, { type: "currency", currency: "USD" }, "en-US").text]);
    expect(last.cells![4]).toMatch(/^USD\s[\d,]+\.\d\d$/);
    expect(last.rows).toBeLessThan(120);
    expect(rowsRequests.length).toBeGreaterThan(0);
    expect(rowsRequests.length).toBeLessThan(120); // pages as needed: nowhere near all 500
    expect(rowsRequests.every((q) => /^\?offset=\d+&limit=200$/.test(q))).toBe(true);

    // the header row stays at the top, uncovered; the frozen columns stay at the left when scrolled sideways
    await page.evaluate(() => {
      const scroll = document.querySelector("#sheet-panel-0 .sheet-scroll");
      scroll.scrollTop = scroll.scrollHeight / 2;
      scroll.scrollLeft = 300;
    });
    // the grid redraws on the next animation frame: wait for it, then for the rows' page to arrive
    await page.evaluate(() => new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve))));
    await page.waitForFunction(() => !document.querySelector("#sheet-panel-0 .sheet-body tr.sheet-pending"));
    const layout = await page.evaluate(() => {
      const scroll = document.querySelector("#sheet-panel-0 .sheet-scroll");
      const box = scroll.getBoundingClientRect();
      const header = scroll.querySelector(".sheet-header th[scope=col]");
      const h = header.getBoundingClientRect();
      const row = [...scroll.querySelectorAll(".sheet-body tr.sheet-row")].find((r: any) => r.getBoundingClientRect().top > h.bottom + 40);
      const frozen = row.querySelector("td.sheet-frozen-last").getBoundingClientRect();
      const hit = document.elementFromPoint(h.left + 10, h.top + h.height / 2);
      return { headerOffset: h.top - box.top, headerHit: hit === header || header.contains(hit), headerText: header.textContent, frozenLeft: frozen.left - box.left, customer: row.querySelector("td.sheet-frozen-last").textContent, scrollLeft: scroll.scrollLeft };
    });
    expect(layout.scrollLeft).toBe(300);
    expect(layout.headerText).toBe("Date");
    expect(layout.headerHit).toBe(true);
    expect(layout.headerOffset).toBeGreaterThanOrEqual(0);
    expect(layout.headerOffset).toBeLessThan(40); // under the column letters only
    expect(layout.frozenLeft).toBeGreaterThan(100); // gutter + Date, still there
    expect(layout.frozenLeft).toBeLessThan(260);
    expect(CUSTOMERS).toContain(layout.customer);
    await page.evaluate(() => (document.querySelector("#sheet-panel-0 .sheet-scroll").scrollLeft = 0));
    await page.mouse.move(1200, 20); // no hovered row in the picture
    await save(page, "sheet-grid");
    await page.context().close();
  });

  it("passes axe-core, switches tabs in place, and draws the chart live with formatted tooltips", async () => {
    const page = await openPage();
    await page.addScriptTag({ path: AXE });
    const violations = await page.evaluate(async () => (await window.axe.run(document, { resultTypes: ["violations"] })).violations.map((v: any) => `${v.id}: ${v.nodes.map((n: any) => n.target.join(" ")).slice(0, 3).join(", ")}`));
    expect(violations).toEqual([]);

    await page.getByRole("tab", { name: "Summary" }).click();
    expect(new URL(page.url()).searchParams.get("part")).toBe("Summary");
    await page.waitForSelector("#sheet-panel-1 .sheet-body tr[aria-rowindex='2']:not(.sheet-pending)");
    expect(await page.locator("#sheet-panel-0").isHidden()).toBe(true);
    await page.keyboard.press("ArrowRight"); // focus is on the Summary tab: the chart tab is next
    const chartTab = page.getByRole("tab", { name: "Revenue and costs by month" });
    expect(await chartTab.getAttribute("aria-selected")).toBe("true");
    await page.waitForSelector("#sheet-panel-2 [data-svc-chart][data-live] > div svg");
    expect(await page.locator("#sheet-panel-2 [data-svc-chart] > svg").count()).toBe(0); // the server SVG was replaced
    const bar = page.locator('#sheet-panel-2 [data-svc-chart] path[fill="#4f46e5"]').nth(2);
    await bar.hover();
    const tooltip = await page.waitForFunction(() => [...document.querySelectorAll("#sheet-panel-2 [data-svc-chart] div")].map((d: any) => d.textContent).find((t: string) => /Revenue.*USD/.test(t) && t.length < 200));
    expect(String(await tooltip.jsonValue())).toMatch(/Mar 31, 2026.*Revenue\s*USD\s200,200\.00.*Costs\s*USD\s127,600\.00/);
    await save(page, "sheet-chart");

    const dark = await browser.newContext({ viewport: { width: 1280, height: 860 }, locale: "de-DE", colorScheme: "dark" });
    const darkPage = await dark.newPage();
    await darkPage.goto(`${base}/?v=1&part=chart%3DRevenue%20and%20costs`);
    await darkPage.waitForSelector("#sheet-panel-2 [data-svc-chart][data-live] > div svg");
    await darkPage.locator('#sheet-panel-2 [data-svc-chart] path[fill="#818cf8"]').nth(4).hover(); // the kit's dark --chart-1
    await darkPage.waitForFunction(() => [...document.querySelectorAll("#sheet-panel-2 [data-svc-chart] div")].some((d: any) => /Revenue/.test(d.textContent) && d.textContent.length < 200));
    await save(darkPage, "sheet-chart-dark");
    await darkPage.getByRole("tab", { name: "Ledger" }).click();
    await darkPage.waitForSelector("#sheet-panel-0 .sheet-body .sheet-row:not(.sheet-pending)");
    const cell = await darkPage.locator("#sheet-panel-0 .sheet-body tr[aria-rowindex='2'] td").nth(3).textContent();
    expect(cell).toMatch(/^1\.200,00\sUSD$/); // navigator.language formats the grid
    await save(darkPage, "sheet-grid-dark");
    await dark.close();
    await page.context().close();
  });
});
