/**
 * The browser context and page a deck check lays its deck out in (spec 4.3; `DeckChecker`,
 * ./deck-check.ts). Making them takes 0.3-0.4 s of a check on 2 cores (a new renderer process), so
 * {@link SpareDeckPage} keeps one made ahead of time: after the browser's launch and after each check,
 * in the background. Every check still gets a context no deck has used: a spare is used once, then
 * closed (issue 15: a fresh data dir's start waits for the seed's deck check).
 */
import type { Browser, BrowserContext, Page, Route } from "playwright-core";

/** A context and its page for one check; requests go to `serve` (aborted while it is unset). */
export interface DeckPage {
  browser: Browser;
  context: BrowserContext;
  page: Page;
  /** Answers the page's requests: set by the check before it navigates. */
  serve: ((route: Route) => Promise<void>) | undefined;
}

/**
 * Opens a context at 1280x720 (scale 1, CSP bypassed for the kit's inline parts, no service workers,
 * reduced motion, no downloads) and its page. Every request goes through the page's `serve` (aborted
 * with `blockedbyclient` before one is set), and every WebSocket is closed: a deck check loads nothing
 * from the network.
 * @throws the browser's error when it is gone or cannot open a context
 */
export async function openDeckPage(browser: Browser): Promise<DeckPage> {
  const context = await browser.newContext({
    viewport: { width: 1280, height: 720 },
    deviceScaleFactor: 1,
    bypassCSP: true,
    serviceWorkers: "block",
    reducedMotion: "reduce",
    acceptDownloads: false,
  });
  try {
    const deckPage: DeckPage = { browser, context, page: undefined as unknown as Page, serve: undefined };
    await context.route("**/*", (route) => (deckPage.serve ? deckPage.serve(route) : route.abort("blockedbyclient")));
    await context.routeWebSocket(() => true, (ws) => ws.close({ code: 1008, reason: "A deck check loads nothing from the network" }));
    deckPage.page = await context.newPage();
    return deckPage;
  } catch (err) {
    await context.close().catch(() => undefined);
    throw err;
  }
}

/** One {@link DeckPage} made ahead of the check that takes it. */
export class SpareDeckPage {
  private spare: Promise<DeckPage | undefined> | undefined;
  private closed = false;

  /** Starts making a spare for `browser` unless one is made or being made. Never throws. */
  refill(browser: Browser): void {
    if (this.closed || this.spare || !browser.isConnected()) return;
    this.spare = openDeckPage(browser).catch(() => undefined);
  }

  /**
   * The spare when it is (being) made for `browser` and still open, else a new page: a spare of a
   * browser that went away, or that failed, is dropped.
   * @throws the browser's error when a new page cannot be opened
   */
  async take(browser: Browser): Promise<DeckPage> {
    const spare = this.spare;
    this.spare = undefined;
    const ready = await spare;
    if (ready && ready.browser === browser && !ready.page.isClosed()) return ready;
    if (ready) await ready.context.close().catch(() => undefined);
    return openDeckPage(browser);
  }

  /** Closes the spare; `refill` does nothing from then on. */
  async close(): Promise<void> {
    this.closed = true;
    const spare = this.spare;
    this.spare = undefined;
    await (await spare)?.context.close().catch(() => undefined);
  }
}
