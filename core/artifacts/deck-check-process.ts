/**
 * Deck checks (spec 4.3) in their own process: the service forks ./deck-check-child.ts, which runs the
 * {@link DeckChecker} (playwright-core and one Chromium), and asks it over IPC.
 *
 * Why a process: playwright-core in the service's process costs ~35 MB of heap (~75 MB of RSS: its two
 * bundles alone are 13 MB of source text) and holds the event loop ~0.4 s while it loads (issue 15); a
 * driver or browser crash cannot take the service down; and when no deck has been checked for
 * `idleMs`, the process and its Chromium exit, giving all of that memory back. The next check (or
 * `warm()`) starts them again (about a second).
 */
import { fork, type ChildProcess } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { Config } from "../config";
import type { Logger } from "../logger";
import type { DeckCheckerOptions, DeckCheckResult, DeckInput } from "./deck-check";

const SELF = fileURLToPath(import.meta.url);
const HERE = path.dirname(SELF);
/** Where sandbox/build.ts emits the child's entry, relative to the build's outdir (without `.js`). */
export const DECK_CHECK_CHILD_OUTPUT = "sandbox/deck-check-child";
/** `.ts` when this module runs from source (tsx, vitest), `.js` when compiled. */
const EXT = path.extname(SELF);
/**
 * The child's entry: beside this module from source; compiled, where sandbox/build.ts emits it
 * (`<outdir>/sandbox/deck-check-child.js`; this module's URL is mirrored to `<outdir>/core/artifacts/`).
 */
const CHILD_ENTRY = EXT === ".ts" ? path.join(HERE, "deck-check-child.ts") : path.resolve(HERE, "../..", `${DECK_CHECK_CHILD_OUTPUT}.js`);

/** Options of a {@link DeckCheckProcess}: the checker's, plus how long an idle process lives. */
export interface DeckCheckProcessOptions extends DeckCheckerOptions {
  /** The process and its browser exit after this many ms without a check (default 600,000: 10 min; 0: never). */
  idleMs?: number;
}

type Answer = { result: unknown } | { error: string };
interface Pending {
  /** The process asked: only its exit answers this request. */
  child: ChildProcess;
  settle(answer: Answer): void;
}

/** A request to the deck-check process (./deck-check-child.ts). */
export type DeckCheckRequest = { id: number; op: "warm" } | { id: number; op: "check"; deck: DeckInput } | { op: "close" };

