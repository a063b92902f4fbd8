/**
 * Sheet grid frame times in Debian's Chromium (spec 2.8; run at the end of test/bench/artifacts.ts, or
 * alone: `npx tsx test/bench/sheet-grid.ts`). The page is the one the pages render (renderSheetView with
 * sheet.css and the bundled sheet.js) for a 100,000-row x 8-column ledger (BENCH_GRID_ROWS), served from
 * loopback with the rows API answered from memory (no app, so the figure is the browser side only).
 *
 * Two measurements, each also taken on a yardstick page in the same browser and run: a plain scroll box
 * of the same height with no script (what the browser's frames cost by themselves):
 * - jump: set `scrollTop` to 40 spread positions (a reader dragging the scrollbar), time to 2 animation
 *   frames after each; median and p95;
 * - wheel: 60 wheel steps of 900 px; gaps between animation frames meanwhile; median and p95.
 * The former test bound (median jump < 200 ms, p95 wheel gap < 200 ms) is printed as the goal.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { chromium, type Page } from "playwright-core";
import { ensureChromium } from "../setup/chromium";
import { CHROMIUM_ARGS } from "../../core/artifacts/deck-check";
import { browserScript, sheetCss } from "../../core/artifacts/render/assets";
import { renderSheetView, sheetRowsUrl } from "../../core/artifacts/render/sheet-view";
import type { CellType } from "../../core/artifacts/render/format";

const GOAL_MS = 200;
const ARTIFACT = "art_bench";

export interface GridFigures {
  rows: number;
  jump: { median: number; p95: number };
  wheel: { median: number; p95: number; frames: number };
  yardstick: { jump: { median: number; p95: number }; wheel: { median: number; p95: number; frames: number } };
}

const pct = (xs: number[], q: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return Math.round(s[Math.min(s.length - 1, Math.floor(s.length * q))]!);
};

function ledger(n: number): { columns: string[]; types: Record<string, CellType>; rows: string[][] } {
  const customers = ["Acme Corporation", "Globex", "Initech", "Umbrella Health", "Stark Industries", "Wayne Enterprises"];
  const columns = ["Date", "Customer", "Region", "Amount", "Tax", "Margin", "Invoice", "Notes"];
  const types: Record<string, CellType> = { Date: { type: "date" }, Customer: { type: "text" }, Region: { type: "text" }, Amount: { type: "currency", currency: "USD" }, Tax: { type: "currency", currency: "USD" }, Margin: { type: "percent", decimals: 1 }, Invoice: { type: "link" }, Notes: { type: "text" } };
  const rows = Array.from({ length: n }, (_, i) => {
    const amount = (1200 + ((i * 7919) % 480_000) / 10).toFixed(2);
    const day = new Date(Date.UTC(2020, 0, 1) + Math.floor(i / 40) * 86_400_000).toISOString().slice(0, 10);
    return [day, customers[i % customers.length]!, ["North America", "Europe", "Asia Pacific"][i % 3]!, amount, (Number(amount) * 0.08).toFixed(2), ((i % 400) / 1000).toFixed(3), `https://billing.example.com/invoices/INV-${String(i + 1).padStart(6, "0")}`, i % 5 === 0 ? "Paid by wire transfer after reminder" : ""];
  });
  return { columns, types, rows };
}

// In-page scripts as text: tsx (esbuild keepNames) would wrap named functions in a `__name` helper the page lacks.
const JUMPS = (selector: string) => `(async () => {
  const scroll = document.querySelector(${JSON.stringify(selector)});
  const times = [];
  for (let k = 1; k <= 40; k++) {
    const t0 = performance.now();
    scroll.scrollTop = (scroll.scrollHeight * ((k * 37) % 100)) / 100;
    await new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve)));
    times.push(performance.now() - t0);
  }
  scroll.scrollTop = 0;
  return times;
})()`;
const WATCH_FRAMES = `(() => {
  window.__gaps = [];
  window.__stop = false;
  let last = performance.now();
  requestAnimationFrame(function tick(t) {
    window.__gaps.push(t - last);
    last = t;
    if (!window.__stop) requestAnimationFrame(tick);
  });
})()`;

/** Times jumps and wheel frames in the scroll box `selector` of `page`. */
async function measure(page: Page, selector: string): Promise<{ jumps: number[]; gaps: number[] }> {
  const jumps = (await page.evaluate(JUMPS(selector))) as number[];
  await page.locator(selector).hover();
  await page.evaluate(WATCH_FRAMES);
  for (let k = 0; k < 60; k++) await page.mouse.wheel(0, 900);
  const gaps = (await page.evaluate("(window.__stop = true, window.__gaps.slice(2))")) as number[];
  return { jumps, gaps };
}

