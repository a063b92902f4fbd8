/**
 * The artifact pages in a real Chromium (spec 4.1, 2.9–2.11, 5), used the way a person uses them: sign in,
 * list, open each kind, switch versions, move through a deck with keys, the overview, `?part=`, dark mode,
 * embeds that follow the latest version or stay on one, an embed another reader cannot open, and a deck
 * that tries to read the app's cookies, call the API and load from a host it may not; charts on a phone
 * (the compact drawing), an empty document, artifacts named by title (never by id) in what a reader reads,
 * and the list's previews in dark mode. axe-core checks our own pages. Screenshots land in
 * test/screenshots (the README shows them).
 */
import type { Browser, BrowserContext, Frame, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { axeViolations, launchBrowser, screenshot, signIn } from "./helpers-browser";
import { client, publishAs as publishWith, startApp, uploadFile } from "./helpers";
import { chartStyle } from "../core/artifacts/render/chart";

// browser globals inside page.evaluate callbacks (this file is type-checked without the DOM library)
declare const document: any;
declare const window: any;
declare const getComputedStyle: (el: unknown, pseudo?: string) => any;

type App = Awaited<ReturnType<typeof startApp>>;
let app: App;
let browser: Browser;
let ids: { sheet: string; document: string; deck: string };

const publishAs = (owner: string, kind: "document" | "sheet" | "slides" | "file", title: string, files: Record<string, string>) => publishWith(app, owner, kind, title, files);

async function devPage(context?: BrowserContext): Promise<Page> {
  const page = await (context ?? (await browser.newContext({ viewport: { width: 1360, height: 900 } }))).newPage();
  await signIn(page, app.url, "dev", "dev-sandbox-password");
  return page;
}

/** The deck's frame once its kit has started. */
async function deckFrame(page: Page): Promise<Frame> {
  const handle = await page.waitForSelector("iframe[data-deck-frame]");
  const frame = (await handle.contentFrame())!;
  await frame.waitForFunction(() => (window as any).svcKit?.count > 0);
  return frame;
}

beforeAll(async () => {
  app = await startApp({ env: { SVC_DECK_CHECKS: "true" } });
  browser = await launchBrowser();
  const list = await client(app).get("/api/artifacts");
  const byTitle = (t: string) => list.body.data.find((a: any) => a.title === t).id;
  ids = { sheet: byTitle("Revenue 2026"), document: byTitle("Q3 billing review"), deck: byTitle("Q3 in four slides") };
}, 180_000);

afterAll(async () => {
  await browser?.close();
  await app?.close();
});

describe("sign in and the list", () => {
  it("sends a signed-out reader to the sign-in page and back, then lists their artifacts newest first with previews", async () => {
    const page = await (await browser.newContext({ viewport: { width: 1360, height: 900 } })).newPage();
    await page.goto(`${app.url}/artifacts/${ids.document}`);
    await page.waitForURL(/\/sign-in\?next=/);
    await page.getByLabel("Identity").fill("dev");
    await page.getByLabel("Password").fill("wrong");
    await page.getByRole("button", { name: "Sign in" }).click();
    await expect.poll(() => page.locator("[data-error]").textContent()).toContain("Wrong identity or password");
    await page.getByLabel("Password").fill("dev-sandbox-password");
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.waitForURL(`${app.url}/artifacts/${ids.document}`);

    await page.goto(`${app.url}/artifacts`);
    const titles = await page.locator(".card-title").allTextContents();
    expect(titles.slice(0, 3)).toEqual(["Revenue 2026", "Q3 in four slides", "Q3 billing review"]); // the sheet's version 2 came last
    await expect.poll(() => page.locator('.card[data-kind="sheet"] .preview svg').count()).toBe(1); // its first chart
    expect(await page.locator('.card[data-kind="document"] .preview-lede').textContent()).toContain("Revenue grew every month");
    await expect.poll(() => page.locator('.card[data-kind="slides"] .preview img').evaluate((img: any) => img.complete && img.naturalWidth)).toBe(1280); // the deck check's first slide
    await screenshot(page, "artifacts-list");
    expect(await axeViolations(page)).toEqual([]);

    await page.goto(`${app.url}/artifacts?kind=sheet`);
    expect(await page.locator(".card-title").allTextContents()).toEqual(["Revenue 2026"]);
    expect(await page.locator('.filters a[aria-current="page"]').textContent()).toBe("Sheets");

    await page.getByRole("button", { name: "Sign out" }).click();
    await page.waitForURL(`${app.url}/sign-in`);
    await page.goto(`${app.url}/artifacts`);
    await page.waitForURL(/\/sign-in\?next=%2Fartifacts$/);
  });

  it("shows another reader nothing of dev's artifacts (a 404 page)", async () => {
    const page = await (await browser.newContext()).newPage();
    await signIn(page, app.url, "alice", "alice-sandbox-password");
    expect(await page.locator(".card").count()).toBe(0);
    const res = await page.goto(`${app.url}/artifacts/${ids.document}`);
    expect(res!.status()).toBe(404);
    expect(await page.locator("h1").textContent()).toBe("Not found");
  });

  it("answers a bad address with an HTML page, not the API's JSON: a parameter given twice, a stale list position", async () => {
    const page = await devPage();
    for (const path of [`/artifacts/${ids.sheet}?v=2&v=1`, `/artifacts/${ids.sheet}?part=a&part=b`, "/artifacts?kind=sheet&kind=document"]) {
      const res = await page.goto(`${app.url}${path}`);
      expect(res!.status(), path).toBe(400);
      expect(res!.headers()["content-type"], path).toMatch(/^text\/html/);
      expect(await page.locator(".empty-state p").first().textContent(), path).toMatch(/^The address gives "(v|part|kind)" more than once\.$/);
    }
    const stale = await page.goto(`${app.url}/artifacts?after=garbage`);
    expect(stale!.status()).toBe(400);
    expect(await page.locator(".empty-state p").first().textContent()).toBe('"after" is not a place in this list (a link from another list, or edited): start again from the first page');
  });
});

describe("?part= that names nothing in the version", () => {
  it("says so above the view, naming what the version has, and shows the start; a part that exists shows no notice", async () => {
    const page = await devPage();
    const notice = page.locator("[data-part-missing]");
    const cases: [string, RegExp][] = [
      [`/artifacts/${ids.document}?part=forecast`, /^This version has no section "forecast" \(its sections: highlights, revenue, by-month, open-invoices\)\. Showing the document from the start\.$/],
      [`/artifacts/${ids.sheet}?part=Costs`, /^This version has no sheet or chart "Costs" \(it has: .*chart=Revenue by month.*\)\. Showing the first tab\.$/],
      [`/artifacts/${ids.deck}?part=9`, /^This deck has no slide "9" \(its slides: 1 to 4\)\. Showing slide 4\.$/],
    ];
    for (const [path, message] of cases) {
      expect((await page.goto(`${app.url}${path}`))!.status(), path).toBe(200);
      expect(await notice.textContent(), path).toMatch(message);
    }
    await screenshot(page, "part-missing");
    for (const path of [`/artifacts/${ids.document}?part=revenue`, `/artifacts/${ids.sheet}?part=${encodeURIComponent("chart=Revenue by month")}`, `/artifacts/${ids.deck}?part=2`, `/artifacts/${ids.document}`]) {
      await page.goto(`${app.url}${path}`);
      expect(await notice.count(), path).toBe(0);
    }
  });
});

describe("a document", () => {
  it("renders title, lede, contents, callout, task list, footnote, figure and the two embeds with their source lines", async () => {
    const page = await devPage();
    await page.goto(`${app.url}/artifacts/${ids.document}`);
    expect(await page.locator(".doc-title").textContent()).toBe("Q3 billing review");
    expect(await page.locator(".doc-lede").textContent()).toContain("margins held near 37%");
    expect(await page.locator(".contents a").allTextContents()).toEqual(["Highlights", "Revenue", "By month", "Open invoices"]);
    expect(await page.locator(".markdown-alert-note").count()).toBe(1);
    expect(await page.locator('.doc input[type="checkbox"]').evaluateAll((boxes: any[]) => boxes.map((b: any) => [b.checked, b.disabled]))).toEqual([[true, true], [false, true]]);
    expect(await page.locator(".doc figure:not(.embed) figcaption").first().textContent()).toBe("Sandbox billing, internal");
    expect(await page.locator(".doc .footnotes li").count()).toBe(1);
    // the chart follows the latest version of the sheet (2: six months); the range is pinned at 1
    const [chart, range] = [page.locator("figure.embed").nth(0), page.locator("figure.embed").nth(1)];
    expect([await chart.locator(".svc-chart-wide svg").count(), await chart.locator(".svc-chart-compact svg").count()]).toEqual([1, 1]); // the compact one for phones
    expect(await chart.locator(".embed-source").textContent()).toContain("follows the latest version (2)");
    expect(await chart.locator("figcaption").textContent()).toBe("Revenue and costs by month");
    expect(await range.locator(".embed-source").textContent()).toContain("fixed at version 1 of 2");
    expect(await range.locator("tbody tr").count()).toBe(3);
    expect(await range.locator("tbody tr").first().locator("td").nth(1).textContent()).toMatch(/^USD\s182,000\.00$/);
    // the figures column of the hand-written table aligns right
    expect(await page.locator(".doc > .table-wrap table td").nth(1).evaluate((td) => getComputedStyle(td).textAlign)).toBe("right");
    // links to addresses open the target's page
    expect(await page.locator(".doc a.artifact-link").first().getAttribute("href")).toBe(`/artifacts/${ids.sheet}`);
    await screenshot(page, "document", { fullPage: true });
    expect(await axeViolations(page)).toEqual([]);

    // the theme's tokens apply to the artifact's box (spec 2.11), and an app's override under [data-svc-artifact] wins
    const surface = page.locator("[data-svc-artifact]").first();
    expect(await surface.evaluate((el: any) => getComputedStyle(el).getPropertyValue("--primary").trim())).toBe("oklch(0.55 0.18 255)");
    expect(await surface.getAttribute("data-theme")).toBe("light");
    await page.addStyleTag({ content: "[data-svc-artifact] { --primary: rgb(1, 2, 3); }" });
    expect(await page.locator(".doc a.artifact-link").first().evaluate((a: any) => getComputedStyle(a).color)).toBe("rgb(1, 2, 3)");

    await page.goto(`${app.url}/artifacts/${ids.document}?part=revenue`);
    await expect.poll(() => page.evaluate(() => document.getElementById("revenue")!.getBoundingClientRect().top)).toBeLessThan(200);
    expect(await page.evaluate(() => window.scrollY)).toBeGreaterThan(400);
  });

  it("wraps a long unbroken word or URL instead of widening the page, on a desktop and a phone", async () => {
    const url = `https://example.com/reports/${"quarterly-".repeat(20)}summary.pdf`;
    const id = await publishAs("dev", "document", "Long links", { "document.md": `# Long links\n\nSee ${url} for the whole report, and ${"x".repeat(300)}.\n` });
    const page = await devPage();
    for (const width of [1280, 375]) {
      await page.setViewportSize({ width, height: 800 });
      await page.goto(`${app.url}/artifacts/${id}`);
      expect(await page.evaluate(() => document.documentElement.scrollWidth), `at ${width}px`).toBeLessThanOrEqual(width);
    }
    await screenshot(page, "document-long-url-mobile");
  });

  it("shows what another reader cannot open as unavailable", async () => {
    const id = await publishAs("alice", "document", "Alice's notes", { "document.md": `# Alice's notes\n\nWhat dev's sheet says.\n\n![Revenue](artifact:${ids.sheet}#chart=Revenue%20by%20month)\n` });
    const page = await (await browser.newContext()).newPage();
    await signIn(page, app.url, "alice", "alice-sandbox-password", `/artifacts/${id}`);
    expect(await page.locator(".embed-unavailable").textContent()).toContain("Unavailable");
    expect(await page.content()).not.toContain("Revenue 2026");
  });
});

describe("a sheet", () => {
  it("formats values and embeds by the reader's locale (Accept-Language and the browser's own)", async () => {
    const page = await devPage(await browser.newContext({ locale: "de-DE" }));
    await page.goto(`${app.url}/artifacts/${ids.sheet}`);
    await expect.poll(() => page.locator(".sheet-grid").first().textContent()).toMatch(/182\.000,00\sUSD/);
    await page.goto(`${app.url}/artifacts/${ids.document}`);
    expect(await page.locator("figure.embed").nth(1).locator("tbody td").nth(1).textContent()).toMatch(/^182\.000,00\sUSD$/);
  });

  it("shows the sheet formatted by the reader's locale, its charts, and switches versions", async () => {
    const page = await devPage();
    await page.goto(`${app.url}/artifacts/${ids.sheet}`);
    await expect.poll(() => page.locator(".sheet-grid").first().textContent()).toContain("USD");
    expect(await page.locator("#version-select").inputValue()).toBe("2");
    expect(await page.locator("#version-select option").allTextContents()).toEqual(["Version 2 (latest)", "Version 1"]);
    await screenshot(page, "sheet");
    expect(await axeViolations(page)).toEqual([]);

    await page.goto(`${app.url}/artifacts/${ids.sheet}?part=${encodeURIComponent("chart=Revenue by month")}`);
    await expect.poll(() => page.locator("[data-svc-chart] svg").first().isVisible()).toBe(true);
    await screenshot(page, "page-sheet-chart");
    // on the latest, a tab's address follows the latest (spec 9): no version in it
    await page.locator(".sheet-tab-sheet").first().click();
    await page.waitForURL((url) => url.searchParams.get("part") !== "chart=Revenue by month");
    expect(new URL(page.url()).searchParams.has("v")).toBe(false);

    // a link copied from an older version stays on it; the picker moves
    await page.goto(`${app.url}/artifacts/${ids.sheet}?v=1`);
    expect(await page.locator(".banner").textContent()).toContain("You are reading version 1");
    expect(await page.locator(".artifact-head .meta").textContent()).toContain("Version 1 of 2");
    expect(await page.locator(".sheet-tab").first().getAttribute("href")).toMatch(/^\?v=1&part=/); // a pinned version's tabs stay on it
    await page.locator("#version-select").selectOption("2");
    await page.getByRole("button", { name: "Open" }).click();
    await page.waitForURL(/v=2/);
    expect(await page.locator(".artifact-head .meta").textContent()).toContain("Version 2 (latest)");
  });
});

describe("a deck", () => {
  it("moves with keys and the toolbar, opens at ?part=, shows the overview, embeds the chart, and follows links from the frame", async () => {
    const page = await devPage();
    await page.goto(`${app.url}/artifacts/${ids.deck}`);
    const frame = await deckFrame(page);
    expect(await page.locator("iframe[data-deck-frame]").getAttribute("sandbox")).toBe("allow-scripts");
    await page.keyboard.press("ArrowRight"); // on the page: handed to the frame
    await expect.poll(() => page.locator("[data-deck-position]").textContent()).toBe("2 / 4");
    await page.waitForURL(/part=2/);
    await page.getByRole("button", { name: "Next slide" }).click();
    await expect.poll(() => frame.evaluate(() => (window as any).svcKit.current)).toBe(3);
    await page.locator("iframe[data-deck-frame]").click(); // inside the frame: the kit's own keys
    await page.keyboard.press("ArrowLeft");
    await expect.poll(() => page.locator("[data-deck-position]").textContent()).toBe("2 / 4");
    await page.keyboard.press("ArrowRight");
    await expect.poll(() => page.locator("[data-deck-position]").textContent()).toBe("3 / 4");
    expect(await frame.locator("section.slide[data-current] svc-embed[data-state=shown] .svc-chart-wide svg").count()).toBe(1);
    await screenshot(page, "deck");
    await page.locator("iframe[data-deck-frame]").click();
    await page.keyboard.press("o");
    await expect.poll(() => frame.evaluate(() => document.documentElement.classList.contains("kit-overview"))).toBe(true);
    // the overview shows embeds as empty boxes with their title
    const embed = frame.locator("svc-embed").first();
    expect(await embed.evaluate((el: any) => [getComputedStyle(el, "::before").content, getComputedStyle(el.firstElementChild).visibility])).toEqual(['"Revenue by month"', "hidden"]);
    await page.keyboard.press("Escape");
    expect(await page.locator(".check-item").count()).toBe(4); // the deck check beside the slides
    expect(await axeViolations(page)).toEqual([]);

    // a thumbnail (the list's preview when a deck is unchecked): one slide, no chrome, embeds as empty boxes with their title
    const src = await page.locator("iframe[data-deck-frame]").getAttribute("src");
    const thumb = await page.context().newPage();
    await thumb.goto(`${app.url}${src!.replace(/\?.*$/, "")}?part=3&thumbnail=1`);
    expect(await thumb.evaluate(() => [document.documentElement.className, document.querySelectorAll(".kit-nav").length])).toEqual(["kit-thumbnail", 0]);
    expect(await thumb.locator("svc-embed").evaluate((el: any) => getComputedStyle(el, "::before").content)).toBe('"Revenue by month"');
    await thumb.close();

    await page.goto(`${app.url}/artifacts/${ids.deck}?part=4`);
    const again = await deckFrame(page);
    expect(await again.evaluate(() => (window as any).svcKit.current)).toBe(4);
    // seen twice in clean-clone runs: this click found the link "not visible"; the second time the
    // frame's state below showed a 1176x662 frame with --kit-scale 0 (laid out at 0x0, no resize event
    // after), which kit.js's ResizeObserver now mends. If it happens again, the error says how.
    await again.locator("section.slide[data-current] a[data-svc-open]").click({ timeout: 15_000 }).catch(async (error) => {
      const state = await again.evaluate(() => ({
        viewport: [window.innerWidth, window.innerHeight], scale: document.documentElement.style.getPropertyValue("--kit-scale"),
        classes: document.documentElement.className, current: (window as any).svcKit.current, url: window.location.href,
        link: document.querySelector("section.slide[data-current] a[data-svc-open]")?.getBoundingClientRect().toJSON() ?? null,
      })).catch((e) => String(e));
      throw new Error(`${error.message}\nthe frame then: ${JSON.stringify(state)}`);
    });
    await page.waitForURL(`${app.url}/artifacts/${ids.document}?part=highlights`);
  });

  it("lays each slide out by its class (title, section, stat, split, chart, table, quote, image), and presents the deck full screen with F", async () => {
    const PNG_DATA = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
    const slides = [
      `<section class="slide title"><h1>Layouts</h1><p>One slide per class</p></section>`,
      `<section class="slide section"><h2>Part two</h2></section>`,
      `<section class="slide stat"><h2>Revenue</h2><p class="value">$1.2M</p></section>`,
      `<section class="slide split"><h2>Split</h2><p>Words on the left.</p><img src="${PNG_DATA}" alt="a picture"></section>`,
      `<section class="slide chart"><h2>Chart</h2><svg viewBox="0 0 10 10" role="img" aria-label="bars"><rect width="5" height="10"/></svg></section>`,
      `<section class="slide table"><h2>Table</h2><table><tr><th>Month</th><th class="num">Revenue</th></tr><tr><td>Jan</td><td class="num">10</td></tr></table></section>`,
      `<section class="slide quote"><blockquote>Measure twice, cut once.</blockquote><cite>A carpenter</cite></section>`,
      `<section class="slide image"><h2>Image</h2><img src="${PNG_DATA}" alt="a picture"></section>`,
    ];
    const id = await publishAs("dev", "slides", "Layouts", { "index.html": `<!doctype html><html><head><title>Layouts</title></head><body>${slides.join("")}</body></html>` });
    const page = await devPage();
    await page.goto(`${app.url}/artifacts/${id}`);
    const frame = await deckFrame(page);
    const style = (selector: string, property: string) => frame.locator(selector).first().evaluate((el, p) => getComputedStyle(el).getPropertyValue(p), property);
    expect(await style("section.slide.title", "border-left-width")).toBe("24px");
    expect(await style("section.slide.title h1", "font-size")).toBe("80px");
    expect(await style("section.slide.section", "background-color")).toBe(await style("section.slide.title", "border-left-color"));
    expect(await style("section.slide.section h2", "font-size")).toBe("72px");
    expect(await style("section.slide.stat .value", "font-size")).toBe("160px");
    expect(await style("section.slide.split", "display")).toBe("grid");
    expect((await style("section.slide.split", "grid-template-columns")).split(" ")).toHaveLength(2);
    expect(await style("section.slide.chart", "justify-content")).toBe("flex-start");
    expect(await style("section.slide.chart > svg", "display")).toBe("block");
    expect(await style("section.slide.table table", "border-collapse")).toBe("collapse");
    expect(await style("section.slide.table td.num", "text-align")).toBe("right");
    expect(await style("section.slide.quote blockquote", "font-size")).toBe("48px");
    expect(await style("section.slide.image > img", "object-fit")).toBe("cover");
    // the deck check found nothing to warn about in any of them
    expect(await page.locator(".check-item").count()).toBe(8);
    expect(await page.locator(".check-item .check-warnings").count()).toBe(0);
    await page.locator("iframe[data-deck-frame]").click();
    await page.keyboard.press("o");
    await expect.poll(() => frame.evaluate(() => document.documentElement.classList.contains("kit-overview"))).toBe(true);
    await screenshot(page, "deck-layouts-overview");
    await page.keyboard.press("Escape");
    // F on the page presents the deck: its frame goes full screen
    await page.locator("h1").first().click();
    await page.keyboard.press("f");
    await expect.poll(() => page.evaluate(() => document.fullscreenElement?.tagName)).toBe("IFRAME");
    await page.evaluate(() => document.exitFullscreen());
    await expect.poll(() => page.evaluate(() => document.fullscreenElement)).toBeNull();
    await page.context().close();
  });

  it("follows the reader's dark mode unless the theme pins one", async () => {
    const id = await publishAs("dev", "slides", "Dark test", { "index.html": `<!doctype html><html><head><title>t</title></head><body><section class="slide title"><h1>Dark or light</h1><p style="font-size:12px">The fine print</p></section></body></html>` });
    const context = await browser.newContext({ colorScheme: "dark", viewport: { width: 1360, height: 900 } });
    const page = await devPage(context);
    await page.goto(`${app.url}/artifacts/${id}`);
    const frame = await deckFrame(page);
    expect(await frame.locator("section.slide").evaluate((s) => getComputedStyle(s).backgroundColor)).toBe("rgb(11, 17, 32)");
    await screenshot(page, "deck-dark");
    // the deck check's warning, beside its screenshot
    expect(await page.locator('.check-item[data-slide="1"] .check-warnings').textContent()).toContain("small_text");
    expect(await page.locator('.check-item[data-slide="1"] img').evaluate((img: any) => img.complete && img.naturalWidth)).toBe(1280);
    await page.goto(`${app.url}/artifacts/${ids.deck}`); // pinned light
    const pinned = await deckFrame(page);
    expect(await pinned.locator("section.slide").first().evaluate((s) => getComputedStyle(s).backgroundColor)).toBe("rgb(255, 255, 255)");
  });

  it("draws an embedded chart in the reader's colour scheme when no theme pins one, in a document and in a deck (it was drawn light on dark pages)", async () => {
    const rows = ["Month,Revenue", "2026-07-31,214800", "2026-08-31,209900", "2026-09-30,226400"];
    const sheet = await publishAs("dev", "sheet", "Unthemed numbers", {
      "workbook.json": JSON.stringify({ sheets: [{ name: "Data", columns: { Month: "date", Revenue: { type: "currency", currency: "USD" } } }], charts: [{ name: "Trend", type: "bar", sheet: "Data", x: "Month", y: ["Revenue"] }] }),
      "sheets/Data.csv": rows.join("\n") + "\n",
    });
    const doc = await publishAs("dev", "document", "Unthemed review", { "document.md": `# Unthemed review\n\nThe lede.\n\n## Trend\n\n![Trend](artifact:${sheet}#chart=Trend)\n` });
    const deck = await publishAs("dev", "slides", "Unthemed deck", { "index.html": `<!doctype html><html><head><title>d</title></head><body><section class="slide"><h2>Trend</h2><svc-embed src="artifact:${sheet}#chart=Trend"></svc-embed></section></body></html>` });
    // the axis labels' colour of each mode (chartStyle's muted)
    const MUTED = { light: chartStyle(undefined, "light").muted, dark: chartStyle(undefined, "dark").muted };
    expect(MUTED.light).not.toBe(MUTED.dark);
    /** Which of the two drawings shows, and the colour of the visible chart's first text (an axis label). */
    const shown = (where: Page | Frame) => where.evaluate(() => {
      const visible = [...document.querySelectorAll(".svc-chart-light, .svc-chart-dark")].filter((el: any) => getComputedStyle(el).display !== "none");
      return visible.map((el: any) => [el.className, el.querySelector("text")?.getAttribute("fill")]);
    });
    for (const colorScheme of ["light", "dark"] as const) {
      const context = await browser.newContext({ viewport: { width: 1360, height: 900 }, colorScheme });
      const page = await devPage(context);
      await page.goto(`${app.url}/artifacts/${doc}`);
      expect(await shown(page), `document, ${colorScheme}`).toEqual([[`svc-chart-${colorScheme}`, MUTED[colorScheme]]]);
      if (colorScheme === "dark") await screenshot(page, "document-chart-dark");
      await page.goto(`${app.url}/artifacts/${deck}`);
      expect(await shown(await deckFrame(page)), `deck, ${colorScheme}`).toEqual([[`svc-chart-${colorScheme}`, MUTED[colorScheme]]]);
      if (colorScheme === "dark") await screenshot(page, "deck-chart-dark");
      await context.close();
    }
  });

  it("runs the deck's own script in an opaque origin: no cookies, no API as the reader, no host outside the allow-list", async () => {
    const script = `
      const out = document.getElementById("out");
      const note = (k, v) => out.setAttribute("data-" + k, String(v));
      note("origin", self.origin); // the document's origin: opaque in the sandbox (location keeps the URL's)
      try { note("cookie", JSON.stringify(document.cookie)); } catch (e) { note("cookie", e.name); }
      document.addEventListener("securitypolicyviolation", (e) => note("blocked", e.blockedURI));
      fetch("/api/status", { credentials: "include" }).then((r) => note("api", r.status), (e) => note("api", e.name));
      const img = new Image(); img.src = "https://evil.example.com/pixel.png"; document.body.append(img);
    `;
    const id = await publishAs("dev", "slides", "Sneaky", { "index.html": `<!doctype html><html><head><title>s</title></head><body><section class="slide"><h1 id="out">Hello</h1><img id="logo" alt="Logo" src="artifact:${ids.document}/images/logo.svg"></section><script src="deck.js"></script></body></html>`, "deck.js": script });
    const page = await devPage();
    await page.goto(`${app.url}/artifacts/${id}`);
    const frame = await deckFrame(page);
    const out = frame.locator("#out");
    await expect.poll(() => out.getAttribute("data-api")).not.toBeNull();
    await expect.poll(() => out.getAttribute("data-blocked")).toBe("https://evil.example.com/pixel.png");
    expect(await out.getAttribute("data-origin")).toBe("null");
    expect(await out.getAttribute("data-cookie")).toBe("SecurityError");
    expect(await out.getAttribute("data-api")).toBe("TypeError"); // refused by the frame's CSP before it left the browser
    // another artifact's image the deck shows loads through its link; nothing else of the reader's does
    await expect.poll(() => frame.locator("#logo").evaluate((img: any) => img.complete && img.naturalWidth)).toBe(160);
    const base = `${app.url}${(await page.locator("iframe[data-deck-frame]").getAttribute("src"))!.replace(/index\.html.*$/, "")}`;
    expect((await fetch(`${base}_artifact/${ids.document}/1/images/logo.svg`)).status).toBe(200);
    expect((await fetch(`${base}_artifact/${ids.document}/1/document.md`)).status).toBe(404);
    expect((await fetch(`${base}_slide/${ids.deck}/1/1`)).status).toBe(404);
  });

  it("shows the images of a document section it embeds (they were broken: only files the deck names itself were served)", async () => {
    const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="200" height="100"><rect width="200" height="100" fill="#e11d48"/></svg>`;
    const doc = await publishAs("dev", "document", "With a figure", { "document.md": "# With a figure\n\nIntro.\n\n## Figures\n\nThe one figure:\n\n![A red box](red.svg)\n", "red.svg": svg });
    const id = await publishAs("dev", "slides", "Embeds a section", { "index.html": `<!doctype html><html><head><title>e</title></head><body><section class="slide"><h2>From the review</h2><svc-embed src="artifact:${doc}#figures"></svc-embed></section></body></html>` });
    const page = await devPage();
    await page.goto(`${app.url}/artifacts/${id}`);
    const frame = await deckFrame(page);
    const img = frame.locator("svc-embed img").first();
    await expect.poll(() => img.evaluate((el: any) => el.complete && el.naturalWidth), { timeout: 10_000 }).toBeGreaterThan(0);
    await screenshot(page, "deck-embedded-section");
    // an embed opens its artifact's images, not its other files
    const base = `${app.url}${(await page.locator("iframe[data-deck-frame]").getAttribute("src"))!.replace(/index\.html.*$/, "")}`;
    expect((await fetch(`${base}_artifact/${doc}/1/red.svg`)).status).toBe(200);
    expect((await fetch(`${base}_artifact/${doc}/1/document.md`)).status).toBe(404);
  });
});

/** A sheet of twelve months and three series with long names, its bar chart "Year" and line chart "Trend" (no theme: both modes). */
async function yearSheet(title: string): Promise<string> {
  const months = Array.from({ length: 12 }, (_, i) => `2026-${String(i + 1).padStart(2, "0")}-28`);
  const rows = ["Month,Recurring revenue,Professional services,Hardware costs", ...months.map((m, i) => `${m},${200000 + i * 13000},${80000 + i * 4000},${50000 + i * 2500}`)];
  const usd = { type: "currency", currency: "USD" };
  return publishAs("dev", "sheet", title, {
    "workbook.json": JSON.stringify({
      sheets: [{ name: "Data", columns: { Month: "date", "Recurring revenue": usd, "Professional services": usd, "Hardware costs": usd } }],
      charts: [
        { name: "Year", type: "bar", sheet: "Data", x: "Month", y: ["Recurring revenue", "Professional services", "Hardware costs"], title: "Revenue and costs by month, 2026" },
        { name: "Trend", type: "line", sheet: "Data", x: "Month", y: ["Recurring revenue"] },
      ],
    }),
    "sheets/Data.csv": rows.join("\n") + "\n",
  });
}

/**
 * The charts drawn on the page or frame as the reader sees them: which drawing shows (`svc-chart-wide` or
 * `svc-chart-compact`), its viewBox, the smallest label in CSS px as rendered (its font size times the
 * drawing's scale, slide scaling included), and the labels that overlap another or stick out of the drawing.
 */
function visibleCharts(where: Page | Frame) {
  return where.evaluate(() => {
    const svgs = [...document.querySelectorAll(".embed-chart svg, svc-embed svg")].filter((svg: any) => svg.getBoundingClientRect().width > 0);
    return svgs.map((svg: any) => {
      const box = svg.getBoundingClientRect();
      const scale = box.width / svg.viewBox.baseVal.width;
      const texts = [...svg.querySelectorAll("text")].filter((t: any) => t.textContent.trim() && getComputedStyle(t).opacity !== "0").map((t: any) => ({ text: t.textContent, rect: t.getBoundingClientRect(), px: parseFloat(getComputedStyle(t).fontSize) * scale }));
      const overlaps: string[] = [];
      texts.forEach((a: any, i: number) => texts.slice(i + 1).forEach((b: any) => {
        const w = Math.min(a.rect.right, b.rect.right) - Math.max(a.rect.left, b.rect.left);
        const h = Math.min(a.rect.bottom, b.rect.bottom) - Math.max(a.rect.top, b.rect.top);
        if (w > 1 && h > 1) overlaps.push(`${a.text} / ${b.text}`);
      }));
      const cut = texts.filter((t: any) => t.rect.left < box.left - 1 || t.rect.right > box.right + 1 || t.rect.top < box.top - 1 || t.rect.bottom > box.bottom + 1).map((t: any) => t.text);
      return { layout: svg.closest(".svc-chart-wide, .svc-chart-compact")?.className ?? "one drawing", viewBox: svg.getAttribute("viewBox"), smallest: Math.round(Math.min(...texts.map((t: any) => t.px)) * 10) / 10, labels: texts.length, overlaps, cut };
    });
  });
}

describe("charts on a phone", () => {
  it("draws a document's and a deck's charts in the compact layout on a 390 px phone (labels of 10 px or more, none overlapping or cut), and wide on a desktop", async () => {
    const sheet = await yearSheet("Year numbers");
    const doc = await publishAs("dev", "document", "Year review", { "document.md": `# Year review\n\nThe lede.\n\n## Year\n\n![Year](artifact:${sheet}#chart=Year)\n\n![Trend](artifact:${sheet}#chart=Trend)\n` });
    const deck = await publishAs("dev", "slides", "Year deck", { "index.html": `<!doctype html><html><head><title>d</title></head><body><section class="slide chart"><h2>Year</h2><svc-embed src="artifact:${sheet}#chart=Year"></svc-embed></section></body></html>` });
    const phone = await devPage(await browser.newContext({ viewport: { width: 390, height: 844 }, deviceScaleFactor: 2 }));
    await phone.goto(`${app.url}/artifacts/${doc}`);
    const docCharts = await visibleCharts(phone);
    expect(docCharts).toHaveLength(2);
    for (const c of docCharts) {
      expect(c.smallest, JSON.stringify(c)).toBeGreaterThanOrEqual(10);
      expect(c.labels).toBeGreaterThan(5);
      expect(c.overlaps, JSON.stringify(c)).toEqual([]);
      expect(c.cut, JSON.stringify(c)).toEqual([]);
    }
    expect(docCharts.map((c) => [c.layout, c.viewBox])).toEqual([["svc-chart-compact", "0 0 340 300"], ["svc-chart-compact", "0 0 340 300"]]);
    expect(await phone.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
    await phone.locator("figure.embed").first().scrollIntoViewIfNeeded();
    await screenshot(phone, "document-chart-phone");

    await phone.goto(`${app.url}/artifacts/${deck}`);
    const frame = await deckFrame(phone);
    const deckCharts = await visibleCharts(frame);
    expect(deckCharts).toHaveLength(1);
    expect(deckCharts[0]!.smallest, JSON.stringify(deckCharts[0])).toBeGreaterThanOrEqual(10);
    expect(deckCharts[0]!.overlaps, JSON.stringify(deckCharts[0])).toEqual([]);
    expect(deckCharts[0]!.cut, JSON.stringify(deckCharts[0])).toEqual([]);
    expect(deckCharts.map((c) => [c.layout, c.viewBox])).toEqual([["svc-chart-compact", "0 0 360 157"]]);
    await screenshot(phone, "deck-chart-phone");

    // a desktop keeps the wide drawing, at the box's size
    const desktop = await devPage();
    await desktop.goto(`${app.url}/artifacts/${doc}`);
    expect((await visibleCharts(desktop)).map((c) => [c.layout, c.viewBox])).toEqual([["svc-chart-wide", "0 0 720 360"], ["svc-chart-wide", "0 0 720 360"]]);
    await desktop.goto(`${app.url}/artifacts/${deck}`);
    expect((await visibleCharts(await deckFrame(desktop))).map((c) => [c.layout, c.viewBox])).toEqual([["svc-chart-wide", "0 0 1100 480"]]);
  });
});

describe("an empty document", () => {
  it("shows the reader a page saying the document is empty, and its author the publish warning", async () => {
    const id = await publishAs("dev", "document", "Nothing yet", { "document.md": "#\n\n> \n\n<!-- to do -->\n" });
    const page = await devPage();
    expect((await page.goto(`${app.url}/artifacts/${id}`))!.status()).toBe(200);
    const empty = page.locator("[data-document-empty]");
    expect(await empty.locator("h2").textContent()).toBe("This document is empty");
    expect(await empty.locator("p").textContent()).toBe("Version 1 has no text, images or embeds yet.");
    expect(await page.locator(".warnings summary").textContent()).toBe("1 publish warning");
    await page.locator(".warnings summary").click();
    expect(await page.locator('.warnings li[data-code="document_empty"]').textContent()).toMatch(/^document_empty document\.md shows nothing: it has no text, image or embed/);
    await screenshot(page, "document-empty");
    expect(await axeViolations(page)).toEqual([]);
    // a document with content says nothing of the kind
    await page.goto(`${app.url}/artifacts/${ids.document}`);
    expect(await page.locator("[data-document-empty]").count()).toBe(0);
  });
});

describe("artifacts named in what a reader reads", () => {
  it("names them by title, never by id (art_…): a missing embed, a broken dependent's warning (neutral for one the reader cannot open), a version that is not there; the API keeps the ids", async () => {
    const sheet = await yearSheet("Pipeline numbers");
    const doc = await publishAs("dev", "document", "Pipeline review", { "document.md": `# Pipeline review\n\nThe lede.\n\n![Year](artifact:${sheet}#chart=Year)\n` });
    // system code reaches every artifact: alice's document shows dev's chart too, and dev may not open it
    const alices = await publishAs("alice", "document", "Alice's secret plan", { "document.md": `# Plan\n\n![Year](artifact:${sheet}#chart=Year)\n` });
    // version 2 of the sheet renames the chart both documents show
    const dev = client(app);
    const workbook = JSON.parse((await dev.get(`/api/artifacts/${sheet}/versions/1/files/workbook.json`)).text);
    workbook.charts[0].name = "Year 2026";
    const csv = (await dev.get(`/api/artifacts/${sheet}/versions/1/files/sheets/Data.csv`)).text;
    const next = await dev.post(`/api/artifacts/${sheet}/versions`, { files: [
      { path: "workbook.json", file: await uploadFile(app, JSON.stringify(workbook), "workbook.json", "application/json") },
      { path: "sheets/Data.csv", file: await uploadFile(app, csv, "Data.csv", "text/csv") },
    ] });
    expect(next.status, next.text).toBe(200);
    // the API's warnings keep the ids, for code and operators
    expect(next.body.warnings.map((w: any) => [w.code, w.artifactId, w.message.includes(w.artifactId)]).sort()).toEqual([["dependent_broken", alices, true], ["dependent_broken", doc, true]].sort());

    const page = await devPage();
    await page.goto(`${app.url}/artifacts/${doc}`);
    const missing = page.locator(".embed-missing");
    expect(await missing.textContent()).toBe(`No longer there: “Pipeline numbers” has no chart "Year"; its charts are: Year 2026, Trend. Open Pipeline numbers`);

    await page.goto(`${app.url}/artifacts/${sheet}`);
    await page.locator(".warnings summary").click();
    const warnings = await page.locator('.warnings li[data-code="dependent_broken"]').allTextContents();
    expect(warnings.sort()).toEqual([
      `dependent_broken An artifact you cannot open shows chart “Year” of this artifact, which this version no longer has: this artifact has no chart "Year"; its charts are: Year 2026, Trend`,
      `dependent_broken “Pipeline review” shows chart “Year” of this artifact, which this version no longer has: this artifact has no chart "Year"; its charts are: Year 2026, Trend`,
    ]);
    expect(await page.locator(`.warnings a[href="/artifacts/${doc}"]`).textContent()).toBe("“Pipeline review”");
    await screenshot(page, "warnings-named");
    const text = await page.locator("main").innerText(); // what shows (the sheet view's JSON config holds its id)
    expect(text).not.toMatch(/art_[0-9A-Za-z]/);
    expect(text).not.toContain("Alice's secret plan");

    const gone = await page.goto(`${app.url}/artifacts/${sheet}?v=9`);
    expect(gone!.status()).toBe(404);
    expect(await page.locator(".empty-state p").first().textContent()).toBe("This artifact has no version 9; latest is 2");
  });
});

describe("the list in dark mode", () => {
  it("draws the previews in the reader's colour scheme, or the mode the theme pins", async () => {
    const sheet = await yearSheet("Dark preview numbers");
    const deck = await publishAs("dev", "slides", "Dark preview deck", { "index.html": `<!doctype html><html><head><title>d</title></head><body><section class="slide title"><h1>Night and day</h1><p>A deck whose theme pins no mode</p></section></body></html>` });
    const background = (el: any) => getComputedStyle(el).backgroundColor;
    const DARK_BG = "rgb(11, 17, 32)";
    const LIGHT_BG = "rgb(255, 255, 255)";
    /** The visible drawing of a sheet card's chart preview: its title's fill. */
    const chartTitle = (page: Page, id: string) => page.locator(`.card[data-artifact="${id}"] .preview-chart`).evaluate((el: any) => [...el.querySelectorAll("svg")].find((svg: any) => svg.getBoundingClientRect().width > 0)?.querySelector("text")?.ownerSVGElement && [...el.querySelectorAll("svg")].find((svg: any) => svg.getBoundingClientRect().width > 0)!.querySelectorAll("text").values().find((t: any) => t.textContent === "Revenue and costs by month, 2026")?.getAttribute("fill"));

    const context = await browser.newContext({ colorScheme: "dark", viewport: { width: 1360, height: 900 } });
    const page = await devPage(context);
    await page.goto(`${app.url}/artifacts`);
    expect(await page.locator(`.card[data-artifact="${sheet}"] .preview-chart`).evaluate(background)).toBe(DARK_BG);
    expect(await chartTitle(page, sheet)).toBe(chartStyle(undefined, "dark").foreground);
    // the deck check's screenshot is light: a dark page shows the live thumbnail, dark
    const thumb = page.locator(`.card[data-artifact="${deck}"] .preview iframe`);
    await expect.poll(() => thumb.count()).toBe(1);
    const frame = (await (await thumb.elementHandle())!.contentFrame())!;
    await frame.waitForFunction(() => (window as any).svcKit?.count > 0);
    expect(await frame.locator("section.slide").evaluate(background)).toBe(DARK_BG);
    // the sandbox's sheet and deck pin light: they stay light
    expect(await page.locator(`.card[data-artifact="${ids.sheet}"] .preview-chart`).evaluate(background)).toBe(LIGHT_BG);
    expect(await page.locator(`.card[data-artifact="${ids.deck}"] .preview img`).count()).toBe(1);
    await screenshot(page, "artifacts-list-dark", { fullPage: true });
    expect(await axeViolations(page)).toEqual([]);

    // light: the light drawing and the screenshot
    const light = await devPage();
    await light.goto(`${app.url}/artifacts`);
    expect(await light.locator(`.card[data-artifact="${sheet}"] .preview-chart`).evaluate(background)).toBe(LIGHT_BG);
    expect(await chartTitle(light, sheet)).toBe(chartStyle(undefined, "light").foreground);
    expect(await light.locator(`.card[data-artifact="${deck}"] .preview img`).evaluate((img: any) => img.complete && img.naturalWidth)).toBe(1280);
  });
});

describe("a file", () => {
  it("shows an image file with its type, size and a download link", async () => {
    const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="320" height="160"><rect width="320" height="160" fill="#4f46e5"/></svg>`;
    const id = await publishAs("dev", "file", "Logo", { "logo.svg": svg });
    const page = await devPage();
    await page.goto(`${app.url}/artifacts?kind=file`);
    expect(await page.locator(".preview-file-body").textContent()).toBe("SVGlogo.svg118 B");
    await page.goto(`${app.url}/artifacts/${id}`);
    await expect.poll(() => page.locator(".file-image").evaluate((img: any) => img.complete && img.naturalWidth)).toBe(320);
    expect(await page.getByRole("link", { name: "Download" }).getAttribute("href")).toBe(`/api/artifacts/${id}/versions/1/files/logo.svg`);
    expect(await axeViolations(page)).toEqual([]);
  });
});

describe("sign-in page", () => {
  it("goes back only to a path of this server", async () => {
    for (const next of ["/..//evil.example/", "//evil.example", "/\\evil.example", "https://evil.example/"]) {
      const html = await (await fetch(`${app.url}/sign-in?next=${encodeURIComponent(next)}`)).text();
      expect(html).toContain('data-next="/artifacts"');
    }
    expect(await (await fetch(`${app.url}/sign-in?next=${encodeURIComponent("/artifacts?kind=sheet")}`)).text()).toContain('data-next="/artifacts?kind=sheet"');
  });

  it("signs in without JavaScript (the form posts; the password never lands in the URL)", async () => {
    const page = await (await browser.newContext({ javaScriptEnabled: false })).newPage();
    await page.goto(`${app.url}/artifacts?kind=document`);
    await page.waitForURL(/\/sign-in\?next=/);
    await page.getByLabel("Identity").fill("dev");
    await page.getByLabel("Password").fill("wrong");
    await page.getByRole("button", { name: "Sign in" }).click();
    expect(await page.locator("[data-error]").textContent()).toBe("Wrong identity or password.");
    expect(page.url()).not.toContain("password");
    await page.getByLabel("Password").fill("dev-sandbox-password");
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.waitForURL(`${app.url}/artifacts?kind=document`);
    // the sandbox's document is listed (other tests of this file publish documents of their own, newer)
    expect(await page.locator(".card-title").allTextContents()).toContain("Q3 billing review");
  });

  it("has no accessibility violations", async () => {
    const page = await (await browser.newContext()).newPage();
    await page.goto(`${app.url}/sign-in`);
    await screenshot(page, "sign-in");
    expect(await axeViolations(page)).toEqual([]);
  });
});

describe("the API tokens page", () => {
  it("makes a token, shows its secret once with a copy button, lists it, and revokes it; the token works until then", async () => {
    const context = await browser.newContext({ viewport: { width: 1360, height: 900 }, permissions: ["clipboard-read", "clipboard-write"] });
    const page = await context.newPage();
    await signIn(page, app.url, "alice", "alice-sandbox-password", "/tokens");
    await page.getByRole("heading", { name: "API tokens" }).waitFor();
    expect(await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "API tokens" }).getAttribute("aria-current")).toBe("page");
    // a name is required: said on the page, nothing made
    await page.getByRole("button", { name: "Create token" }).click();
    expect(await page.locator("[data-error]").textContent()).toBe("Give the token a name: what it is for.");
    await page.getByLabel("Name").fill("nightly export");
    await page.getByLabel("Expires").selectOption("30");
    await page.getByRole("button", { name: "Create token" }).click();
    const secretBox = page.locator("[data-token-secret]");
    await secretBox.waitFor({ state: "visible" });
    const secret = (await secretBox.locator("[data-secret]").textContent())!;
    expect(secret).toMatch(/^svc_[\w-]{43}$/);
    expect(await secretBox.textContent()).toContain("is shown only now");
    await secretBox.getByRole("button", { name: "Copy" }).click();
    await expect.poll(() => page.evaluate(() => (window as any).navigator.clipboard.readText())).toBe(secret);
    // it works as alice, with alice's permissions
    expect((await client(app, secret).get("/api/objects?objectTypeId=invoice")).status).toBe(200);
    expect((await client(app, secret).get("/api/objects?objectTypeId=customer")).status).toBe(200);
    // its row, revocable at once
    const made = page.locator("tr", { hasText: "nightly export" });
    expect(await made.locator(".token-id").textContent()).toMatch(/^tok_/);
    expect(await made.getByRole("button", { name: "Revoke" }).isVisible()).toBe(true);
    await screenshot(page, "tokens-created");
    expect(await axeViolations(page)).toEqual([]);

    // listed after a reload, its secret nowhere in the page; expires in 30 days
    await page.reload();
    const row = page.locator("tr", { hasText: "nightly export" });
    expect(await row.locator(".token-state").textContent()).toBe("Active");
    expect(await page.content()).not.toContain(secret);
    const expires = await row.locator("td").nth(1).locator("time").getAttribute("datetime");
    expect(Math.round((Date.parse(expires!) - Date.now()) / 86_400_000)).toBe(30);
    await screenshot(page, "tokens");
    expect(await axeViolations(page)).toEqual([]);

    // revoked from the page (after a confirmation): at once
    page.once("dialog", (dialog) => void dialog.accept());
    await row.getByRole("button", { name: "Revoke" }).click();
    await expect.poll(() => row.locator(".token-state").textContent()).toBe("Revoked");
    expect((await client(app, secret).get("/api/project")).status).toBe(401);
    await context.close();
  });

  it("reads in dark mode, without accessibility violations", async () => {
    const context = await browser.newContext({ viewport: { width: 1360, height: 700 }, colorScheme: "dark" });
    const page = await context.newPage();
    await signIn(page, app.url, "alice", "alice-sandbox-password", "/tokens");
    await page.getByRole("heading", { name: "API tokens" }).waitFor();
    expect(await page.evaluate(() => getComputedStyle(document.documentElement).backgroundColor)).toBe("rgb(13, 17, 23)");
    await screenshot(page, "tokens-dark");
    expect(await axeViolations(page)).toEqual([]);
    await context.close();
  });

  it("sends a signed-out reader to sign in and back", async () => {
    const page = await (await browser.newContext()).newPage();
    await page.goto(`${app.url}/tokens`);
    await page.waitForURL(/\/sign-in\?next=%2Ftokens$/);
    expect(await page.locator(".sign-in .meta").textContent()).toBe("Sign in to manage your API tokens.");
    await page.close();
  });
});
