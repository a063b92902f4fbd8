/**
 * Deck checks (spec 4.3, issue 12 "Deck checks"): a `slides` version is laid out in headless Chromium
 * with the slides kit (core/artifacts/kit/) and its theme, and each slide gets warnings for content past
 * its edge or over the footer (`.source`), overlapping or cut-off text, text under 18px, text below WCAG
 * AA contrast (axe-core's `color-contrast` rule, in light and dark mode, or only the mode the theme
 * pins; axe's undecidable cases are "needs review" warnings, not passes) and broken images, plus a PNG
 * screenshot. Without a browser the answer is `{ checked: false, reason }`, quickly: the deck still
 * publishes, unchecked.
 *
 * How: Debian's Chromium (its headless shell when installed, see ./chromium.ts) driven by
 * playwright-core, launched once and reused (the pool: one browser, a fresh context per check, opened
 * ahead by `warm()`, at most `maxPages` at a time), closed by `close()`. The
 * deck's files are served to the page from memory through `route` on a made-up origin; every other
 * request is blocked (the public CDNs a deck may use are unreachable here, so a blocked CDN load is not a
 * finding). The kit lays the slides out one after another at 1280x720 (`SVC_KIT.layout = "stack"`), so
 * one pass measures every slide and one axe run per mode covers them all.
 *
 * The service does not load this module: it runs a `DeckChecker` in a child process of its own
 * (./deck-check-process.ts), which keeps playwright-core out of the service's memory.
 */
import fs from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { Browser, BrowserContext, Page, Route } from "playwright-core";
import { defaultChromiumPath } from "./chromium";
import type { Theme } from "./content";
import { contrastWarning, layoutWarning, runAxe, type AxeNode, type DeckWarning, type Finding } from "./deck-warnings";
import { kitAssets, kitDocument } from "./kit";
import { lazily } from "../lazy";

/**
 * ./content (css-tree, htmlparser2, valibot: about 0.1 s to load, more beside a start's other work),
 * loaded by the first check rather than by this module: the process that runs the checker starts the
 * browser's launch first.
 */
const content = lazily(() => import("./content"));

export { MIN_TEXT_PX, type DeckWarning } from "./deck-warnings";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const readText = (file: string) => fs.readFileSync(file, "utf8");

/**
 * Chromium flags. First those this closed network needs (see the machine notes): without the
 * background-networking ones Chromium keeps trying to reach Google's hosts. Playwright adds
 * `--headless`, `--no-sandbox` (we run as root) and a fresh empty user data dir itself. Then a deck's
 * scripts are kept off the network, loopback included, whatever `route` does not see: every connection
 * goes to a proxy that is not there, and WebRTC may not go around it. (Requests `route` answers never
 * reach the network stack; WebSockets are closed by `routeWebSocket`.)
 */
export const CHROMIUM_ARGS: readonly string[] = [
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--disable-dev-shm-usage",
  "--proxy-server=http://127.0.0.1:9",
  "--proxy-bypass-list=<-loopback>",
  "--force-webrtc-ip-handling-policy=disable_non_proxied_udp",
];

/** The answer of a check: every slide's warnings and screenshot, or why the deck was not checked. */
export type DeckCheckResult =
  | { checked: true; slides: Array<{ number: number; warnings: DeckWarning[]; screenshot: Buffer }> }
  | { checked: false; reason: string };

/** What is checked: the version's files by path (`index.html` at the root) and its theme, if any (else `theme.json` is read). */
export interface DeckInput {
  files: Map<string, Buffer>;
  theme?: { mode?: "light" | "dark"; tokens: Record<string, string> };
}

/** Options of a `DeckChecker`; every one has a default. */
export interface DeckCheckerOptions {
  /** The Chromium to launch (default {@link defaultChromiumPath}: Debian's headless shell when installed, else `/usr/bin/chromium`). */
  executablePath?: string;
  /** Launch flags (default `CHROMIUM_ARGS`). */
  args?: readonly string[];
  /** A whole check gives up after this long and answers unchecked (default 30 s). */
  timeoutMs?: number;
  /** How long a launch may take (default 15 s). */
  launchTimeoutMs?: number;
  /** Checks laid out at the same time (default 2: one per core here); more wait their turn. */
  maxPages?: number;
  /** After a failed launch, answer unchecked at once for this long before trying again (default 60 s). */
  retryLaunchAfterMs?: number;
  log?: (line: string) => void;
}

/** Where the deck's files are served from inside the browser; nothing ever leaves the machine. */
const DECK_ORIGIN = "https://deck.svc.invalid";


