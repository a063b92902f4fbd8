/**
 * Deck checks (spec 4.3) in a real Chromium: Debian's package, installed by the test setup when missing.
 * Each rule is broken once by its own deck, a clean deck has no warning at all, and the no-browser path
 * answers unchecked. Screenshots of the clean deck and one failing deck are written under a temp dir
 * (the path is printed) so a person can look at them.
 */
import fs from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureChromium } from "../../test/setup/chromium";
import { cleanDeck, failingDecks, landscape } from "../../test/fixtures/decks";
import { CHROMIUM_PATH, defaultChromiumPath, HEADLESS_SHELL_PATH } from "./chromium";
import { DeckChecker, type DeckCheckResult } from "./deck-check";
import { kitDocument } from "./kit";

const log = (line: string) => process.stderr.write(`${line}\n`);
let checker: DeckChecker;
let shotsDir: string;
const launches: string[] = [];

beforeAll(async () => {
  ensureChromium(log);
  checker = new DeckChecker({ log: (line) => (line.includes("started in") ? launches.push(line) : undefined, log(line)) });
  shotsDir = fs.mkdtempSync(path.join(os.tmpdir(), "svc-deck-shots-"));
  log(`[deck-check test] screenshots are written to ${shotsDir}`);
});

afterAll(async () => {
  await checker?.close();
});

function checked(result: DeckCheckResult) {
  if (!result.checked) throw new Error(`expected a checked deck, got: ${result.reason}`);
  return result.slides;
}

function save(prefix: string, slides: ReturnType<typeof checked>) {
  for (const s of slides) fs.writeFileSync(path.join(shotsDir, `${prefix}-${String(s.number).padStart(2, "0")}.png`), s.screenshot);
}

/** Width and height from a PNG's IHDR chunk. */
function pngSize(buf: Buffer): { width: number; height: number } {
  expect(buf.subarray(0, 8)).toEqual(Buffer.from([137, 80, 78, 71, 13, 10, 26, 10]));
  return { width: buf.readUInt32BE(16), height: buf.readUInt32BE(20) };
}

const all = (slides: ReturnType<typeof checked>) => slides.flatMap((s) => s.warnings.map((w) => ({ slide: s.number, ...w })));

