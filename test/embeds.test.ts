/**
 * What an address shows where another artifact embeds it (spec 2.9, 2.10, 4.3), rendered by the real
 * EmbedRenderer over real published versions: ranges as tables formatted as their sheet formats them,
 * charts as SVG, sections as text (their own embeds as links), slides as their deck-check screenshot,
 * images, cards for whole artifacts, and "unavailable" for what the reader cannot open.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EmbedRenderer, type EmbedOptions, type Shown } from "../core/artifacts/render/embed";
import { publishAs, startApp } from "./helpers";

let app: Awaited<ReturnType<typeof startApp>>;
let embeds: EmbedRenderer;
const ids: Record<string, string> = {};
const dev = { kind: "identity" as const, id: "dev" };
const opts = (locale = "en-US"): EmbedOptions => ({ locale, mode: "light", links: { file: (id, v, p) => `/f/${id}/${v}/${p}`, screenshot: (id, v, n) => `/s/${id}/${v}/${n}` } });
const shown = (s: Shown) => {
  if (s.state !== "shown") throw new Error(`${s.address} is unavailable`);
  return s;
};

const publish = (owner: string, kind: "document" | "sheet" | "slides" | "file", title: string, files: Record<string, string>) => publishAs(app, owner, kind, title, files);

beforeAll(async () => {
  app = await startApp({ env: { SVC_DECK_CHECKS: "true" } });
  embeds = app.container.resolve(EmbedRenderer);
  const rows = ["Month,Revenue,Share", ...Array.from({ length: 60 }, (_, i) => `2026-01-${String((i % 28) + 1).padStart(2, "0")},${1000 + i},0.${String(i).padStart(2, "0")}`)];
  ids.sheet = await publish("dev", "sheet", "Numbers", {
    "workbook.json": JSON.stringify({ sheets: [{ name: "Data", columns: { Month: "date", Revenue: { type: "currency", currency: "EUR" }, Share: { type: "percent", decimals: 1 } } }], charts: [{ name: "Trend", type: "line", sheet: "Data", x: "Month", y: ["Revenue"] }] }),
    "sheets/Data.csv": rows.join("\n") + "\n",
  });
  ids.doc = await publish("dev", "document", "Notes", {
    "document.md": `# Notes\n\nThe lede.\n\n## Findings\n\nRevenue rose.\n\n![Trend](artifact:${ids.sheet}#chart=Trend)\n\n## Next\n\nMore.\n`,
    "images/dot.svg": `<svg xmlns="http://www.w3.org/2000/svg" width="4" height="4"/>`,
  });
  ids.deck = await publish("dev", "slides", "Deck", { "index.html": `<!doctype html><html><head><title>d</title></head><body><section class="slide"><h1>One</h1></section><section class="slide"><h2>Two</h2></section></body></html>` });
  ids.alices = await publish("alice", "document", "Alice's", { "document.md": "# Alice's\n\nPrivate.\n" });
}, 120_000);

afterAll(() => app?.close());

describe("EmbedRenderer.show", () => {
  it("shows a range as a table formatted as its sheet formats it, by the reader's locale, pinned or following", async () => {
    const pinned = shown(await embeds.show(dev, `artifact:${ids.sheet}@1#Data!A1:C3`, opts()));
    expect(pinned.body).toContain("<th scope=\"col\" class=\"\" title=\"A\">Month</th>");
    expect(pinned.body).toMatch(/<td class="num">EUR\s1,000\.00<\/td><td class="num">0\.0%<\/td>/); // currency with its code
    expect(pinned.body.match(/<tr>/g)).toHaveLength(3); // header + rows 2 and 3
    expect(pinned.source).toContain("fixed at version 1");
    const german = shown(await embeds.show(dev, `artifact:${ids.sheet}#Data!B2:B2`, opts("de-DE")));
    expect(german.body).toMatch(/1\.000,00\sEUR/);
    expect(german.source).toContain("follows the latest version (1)");
  });

  it("caps a long range and says how many rows are left", async () => {
    const all = shown(await embeds.show(dev, `artifact:${ids.sheet}#Data`, opts()));
    expect(all.body.match(/<tr>/g)).toHaveLength(51);
    expect(all.body).toContain("10 more rows");
  });

  it("shows a chart as an SVG scaled to its box, and a compact drawing of it for a narrow box (a phone)", async () => {
    const chart = shown(await embeds.show(dev, `artifact:${ids.sheet}#chart=Trend`, { ...opts(), chartSize: { width: 400, height: 200 } }));
    expect(chart.body).toMatch(/^<span class="svc-chart-wide"><svg[^>]*viewBox="0 0 400 200"[\s\S]*<\/svg><\/span><span class="svc-chart-compact"><svg[^>]*viewBox="0 0 340 300"[\s\S]*<\/svg><\/span>$/);
    const sized = shown(await embeds.show(dev, `artifact:${ids.sheet}#chart=Trend`, { ...opts(), compactChartSize: { width: 360, height: 157 } }));
    expect(sized.body).toMatch(/<span class="svc-chart-compact"><svg[^>]*viewBox="0 0 360 157"/);
    expect(chart.source).toContain("chart “Trend”");
  });

  it("shows a section as its text, and what that section shows as a link", async () => {
    const section = shown(await embeds.show(dev, `artifact:${ids.doc}#findings`, opts()));
    expect(section.body).toContain("Revenue rose.");
    expect(section.body).not.toContain("<svg");
    expect(section.body).toContain(`href="/artifacts/${ids.sheet}?part=chart%3DTrend"`);
    expect(section.body).not.toContain("More.");
  });

  it("shows a slide as its deck-check screenshot, an image file as an image, and a whole artifact as a card", async () => {
    const slide = shown(await embeds.show(dev, `artifact:${ids.deck}#2`, opts()));
    expect(slide.body).toBe(`<img src="/s/${ids.deck}/1/2" alt="" loading="lazy" width="1280" height="720">`);
    const image = shown(await embeds.show(dev, `artifact:${ids.doc}/images/dot.svg`, opts()));
    expect(image.body).toBe(`<img src="/f/${ids.doc}/1/images/dot.svg" alt="" loading="lazy">`);
    const card = shown(await embeds.show(dev, `artifact:${ids.doc}`, opts()));
    expect(card.body).toContain('<strong class="embed-card-title">Notes</strong>');
    expect(card.body).toContain("The lede.");
    expect(shown(await embeds.show(dev, `artifact:${ids.sheet}`, opts())).body).toContain("1 sheet, 1 chart · 60 rows");
  });

  it("answers unavailable for another owner's artifact and a malformed address, disclosing nothing, and missing to its owner for a part that is gone", async () => {
    expect(await embeds.show(dev, `artifact:${ids.alices}`, opts())).toEqual({ state: "unavailable", address: `artifact:${ids.alices}` });
    // the sheet's owner: what is missing and a way to the artifact
    // named by its title, not its id: the message is for the reader (the API's error keeps the id)
    expect(await embeds.show(dev, `artifact:${ids.sheet}#chart=Gone`, opts())).toEqual({ state: "missing", address: `artifact:${ids.sheet}#chart=Gone`, title: "Numbers", href: `/artifacts/${ids.sheet}`, message: `“Numbers” has no chart "Gone"; its charts are: Trend` });
    expect(await embeds.show(dev, `artifact:${ids.sheet}@7#chart=Trend`, opts())).toMatchObject({ state: "missing", message: "“Numbers” has no version 7; latest is 1" });
    expect((await embeds.show(dev, "artifact:not an address", opts())).state).toBe("unavailable");
    expect((await embeds.show({ kind: "identity", id: "alice" }, `artifact:${ids.sheet}#chart=Trend`, opts())).state).toBe("unavailable");
    expect((await embeds.show({ kind: "identity", id: "alice" }, `artifact:${ids.sheet}#chart=Gone`, opts())).state).toBe("unavailable");
  });
});
