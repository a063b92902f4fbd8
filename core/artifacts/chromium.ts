/**
 * Which Chromium the deck checks launch (spec 4.3), when `SVC_CHROMIUM_PATH` does not say.
 *
 * Debian ships Chromium twice: `chromium` (the browser; its headless mode runs the whole browser) and
 * `chromium-headless-shell` (the same Blink and V8 built as the headless shell only: what Playwright
 * itself launches for `headless: true`). The shell lays out and screenshots the same pixels (the
 * sandbox's and the tests' decks give byte-identical PNGs) in about two thirds of the time: a deck's load
 * ~60 %, its screenshots ~65 %, its start-up and memory lighter. So it is the default when installed.
 */
import fs from "node:fs";

/** Where Debian's `chromium-headless-shell` package puts the shell (`/usr/bin/chromium-headless-shell` is a shell script calling it). */
export const HEADLESS_SHELL_PATH = "/usr/lib/chromium/chromium-headless-shell";
/** Where Debian's `chromium` package puts the browser (a launcher script). */
export const CHROMIUM_PATH = "/usr/bin/chromium";

/**
 * The Chromium to launch when none is configured: the headless shell when it is installed, else the
 * browser (which may be missing too: the deck checker then answers unchecked, saying what to install).
 * @param exists whether a file exists (tests pass their own)
 */
export function defaultChromiumPath(exists: (file: string) => boolean = fs.existsSync): string {
  return exists(HEADLESS_SHELL_PATH) ? HEADLESS_SHELL_PATH : CHROMIUM_PATH;
}