let kitFiles: { css: string; js: string; measure: string; axe: string } | undefined;
/** The kit, the in-page measuring script and axe-core, read once. */
function assets() {
  kitFiles ??= {
    ...kitAssets(),
    measure: readText(path.join(HERE, "deck-check.page.js")),
    axe: readText(createRequire(import.meta.url).resolve("axe-core/axe.min.js")),
  };
  return kitFiles;
}

/**
 * Lays decks out in headless Chromium and reports what is wrong on each slide (spec 4.3). One browser
 * is launched on first use and reused; `close()` ends it (register it on the lifecycle's `close`).
 */
export class DeckChecker {
  private readonly executablePath: string;
  private readonly args: readonly string[];
  private readonly timeoutMs: number;
  private readonly launchTimeoutMs: number;
  private readonly maxPages: number;
  private readonly retryLaunchAfterMs: number;
  private readonly log: (line: string) => void;
  private browser: Promise<Browser> | undefined;
  /** A stage `warm()` opened for the next check (taken by it; cleared when the browser goes away). */
  private spare: Promise<Stage> | undefined;
  private launchFailure: { at: number; reason: string } | undefined;
  private running = 0;
  private readonly waiting: Array<() => void> = [];
  private closed = false;

  /** Nothing starts here: the browser is launched by the first check (or `warm()`). */
  constructor(options: DeckCheckerOptions = {}) {
    this.executablePath = options.executablePath ?? defaultChromiumPath();
    this.args = options.args ?? CHROMIUM_ARGS;
    this.timeoutMs = options.timeoutMs ?? 30_000;
    this.launchTimeoutMs = options.launchTimeoutMs ?? 15_000;
    this.maxPages = Math.max(1, options.maxPages ?? 2);
    this.retryLaunchAfterMs = options.retryLaunchAfterMs ?? 60_000;
    this.log = options.log ?? (() => undefined);
  }

  /**
   * Starts the browser now rather than on the first check (e.g. at `ready`), and opens the next check's
   * context and page, so the first publish pays for neither. @returns whether a browser is available, and why not
   */
  async warm(): Promise<{ ok: true } | { ok: false; reason: string }> {
    const got = await this.acquireBrowser();
    if ("reason" in got) return { ok: false, reason: got.reason };
    if (!this.spare) {
      this.spare = this.openStage(got.browser);
      this.spare.catch(() => undefined); // the check that takes it opens another
    }
    return { ok: true };
  }

