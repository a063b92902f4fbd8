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
import { errorCode } from "../errors";

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

/**
 * A warning for the start when the deck checks' Chromium cannot be launched: `chromiumPath` does not
 * exist, is not a file or is not executable (then every deck publishes unchecked, saying why, and
 * nothing else said so). `undefined` when it is an executable file.
 * @param configured whether `SVC_CHROMIUM_PATH` set the path (else it is {@link defaultChromiumPath}'s)
 */
export function chromiumPathWarning(chromiumPath: string, configured: boolean): string | undefined {
  let problem: string | undefined;
  try {
    if (!fs.statSync(chromiumPath).isFile()) problem = "is not a file";
    else fs.accessSync(chromiumPath, fs.constants.X_OK);
  } catch (err) {
    problem = errorCode(err) === "ENOENT" ? "does not exist" : "is not executable";
  }
  if (!problem) return undefined;
  const which = configured ? `SVC_CHROMIUM_PATH ${chromiumPath}` : `The deck checks' Chromium ${chromiumPath} (the default; SVC_CHROMIUM_PATH is unset)`;
  return `${which} ${problem}: published decks will not be checked (they publish unchecked); set SVC_CHROMIUM_PATH to a Chromium (Debian's chromium-headless-shell or chromium), or SVC_DECK_CHECKS=false`;
}
