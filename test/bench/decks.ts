/**
 * Deck check benchmark (part of `npm run bench`; spec 4.3, issue 12 "Deck checks"): a 20-slide deck
 * (every layout, a chart, a table, images) checked by `DeckChecker` in Debian's Chromium, RUNS times
 * (BENCH_DECK_RUNS, default 5) with a warm pool after one untimed warm-up check, median and p95 next to
 * the goal (5,000 ms on 2 cores). The browser launch is timed on its own. Installs Debian's chromium
 * when it is missing, as the tests do.
 */
import os from "node:os";
import { ensureChromium } from "../setup/chromium";
import { cleanDeck } from "../fixtures/decks";
import { DeckChecker } from "../../core/artifacts/deck-check";

const RUNS = Number(process.env.BENCH_DECK_RUNS ?? 5);
const SLIDES = 20;
const GOAL_MS = 5_000;

ensureChromium((line) => console.log(line));
const phases: string[] = [];
const checker = new DeckChecker({ log: (line) => phases.push(line) });
const files = cleanDeck(SLIDES);

const launchStarted = performance.now();
const warm = await checker.warm();
if (!warm.ok) throw new Error(`No browser for the deck benchmark: ${warm.reason}`);
const launchMs = performance.now() - launchStarted;
const first = await checker.check({ files });
if (!first.checked) throw new Error(`The deck was not checked: ${first.reason}`);

const times: number[] = [];
for (let i = 0; i < RUNS; i++) {
  phases.length = 0;
  const started = performance.now();
  const result = await checker.check({ files });
  times.push(performance.now() - started);
  if (!result.checked || result.slides.length !== SLIDES) throw new Error(`run ${i + 1}: ${result.checked ? `${result.slides.length} slides` : result.reason}`);
}
await checker.close();

const sorted = [...times].sort((a, b) => a - b);
const median = sorted[Math.floor(sorted.length / 2)]!;
const p95 = sorted[Math.min(sorted.length - 1, Math.ceil(sorted.length * 0.95) - 1)]!;
const warnings = first.slides.reduce((n, s) => n + s.warnings.length, 0);
console.log(`deck checks: ${os.cpus().length} cores, Node ${process.version}, ${SLIDES}-slide deck (${warnings} warnings), ${RUNS} runs with a warm browser`);
console.log(`  browser launch       ${launchMs.toFixed(0).padStart(6)} ms  (once per process)`);
console.log(`  check, median        ${median.toFixed(0).padStart(6)} ms  (goal < ${GOAL_MS.toLocaleString("en-US")} ms) ${median < GOAL_MS ? "met" : "MISSED"}`);
console.log(`  check, p95           ${p95.toFixed(0).padStart(6)} ms  (goal < ${GOAL_MS.toLocaleString("en-US")} ms) ${p95 < GOAL_MS ? "met" : "MISSED"}`);
console.log(`  runs                 ${times.map((t) => t.toFixed(0)).join(", ")} ms`);
console.log(`  last run by phase    ${phases.filter((l) => l.includes("slides:")).map((l) => l.replace(/^\[deck-check\] \d+ slides: /, "")).join("; ")}`);

// the one summary (test/bench/all.ts)
const { reportRows } = await import("./report");
reportRows("decks", [{ case: `deck check, ${SLIDES}-slide deck, warm browser, p95`, now: `${p95.toFixed(0)} ms (median ${median.toFixed(0)} ms)`, goal: `< ${GOAL_MS.toLocaleString("en-US")} ms`, met: p95 < GOAL_MS }]);