/** A `Buffer` over the same bytes (structured clone hands a `Buffer` over as a plain `Uint8Array`). */
export function asBuffer(bytes: Uint8Array): Buffer {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/**
 * The service's deck-check process as its config sets it up (`SVC_CHROMIUM_PATH`, `SVC_DECK_CHECK_IDLE_MS`),
 * logging the child's lines at info level. Nothing starts until its first `warm()` or `check()`.
 */
export function deckCheckProcessFor(config: Pick<Config, "chromiumPath" | "deckCheckIdleMs">, log: Pick<Logger, "info">): DeckCheckProcess {
  return new DeckCheckProcess({ executablePath: config.chromiumPath, idleMs: config.deckCheckIdleMs, log: (line) => log.info(line) });
}

/**
 * The service's deck checker: the same `warm`/`check`/`close` as {@link DeckChecker}, answered by a
 * child process started on first use. `warm` and `check` never throw: a child that cannot start,
 * crashes or goes silent makes them answer `{ ok: false, reason }` / `{ checked: false, reason }`.
 */
export class DeckCheckProcess {
  private readonly childOptions: Omit<DeckCheckerOptions, "log">;
  private readonly log: (line: string) => void;
  private readonly idleMs: number;
  /** How long the child may say nothing while requests are pending: a check's and a launch's timeouts and 10 s. */
  private readonly answerMs: number;
  private child: ChildProcess | undefined;
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private idleTimer: NodeJS.Timeout | undefined;
  /** Fires when the child has said nothing for `answerMs` while requests are pending. */
  private watchdog: NodeJS.Timeout | undefined;
  /** A stop under way (an idle stop, or close()), until the child has exited. */
  private stopping: Promise<void> | undefined;
  private closed = false;
  /** Checks asked for and not answered yet. */
  private checking = 0;
  private readonly checkWaiters: Array<() => void> = [];

  /** Nothing starts here: the process is forked by the first check (or `warm()`). */
  constructor(options: DeckCheckProcessOptions = {}) {
    const { log, idleMs, ...childOptions } = options;
    this.childOptions = childOptions;
    this.log = log ?? (() => undefined);
    this.idleMs = idleMs ?? 600_000;
    this.answerMs = (options.timeoutMs ?? 30_000) + (options.launchTimeoutMs ?? 15_000) + 10_000;
  }

  /**
   * Starts the process and its browser now rather than at the first check.
   * @returns whether a browser is available, and why not
   */
  async warm(): Promise<{ ok: true } | { ok: false; reason: string }> {
    const answer = await this.request({ op: "warm" });
    return "error" in answer ? { ok: false, reason: answer.error } : (answer.result as { ok: true } | { ok: false; reason: string });
  }

  /** {@link DeckChecker.check}, in the child process. */
  async check(deck: DeckInput): Promise<DeckCheckResult> {
    this.checking++;
    for (const resolve of this.checkWaiters.splice(0)) resolve();
    let answer: Answer;
    try {
      answer = await this.request({ op: "check", deck });
    } finally {
      this.checking--;
    }
    if ("error" in answer) return { checked: false, reason: answer.error };
    const result = answer.result as DeckCheckResult;
    if (result.checked) for (const s of result.slides) s.screenshot = asBuffer(s.screenshot);
    return result;
  }

  /**
   * Resolves when a check is handed to the process (at once while one is under way): start-up work on
   * the service's own thread can wait for the moment that thread has nothing to do but wait for the
   * browser (createApp loads Temporal's SDK then, on a fresh data dir whose seed publishes a deck).
   */
  whenChecking(): Promise<void> {
    if (this.checking > 0) return Promise.resolve();
    return new Promise((resolve) => this.checkWaiters.push(resolve));
  }

  /** Stops the process (its browser with it); later checks answer unchecked. Safe to call twice. */
  async close(): Promise<void> {
    this.closed = true;
    await this.stopChild("The deck checker is shut down");
  }

  /** The child's pid while it runs (for tests). */
  get pid(): number | undefined {
    return this.child?.pid;
  }

  private request(message: { op: "warm" } | { op: "check"; deck: DeckInput }): Promise<Answer> {
    if (this.closed) return Promise.resolve({ error: "The deck checker is shut down" });
    clearTimeout(this.idleTimer);
    let child: ChildProcess;
    try {
      child = this.child ?? this.start();
    } catch (err) {
      return Promise.resolve({ error: `The deck-check process could not be started: ${(err as Error).message}` });
    }
    const id = this.nextId++;
    return new Promise<Answer>((resolve) => {
      this.pending.set(id, {
        child,
        settle: (answer) => {
          this.pending.delete(id);
          if (this.pending.size === 0) {
            clearTimeout(this.watchdog);
            this.scheduleIdleStop();
          }
          resolve(answer);
        },
      });
      this.armWatchdog(child);
      child.send({ id, ...message } satisfies DeckCheckRequest, (err) => {
        if (err) this.pending.get(id)?.settle({ error: `The deck-check process could not be reached: ${err.message}` });
      });
    });
  }

  /**
   * (Re)arms the watchdog: the child must say something (an answer or a log line) every `answerMs`
   * while requests are pending, else it is stopped ({@link DeckCheckProcess.stopChild}) and they are
   * answered unchecked. Queued checks keep it alive: each check in the child ends within its own timeout.
   */
  private armWatchdog(child: ChildProcess): void {
    clearTimeout(this.watchdog);
    this.watchdog = setTimeout(() => {
      if (this.child !== child) return;
      const reason = `The deck-check process said nothing for ${this.answerMs} ms and was stopped`;
      this.log(`[deck-check] ${reason}`);
      void this.stopChild(reason);
    }, this.answerMs);
  }

  /** @throws Error when the process cannot be forked at all (`fork` throws synchronously, e.g. EAGAIN) */
  private start(): ChildProcess {
    // from source the child needs tsx's loader (resolved from the package root); compiled, plain node.
    // V8 favours size over speed there: the child mostly waits on Chromium (RSS once warm 142 → 114 MB,
    // the check's time unchanged: test/bench/startup.ts prints it)
    const child = fork(CHILD_ENTRY, [JSON.stringify(this.childOptions)], {
      execArgv: [...(EXT === ".ts" ? ["--import", "tsx"] : []), "--optimize-for-size"],
      cwd: EXT === ".ts" ? path.resolve(HERE, "../..") : undefined,
      serialization: "advanced",
      stdio: ["ignore", "inherit", "inherit", "ipc"],
    });
    this.child = child;
    child.on("message", (message: { log: string } | ({ id: number } & Answer)) => {
      if (this.pending.size > 0) this.armWatchdog(child);
      if ("log" in message) this.log(message.log);
      else this.pending.get(message.id)?.settle(message);
    });
    let ended = false;
    const end = (reason: string) => {
      if (ended) return;
      ended = true;
      if (this.child === child) this.child = undefined;
      const asked = [...this.pending.values()].filter((p) => p.child === child);
      if (asked.length > 0) this.log(`[deck-check] ${reason}`);
      for (const p of asked) p.settle({ error: reason });
    };
    child.on("error", (err) => {
      this.log(`[deck-check] the deck-check process: ${err.message}`);
      // a spawn that failed (EMFILE, ENOENT) emits only 'error': there is no process to exit
      if (child.pid === undefined) end(`The deck-check process could not be started: ${err.message}`);
    });
    child.once("exit", (code, signal) => end(`The deck-check process exited (${signal ?? `code ${code}`}) before it answered`));
    return child;
  }

  private scheduleIdleStop(): void {
    if (this.idleMs <= 0 || !this.child) return;
    clearTimeout(this.idleTimer);
    this.idleTimer = setTimeout(() => {
      if (this.pending.size > 0) return;
      this.log(`[deck-check] no deck checked for ${this.idleMs} ms: stopping the deck-check process and its browser`);
      void this.stopChild("idle");
    }, this.idleMs);
    this.idleTimer.unref();
  }

  /** Asks the child to close its browser and exit; SIGKILL after 10 s. Pending requests answer `reason`. */
  private stopChild(reason: string): Promise<void> {
    clearTimeout(this.idleTimer);
    const child = this.child;
    if (!child) return this.stopping ?? Promise.resolve();
    this.child = undefined;
    for (const p of [...this.pending.values()]) if (p.child === child) p.settle({ error: reason });
    if (child.exitCode !== null || child.signalCode !== null || child.pid === undefined) return Promise.resolve();
    const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
    if (child.connected) child.send({ op: "close" } satisfies DeckCheckRequest, () => undefined);
    else child.kill("SIGTERM");
    const kill = setTimeout(() => child.kill("SIGKILL"), 10_000);
    const stopping = exited.finally(() => {
      clearTimeout(kill);
      if (this.stopping === stopping) this.stopping = undefined;
    });
    this.stopping = stopping;
    return stopping;
  }
}