describe("DeckChecker", () => {
  it("finds nothing wrong with a clean deck and screenshots every slide at 1280x720", async () => {
    const slides = checked(await checker.check({ files: cleanDeck() }));
    save("clean", slides);
    expect(slides.map((s) => s.number)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    expect(all(slides)).toEqual([]);
    for (const s of slides) {
      expect(pngSize(s.screenshot)).toEqual({ width: 1280, height: 720 });
      expect(s.screenshot.length).toBeGreaterThan(5_000); // a rendered slide, not a blank
    }
    // slides differ from one another (each one was scrolled to, not the first one twenty times)
    expect(new Set(slides.map((s) => s.screenshot.toString("base64"))).size).toBe(slides.length);
  });

  const expected: Record<string, { code: string; says: RegExp }> = {
    overflow: { code: "overflow", says: /past the slide's right edge by \d+px: h2/ },
    footer_overlap: { code: "footer_overlap", says: /overlaps the footer \(p\.source\).*Point eleven/ },
    text_overlap: { code: "text_overlap", says: /Text overlaps other text: .*Another label on top of it.* over .*A label placed by hand/ },
    text_cut_off: { code: "text_cut_off", says: /cut off by div, which clips \d+px/ },
    text_cut_off_self: { code: "text_cut_off", says: /cut off by p, which clips \d+px/ },
    text_cut_off_ellipsis: { code: "text_cut_off", says: /cut off by p, which clips \d+px/ },
    small_text: { code: "small_text", says: /under 18px: p "Terms apply.* is 14px/ },
    contrast_light: { code: "contrast", says: /below WCAG AA contrast in light mode: .* has 1\.9\d?:1, needs 3:1 \(#b4bcc8 on #ffffff\)/ },
    contrast_dark: { code: "contrast", says: /below WCAG AA contrast in dark mode: .*#334155 on #0b1120/ },
    contrast_review: { code: "contrast_review", says: /needs review in light mode .*background gradient/ },
    broken_image: { code: "broken_image", says: /Image does not load: images\/photo\.png/ },
  };
  for (const [name, want] of Object.entries(expected)) {
    it(`warns once, on the slide that breaks it: ${name}`, async () => {
      const slides = checked(await checker.check({ files: failingDecks[name]!() }));
      if (name === "footer_overlap") save("failing-footer", slides);
      const warnings = all(slides);
      expect(warnings, JSON.stringify(warnings, null, 2)).toHaveLength(1);
      expect(warnings[0]).toMatchObject({ slide: 2, code: want.code });
      expect(warnings[0]!.message).toMatch(want.says);
      expect(warnings[0]!.element).toBeTruthy();
    });
  }

  it("checks only the mode a theme pins, and both modes otherwise", async () => {
    const files = failingDecks.contrast_dark!();
    // pinned light: the dark-only failure is not looked for
    expect(all(checked(await checker.check({ files, theme: { mode: "light", tokens: {} } })))).toEqual([]);
    // pinned dark, via theme.json: found, in dark mode
    files.set("theme.json", Buffer.from(JSON.stringify({ mode: "dark" })));
    const warnings = all(checked(await checker.check({ files })));
    expect(warnings.map((w) => [w.code, /dark mode/.test(w.message)])).toEqual([["contrast", true]]);
  });

  it("applies theme tokens over the kit, and the deck's own CSS over both", async () => {
    const slide = `<section class="slide"><p class="eyebrow">Tokens</p><h2>A grey primary color</h2></section>`;
    const html = `<!doctype html><html><head><link rel="stylesheet" href="deck.css"></head><body>${slide}</body></html>`;
    const theme = { mode: "light" as const, tokens: { "--primary": "#a3a3a3" } };
    const themed = all(checked(await checker.check({ files: new Map([["index.html", Buffer.from(html)], ["deck.css", Buffer.from("")]]), theme })));
    expect(themed).toMatchObject([{ code: "contrast", element: "p.eyebrow" }]);
    expect(themed[0]!.message).toContain("#a3a3a3 on #ffffff");
    const overridden = all(checked(await checker.check({ files: new Map([["index.html", Buffer.from(html)], ["deck.css", Buffer.from(".eyebrow { color: #1e293b; }")]]), theme })));
    expect(overridden).toEqual([]);
  });

  it("does not count blocked public CDNs or artifact addresses as broken, but does a missing CSS image", async () => {
    const html = `<!doctype html><html><head>
      <link rel="stylesheet" href="https://fonts.googleapis.com/css2?family=Inter">
      <script src="https://cdn.jsdelivr.net/npm/echarts@6/dist/echarts.min.js"></script>
      <script src="https://unpkg.com/does-not-matter@1/index.js"></script>
    </head><body>
      <section class="slide split"><h2>Images from elsewhere</h2>
        <img src="https://cdn.jsdelivr.net/gh/example/repo/photo.png" alt="From a CDN">
        <img src="artifact:art_01ABCDEFGHJKMNPQRSTVWXYZ0@2/images/logo.png" alt="From another artifact">
      </section>
      <section class="slide"><h2>A background that is missing</h2><div style="height: 200px; background-image: url(images/missing.jpg)"></div></section>
      <section class="slide image"><h2>A data URL image</h2><img src="data:image/png;base64,${landscape(64, 32).toString("base64")}" alt="Tiny"></section>
    </body></html>`;
    const warnings = all(checked(await checker.check({ files: new Map([["index.html", Buffer.from(html)]]) })));
    expect(warnings).toMatchObject([{ slide: 2, code: "broken_image" }]);
    expect(warnings[0]!.message).toContain("images/missing.jpg");
  });

  it("lets the deck's scripts run before it is measured", async () => {
    const html = `<!doctype html><html><body><section class="slide"><h2 id="t">Waiting</h2></section>
      <script>document.getElementById("t").textContent = "Written by the deck's script"; document.getElementById("t").style.fontSize = "12px";</script></body></html>`;
    const warnings = all(checked(await checker.check({ files: new Map([["index.html", Buffer.from(html)]]) })));
    expect(warnings).toMatchObject([{ slide: 1, code: "small_text" }]);
    expect(warnings[0]!.message).toContain("Written by the deck's script");
  });

  // Layers: route answers every request (only the deck's own files), routeWebSocket closes sockets, the
  // dead proxy flag catches what neither sees, and Chromium's own local-network rules refuse a public
  // origin's requests to loopback. This checks the outcome, not which layer stopped each request.
  it("keeps a deck's scripts off the network, loopback included", async () => {
    const hits: string[] = [];
    const server = http.createServer((req, res) => (hits.push(req.url ?? ""), res.end("ok")));
    server.on("upgrade", (req, socket) => (hits.push(`upgrade ${req.url}`), socket.destroy()));
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const base = `127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      const html = `<!doctype html><html><body><section class="slide"><h2>Phoning home</h2></section><script>
        fetch("http://${base}/fetch").catch(() => {});
        try { new WebSocket("ws://${base}/ws"); } catch (e) {}
        new Image().src = "http://${base}/image";
        navigator.sendBeacon("http://${base}/beacon", "x");
        const x = new XMLHttpRequest(); x.open("GET", "http://localhost:${base.split(":")[1]}/xhr"); x.send();
      </script></body></html>`;
      const slides = checked(await checker.check({ files: new Map([["index.html", Buffer.from(html)]]) }));
      expect(all(slides)).toEqual([]);
      await new Promise((r) => setTimeout(r, 300));
      expect(hits).toEqual([]);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it("reuses one browser for every check, also for checks at the same time", async () => {
    const [a, b, c] = await Promise.all([1, 2, 3].map(() => checker.check({ files: failingDecks.small_text!() })));
    for (const r of [a!, b!, c!]) expect(all(checked(r)).map((w) => w.code)).toEqual(["small_text"]);
    expect(launches).toHaveLength(1);
  });

  it("gives every check a context no other deck used", async () => {
    const leaves = `<!doctype html><html><body><section class="slide"><h2>Leaves traces</h2></section>
      <script>localStorage.setItem("trace", "1"); sessionStorage.setItem("trace", "1"); document.cookie = "trace=1; path=/";</script></body></html>`;
    const finds = `<!doctype html><html><body><section class="slide"><h2 id="t">Finds traces?</h2></section>
      <script>if (localStorage.getItem("trace") || sessionStorage.getItem("trace") || document.cookie.includes("trace")) document.getElementById("t").style.fontSize = "12px";</script></body></html>`;
    expect(all(checked(await checker.check({ files: new Map([["index.html", Buffer.from(leaves)]]) })))).toEqual([]);
    expect(all(checked(await checker.check({ files: new Map([["index.html", Buffer.from(finds)]]) })))).toEqual([]);
  });

  it("warm() opens the next check's context and page beforehand, a fresh one each time", async () => {
    const lines: string[] = [];
    const own = new DeckChecker({ log: (line) => lines.push(line) });
    try {
      const leaves = `<!doctype html><html><body><section class="slide"><h2>Leaves traces</h2></section>
        <script>localStorage.setItem("trace", "1"); document.cookie = "trace=1; path=/";</script></body></html>`;
      const finds = `<!doctype html><html><body><section class="slide"><h2 id="t">Finds traces?</h2></section>
        <script>if (localStorage.getItem("trace") || document.cookie.includes("trace")) document.getElementById("t").style.fontSize = "12px";</script></body></html>`;
      expect(await own.warm()).toEqual({ ok: true });
      expect(all(checked(await own.check({ files: new Map([["index.html", Buffer.from(leaves)]]) })))).toEqual([]);
      expect(await own.warm()).toEqual({ ok: true });
      expect(all(checked(await own.check({ files: new Map([["index.html", Buffer.from(finds)]]) })))).toEqual([]);
      // a check with no warm() before it opens its own
      expect(all(checked(await own.check({ files: failingDecks.small_text!() }))).map((w) => w.code)).toEqual(["small_text"]);
      const stages = lines.filter((l) => l.includes(" slides: ")).map((l) => /context and page (opened by warm\(\)|opened in \d+ ms)/.exec(l)?.[1]?.replace(/\d+/, "N"));
      expect(stages).toEqual(["opened by warm()", "opened by warm()", "opened in N ms"]);
    } finally {
      await own.close();
    }
  });

  it("lays decks out the same in either of Debian's builds: the headless shell (the default) and the browser", async () => {
    expect(defaultChromiumPath()).toBe(HEADLESS_SHELL_PATH); // the test setup installs both
    const browser = new DeckChecker({ executablePath: CHROMIUM_PATH });
    try {
      for (const files of [() => cleanDeck(), failingDecks.contrast_dark!, failingDecks.overflow!, failingDecks.broken_image!]) {
        const [shell, full] = [checked(await checker.check({ files: files() })), checked(await browser.check({ files: files() }))];
        expect(all(shell)).toEqual(all(full));
        expect(shell.map((s) => s.screenshot.equals(full[s.number - 1]!.screenshot))).toEqual(shell.map(() => true));
      }
    } finally {
      await browser.close();
    }
  });

  it("answers a deck without slides with no slides", async () => {
    expect(await checker.check({ files: new Map([["index.html", Buffer.from("<!doctype html><p>No slides</p>")]]) })).toEqual({ checked: true, slides: [] });
  });

  it("checks a 20-slide deck (its time is measured by test/bench/decks.ts)", async () => {
    const slides = checked(await checker.check({ files: cleanDeck(20) }));
    expect(slides).toHaveLength(20);
    expect(all(slides)).toEqual([]);
  });
});

describe("DeckChecker without a browser", () => {
  it("answers unchecked without trying a launch when the executable is missing", async () => {
    const lines: string[] = [];
    const none = new DeckChecker({ executablePath: "/nonexistent/chromium", log: (line) => lines.push(line) });
    const result = await none.check({ files: cleanDeck() });
    expect(result).toEqual({ checked: false, reason: expect.stringContaining("/nonexistent/chromium is missing") });
    expect(lines).toEqual([]); // a launch attempt would log "did not start"
    await none.close();
  });

  it("answers unchecked when the browser does not start, and does not retry at every check", async () => {
    const lines: string[] = [];
    const broken = new DeckChecker({ executablePath: "/bin/false", launchTimeoutMs: 5_000, log: (line) => lines.push(line) });
    const first = await broken.check({ files: cleanDeck() });
    expect(first).toEqual({ checked: false, reason: expect.stringContaining("did not start") });
    expect(lines.filter((l) => l.includes("did not start"))).toHaveLength(1);
    expect(await broken.check({ files: cleanDeck() })).toEqual(first);
    expect(await broken.check({ files: cleanDeck() })).toEqual(first);
    expect(lines.filter((l) => l.includes("did not start"))).toHaveLength(1); // remembered: no second launch
    await broken.close();
  });

  it("answers unchecked after close", async () => {
    const closed = new DeckChecker();
    await closed.close();
    expect(await closed.check({ files: cleanDeck() })).toEqual({ checked: false, reason: expect.stringContaining("shut down") });
  });
});

describe("kitDocument", () => {
  it("puts the kit before the deck's own styles, and keeps theme tokens inside their rule", () => {
    const html = `<!doctype html><html><head><link rel="stylesheet" href="deck.css"></head><body></body></html>`;
    const out = kitDocument(html, { kit: { cssUrl: "/kit/kit.css", jsUrl: "/kit/kit.js" }, theme: { mode: "dark", tokens: { "--primary": "#123456", "--accent": "red; } body { display: none" } } });
    expect(out.indexOf('href="/kit/kit.css"')).toBeLessThan(out.indexOf('href="deck.css"'));
    expect(out.indexOf("--primary: #123456")).toBeLessThan(out.indexOf('href="deck.css"'));
    expect(out).toContain('"mode":"dark"');
    expect(out).not.toContain("display: none");
    expect(kitDocument("<section class=slide>x</section>", { kit: { css: "a{}", js: "1" } })).toMatch(/^<!doctype html><script data-svc-kit>.*<style data-svc-kit>a\{\}<\/style>.*<section/);
  });
});
