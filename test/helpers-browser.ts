import fs from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { chromium, type Browser, type Page } from "playwright-core";
import { CHROMIUM_ARGS } from "../core/artifacts/deck-check";
import { ensureChromium } from "./setup/chromium";

// browser globals inside page.evaluate callbacks (this file is type-checked without the DOM library)
declare const document: unknown;
declare const window: unknown;

const AXE = createRequire(import.meta.url).resolve("axe-core/axe.min.js");
/** Where browser tests save their screenshots (committed: the README shows them). */
export const SCREENSHOTS = path.join(process.cwd(), "test", "screenshots");

/** Launches Debian's Chromium (installed by the test setup when missing) through playwright-core. */
export async function launchBrowser(): Promise<Browser> {
  return chromium.launch({ executablePath: ensureChromium(), args: [...CHROMIUM_ARGS, "--no-proxy-server"], headless: true });
}

/** Signs in through the sign-in page, as a person does, and waits for the page it goes back to. */
export async function signIn(page: Page, baseUrl: string, identity: string, password: string, next = "/artifacts"): Promise<void> {
  await page.goto(`${baseUrl}${next}`);
  await page.waitForURL(/\/sign-in\?next=/);
  await page.getByLabel("Identity").fill(identity);
  await page.getByLabel("Password").fill(password);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.waitForURL((url) => url.pathname + url.search === next);
}

/** axe-core's violations on the page as it is now (every rule axe runs by default: WCAG A/AA and best practices). */
export async function axeViolations(page: Page): Promise<Array<{ id: string; help: string; nodes: string[] }>> {
  // evaluated over the DevTools protocol: the pages' CSP (script-src 'self') does not apply to it
  if (!(await page.evaluate(() => "axe" in (window as object)))) await page.evaluate(fs.readFileSync(AXE, "utf8"));
  const result = await page.evaluate(async () => {
    const axe = (window as unknown as { axe: { run(ctx: unknown, opts: unknown): Promise<{ violations: Array<{ id: string; help: string; nodes: Array<{ target: string[] }> }> }> } }).axe;
    return axe.run(document, { resultTypes: ["violations"] });
  });
  return result.violations.map((v) => ({ id: v.id, help: v.help, nodes: v.nodes.map((n) => n.target.join(" ")) }));
}

/** Saves a PNG of the page to test/screenshots/<name>.png. */
export async function screenshot(page: Page, name: string, opts: { fullPage?: boolean } = {}): Promise<string> {
  fs.mkdirSync(SCREENSHOTS, { recursive: true });
  const file = path.join(SCREENSHOTS, `${name}.png`);
  await page.screenshot({ path: file, fullPage: opts.fullPage ?? false });
  return file;
}