/** Runs the measurement and prints it; answers the figures. */
export async function benchSheetGrid(rowCount = Number(process.env.BENCH_GRID_ROWS ?? 100_000)): Promise<GridFigures> {
  const { columns, types, rows } = ledger(rowCount);
  const sheet = { name: "Ledger", frozenRows: 1, frozenColumns: 2, widths: { Date: 124, Customer: 190, Region: 150, Amount: 150, Tax: 130, Margin: 100, Invoice: 330, Notes: 300 }, columns, types, total: rows.length, firstRows: rows.slice(0, 200) };
  const view = renderSheetView({ artifactId: ARTIFACT, version: 1, sheets: [sheet], charts: [], locale: "en-US" });
  const head = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>grid bench</title><link rel="stylesheet" href="/sheet.css">`;
  const gridPage = `${head}<script src="/sheet.js" defer></script></head><body><main data-svc-artifact>${view}</main></body></html>`;
  // the yardstick: the same viewport and scroll height, plain rows, no script
  const plainPage = `${head}<style>#plain { height: 700px; overflow: auto; } #plain div { height: ${rows.length * 28}px; background: repeating-linear-gradient(#fff 0 27px, #e2e8f0 27px 28px); }</style></head><body><main><div id="plain"><div></div></div></main></body></html>`;
  const rowsPath = sheetRowsUrl(ARTIFACT, 1, "Ledger");
  const assets: Record<string, [string, string]> = { "/sheet.js": [await browserScript("sheet"), "text/javascript"], "/sheet.css": [await sheetCss(), "text/css"], "/": [gridPage, "text/html"], "/plain": [plainPage, "text/html"] };
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://loopback");
    if (url.pathname === rowsPath) {
      const offset = Number(url.searchParams.get("offset") ?? 0);
      const limit = Number(url.searchParams.get("limit") ?? 200);
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ sheet: "Ledger", columns: columns.map((name) => ({ name, type: types[name] })), total: rows.length, offset, rows: rows.slice(offset, offset + limit) }));
      return;
    }
    const asset = assets[url.pathname];
    res.writeHead(asset ? 200 : 404, { "content-type": `${asset?.[1] ?? "text/plain"}; charset=utf-8` });
    res.end(asset?.[0] ?? "not found");
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const args = CHROMIUM_ARGS.filter((a) => a !== "--proxy-bypass-list=<-loopback>");
  const browser = await chromium.launch({ executablePath: ensureChromium((line) => console.log(line)), args, headless: true });
  try {
    const context = await browser.newContext({ viewport: { width: 1280, height: 860 }, locale: "en-US", colorScheme: "light" });
    const page = await context.newPage();
    await page.goto(`${base}/plain`);
    const plain = await measure(page, "#plain");
    await page.goto(base);
    await page.waitForSelector("[data-svc-sheet][data-live] .sheet-body .sheet-row:not(.sheet-pending)");
    const grid = await measure(page, "#sheet-panel-0 .sheet-scroll");
    const rendered = (await page.evaluate('document.querySelectorAll("#sheet-panel-0 .sheet-body tr.sheet-row").length')) as number;
    if (rendered === 0 || rendered >= 120) throw new Error(`the grid rendered ${rendered} rows (expected a bounded window)`);
    await context.close();
    const figures: GridFigures = {
      rows: rows.length,
      jump: { median: pct(grid.jumps, 0.5), p95: pct(grid.jumps, 0.95) },
      wheel: { median: pct(grid.gaps, 0.5), p95: pct(grid.gaps, 0.95), frames: grid.gaps.length },
      yardstick: { jump: { median: pct(plain.jumps, 0.5), p95: pct(plain.jumps, 0.95) }, wheel: { median: pct(plain.gaps, 0.5), p95: pct(plain.gaps, 0.95), frames: plain.gaps.length } },
    };
    const y = figures.yardstick;
    console.log(`sheet grid: ${os.cpus().length} cores, Node ${process.version}, Chromium ${browser.version()}, ${rows.length.toLocaleString("en-US")} rows x ${columns.length} columns`);
    console.log(`  jump + 2 frames       median ${String(figures.jump.median).padStart(4)} ms, p95 ${String(figures.jump.p95).padStart(4)} ms  (plain scroll box, same run: median ${y.jump.median} ms, p95 ${y.jump.p95} ms; goal median < ${GOAL_MS} ms) ${figures.jump.median < GOAL_MS ? "met" : "MISSED"}`);
    console.log(`  wheel frame gaps      median ${String(figures.wheel.median).padStart(4)} ms, p95 ${String(figures.wheel.p95).padStart(4)} ms over ${figures.wheel.frames} frames  (plain: median ${y.wheel.median} ms, p95 ${y.wheel.p95} ms; goal p95 < ${GOAL_MS} ms) ${figures.wheel.p95 < GOAL_MS ? "met" : "MISSED"}`);
    return figures;
  } finally {
    await browser.close();
    await new Promise((resolve) => server.close(resolve));
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) await benchSheetGrid();