  /**
   * Checks a deck: every `<section class="slide">` of `index.html`, laid out with the kit and theme at
   * 1280x720. Never throws for a deck's content or a missing browser.
   * @returns per slide (numbered from 1) its warnings and a PNG screenshot, or `{ checked: false, reason }`
   *   when there is no browser, it could not start, the check took longer than `timeoutMs`, or the page crashed
   */
  async check(deck: DeckInput): Promise<DeckCheckResult> {
    if (this.closed) return { checked: false, reason: "The deck checker is shut down" };
    const html = deck.files.get("index.html");
    if (!html) return { checked: false, reason: "The deck has no index.html" };
    const got = await this.acquireBrowser();
    if ("reason" in got) return { checked: false, reason: got.reason };
    await this.slot();
    let stage: Stage | undefined;
    let timer: NodeJS.Timeout | undefined;
    try {
      const spare = this.spare;
      this.spare = undefined;
      const opening = Date.now();
      const warmed = await spare?.catch(() => undefined);
      const ready = (stage = warmed ?? (await this.openStage(got.browser)));
      const opened = warmed ? "opened by warm()" : `opened in ${Date.now() - opening} ms`;
      const timedOut = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new CheckTimeout(this.timeoutMs)), this.timeoutMs);
      });
      const running = this.run(ready, opened, deck, html);
      running.catch(() => undefined); // after a timeout the closed context makes it fail: nobody waits for it then
      return await Promise.race([running, timedOut]);
    } catch (err) {
      const reason = err instanceof CheckTimeout ? err.message : `The deck could not be laid out: ${(err as Error).message.split("\n")[0]}`;
      this.log(`[deck-check] ${reason}`);
      return { checked: false, reason };
    } finally {
      clearTimeout(timer);
      await stage?.context.close().catch(() => undefined);
      this.release();
    }
  }

  /**
   * A fresh context (1280x720, no service workers, reduced motion) with its one page, every request
   * routed to whatever deck `stage.target.serve` is later set to (blocked until then), WebSockets closed.
   * Opening one takes a few round trips to the browser and a renderer process: 0.1 s on an idle
   * machine, up to half a second under a start's load, which is why `warm()` opens the first one.
   */
  private async openStage(browser: Browser): Promise<Stage> {
    const context = await browser.newContext({
      viewport: { width: 1280, height: 720 },
      deviceScaleFactor: 1,
      bypassCSP: true,
      serviceWorkers: "block",
      reducedMotion: "reduce",
      acceptDownloads: false,
    });
    try {
      const target: Stage["target"] = {};
      await context.route("**/*", (route) => (target.serve ? target.serve(route) : route.abort("blockedbyclient")));
      await context.routeWebSocket(() => true, (ws) => ws.close({ code: 1008, reason: "A deck check loads nothing from the network" }));
      // axe-core comes with every document of the main frame (the deck's frames get none: the contrast
      // rule runs on the top document, as before), sent to the browser once per context here and run
      // as the document starts, rather than sent (550 kB) and run after the deck's load: 0.25 s less per check
      await context.addInitScript({ content: `if (window === window.top) {\n${assets().axe}\n}` });
      return { context, page: await context.newPage(), target };
    } catch (err) {
      await context.close().catch(() => undefined);
      throw err;
    }
  }

  /** Closes the browser; later checks answer unchecked. Safe to call twice. */
  async close(): Promise<void> {
    this.closed = true;
    const pending = this.browser;
    this.browser = undefined;
    if (pending) await pending.then((b) => b.close()).catch(() => undefined);
  }

  /** One check on `stage`; `opened` says how the stage came to be, for the log line. */
  private async run(stage: Stage, opened: string, deck: DeckInput, html: Buffer): Promise<DeckCheckResult> {
    const kit = assets();
    const { ALLOWED_CDN_HOSTS, contentTypeOf, readTheme } = await content();
    const theme = deck.theme ?? themeOf(deck.files, readTheme);
    const primary = theme?.mode ?? "light";
    const modes: Array<"light" | "dark"> = theme?.mode ? [theme.mode] : ["light", "dark"];
    const failedUrls: string[] = [];
    const { page } = stage;
    stage.target.serve = (route) => this.serve(route, deck.files, html, kit, theme, failedUrls, contentTypeOf);
    await page.emulateMedia({ colorScheme: primary, reducedMotion: "reduce" });
    const t0 = Date.now();
    await page.goto(`${DECK_ORIGIN}/index.html`, { waitUntil: "load", timeout: this.timeoutMs });

    const tLoad = Date.now();
    const perSlide = (await page.evaluate(`${kit.measure}(${JSON.stringify({ failedUrls, cdnHosts: ALLOWED_CDN_HOSTS })})`)) as Finding[][];
    const count = perSlide.length;
    const t1 = Date.now();
    const screenshots = await this.screenshots(page, count);
    const t2 = Date.now();

    const contrast: Array<{ mode: "light" | "dark"; violations: AxeNode[]; incomplete: AxeNode[] }> = [];
    for (const mode of count > 0 ? [primary, ...modes.filter((m) => m !== primary)] : []) {
      if (mode !== primary) await page.emulateMedia({ colorScheme: mode });
      contrast.push({ mode, ...(await runAxe(page)) });
    }
    this.log(`[deck-check] ${count} slides: context and page ${opened}, load ${tLoad - t0} ms, layout ${t1 - tLoad} ms, screenshots ${t2 - t1} ms, contrast (${contrast.map((c) => c.mode).join(", ")}) ${Date.now() - t2} ms`);

    return {
      checked: true,
      slides: perSlide.map((findings, i) => {
        const number = i + 1;
        const warnings: DeckWarning[] = findings.map(layoutWarning);
        for (const { mode, violations, incomplete } of contrast) {
          const bad = violations.filter((n) => n.slide === number);
          if (bad.length) warnings.push(contrastWarning("contrast", mode, bad));
          const review = incomplete.filter((n) => n.slide === number);
          if (review.length) warnings.push(contrastWarning("contrast_review", mode, review));
        }
        return { number, warnings, screenshot: screenshots[i]! };
      }),
    };
  }

  /** Answers the page's requests: the deck's own files from memory (index.html with the kit), nothing else. */
  private async serve(route: Route, files: Map<string, Buffer>, html: Buffer, kit: { css: string; js: string }, theme: Theme | undefined, failed: string[], contentTypeOf: (file: string) => string): Promise<void> {
    const url = new URL(route.request().url());
    if (url.origin !== DECK_ORIGIN) return route.abort("blockedbyclient");
    let file: string;
    try {
      file = decodeURIComponent(url.pathname).replace(/^\/+/, "");
    } catch {
      file = url.pathname;
    }
    if (file === "" || file === "index.html") {
      return route.fulfill({ status: 200, contentType: contentTypeOf("index.html"), body: kitDocument(html.toString("utf8"), { kit, theme, layout: "stack" }) });
    }
    const body = files.get(file);
    if (!body) {
      failed.push(url.href.split("#")[0]!);
      return route.fulfill({ status: 404, contentType: "text/plain", body: "not a file of this version" });
    }
    return route.fulfill({ status: 200, contentType: contentTypeOf(file), body });
  }

  /**
   * One PNG per slide. Each stacked slide is scrolled to the viewport's corner and the viewport captured
   * over CDP (a third of the time of a clipped full-page screenshot); a slide that cannot sit exactly
   * there (a deck's wrapper adds margins) is captured as an element.
   */
  private async screenshots(page: Page, count: number): Promise<Buffer[]> {
    const cdp = await page.context().newCDPSession(page);
    const shots: Buffer[] = [];
    try {
      for (let i = 0; i < count; i++) {
        const at = (await page.evaluate(`(() => {
          const s = document.querySelectorAll("section.slide")[${i}];
          const r0 = s.getBoundingClientRect();
          scrollTo(r0.left + scrollX, r0.top + scrollY);
          const r = s.getBoundingClientRect();
          return [r.left, r.top, r.width, r.height];
        })()`)) as [number, number, number, number];
        if (Math.abs(at[0]) < 0.5 && Math.abs(at[1]) < 0.5 && Math.abs(at[2] - 1280) < 0.5 && Math.abs(at[3] - 720) < 0.5) {
          const { data } = await cdp.send("Page.captureScreenshot", { format: "png", optimizeForSpeed: true });
          shots.push(Buffer.from(data, "base64"));
        } else {
          shots.push(await page.locator("section.slide").nth(i).screenshot({ type: "png", animations: "disabled", caret: "hide" }));
        }
      }
    } finally {
      await cdp.detach().catch(() => undefined);
    }
    return shots;
  }

  /** The shared browser, launched on first use; a failed launch is remembered for `retryLaunchAfterMs`. */
  private async acquireBrowser(): Promise<{ browser: Browser } | { reason: string }> {
    if (this.closed) return { reason: "The deck checker is shut down" };
    if (!fs.existsSync(this.executablePath)) return { reason: `No browser to lay the deck out: ${this.executablePath} is missing (install Debian's chromium-headless-shell or chromium package)` };
    if (this.launchFailure && Date.now() - this.launchFailure.at < this.retryLaunchAfterMs) return { reason: this.launchFailure.reason };
    if (!this.browser) {
      const started = Date.now();
      // required, not imported: an ES import of this CommonJS package first scans its sources for export
      // names (~0.65 s against ~0.47 s), all of it holding the event loop (issue 15)
      this.browser = Promise.resolve().then(() =>
        (createRequire(import.meta.url)("playwright-core") as typeof import("playwright-core")).chromium.launch({
          executablePath: this.executablePath,
          args: [...this.args],
          timeout: this.launchTimeoutMs,
          headless: true,
          // the process that owns the checker decides when the browser closes (close()), not a signal
          handleSIGINT: false,
          handleSIGTERM: false,
          handleSIGHUP: false,
        }),
      );
      this.browser.then(
        (b) => {
          this.log(`[deck-check] Chromium ${b.version()} started in ${Date.now() - started} ms`);
          b.on("disconnected", () => {
            if (this.browser && !this.closed) this.log("[deck-check] Chromium went away; the next check starts it again");
            this.browser = undefined;
            this.spare = undefined;
          });
        },
        () => undefined,
      );
    }
    try {
      const browser = await this.browser;
      if (this.closed) return { reason: "The deck checker is shut down" };
      return { browser };
    } catch (err) {
      const reason = `The browser did not start (${this.executablePath}): ${(err as Error).message.split("\n")[0]}`;
      this.browser = undefined;
      this.launchFailure = { at: Date.now(), reason };
      this.log(`[deck-check] ${reason}`);
      return { reason };
    }
  }

  private slot(): Promise<void> {
    if (this.running < this.maxPages) {
      this.running++;
      return Promise.resolve();
    }
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  private release(): void {
    const next = this.waiting.shift();
    if (next) next();
    else this.running--;
  }
}

/** A context and its page, ready for a check: its requests go to `target.serve` once a check sets it. */
interface Stage {
  context: BrowserContext;
  page: Page;
  target: { serve?: (route: Route) => Promise<void> };
}

class CheckTimeout extends Error {
  constructor(ms: number) {
    super(`The deck check took longer than ${ms} ms and was stopped`);
  }
}

/** The deck's `theme.json`, when it has a valid one. */
function themeOf(files: Map<string, Buffer>, readTheme: (typeof import("./content"))["readTheme"]): Theme | undefined {
  const text = files.get("theme.json");
  if (!text) return undefined;
  const read = readTheme(text.toString("utf8"));
  return "theme" in read ? read.theme : undefined;
}

