/** The lifecycle hook names, in the order they run (Fastify's `onReady`, `preClose`, `onClose`). */
export type LifecycleHook = "ready" | "preClose" | "close";

/** The reason a handler given up on at shutdown sees (`ctx.signal.reason.message`). */
export const SHUTTING_DOWN = "the server is shutting down";

/**
 * Process lifetime: in-flight request tracking, ordered hooks and the service timers. Services and
 * plugins register here instead of being stopped by hand:
 *
 * - `ready`: after every plugin is set up and the server listens (in registration order);
 * - `preClose`: shutdown has begun; stop accepting new work (in registration order);
 * - `close`: the server no longer listens and in-flight requests are done (or timed out); release
 *   resources, in REVERSE registration order, so what was opened first closes last.
 *
 * Timers registered with {@link Lifecycle.every} and {@link Lifecycle.after} stop before the `close` hooks run.
 */
export class Lifecycle {
  private requests = 0;
  private idleWaiters: Array<() => void> = [];
  private readonly hooks: Record<LifecycleHook, Array<() => unknown>> = { ready: [], preClose: [], close: [] };
  private readonly timers = new Set<NodeJS.Timeout>();
  /** Timer callbacks still running (a prune, a collection pass): shutdown waits for them. */
  private readonly running = new Set<Promise<unknown>>();
  private readonly timedOut = new AbortController();
  shuttingDown = false;

  /** Registers a hook (see the class comment for when each runs). */
  hook(name: LifecycleHook, fn: () => unknown): void {
    this.hooks[name].push(fn);
  }

  /**
   * Runs the hooks of `name` (`close` ones in reverse), awaiting each; a hook's error goes to
   * `onError` and the next hook still runs.
   */
  async run(name: LifecycleHook, onError: (err: unknown) => void): Promise<void> {
    const list = name === "close" ? [...this.hooks.close].reverse() : this.hooks[name];
    for (const fn of list) {
      try {
        await fn();
      } catch (err) {
        onError(err);
      }
    }
  }

  /**
   * Calls `fn` every `ms` milliseconds until shutdown (an unref'd timer: it never keeps the process
   * alive); a pass still running when the next is due is not started twice. Errors are the callback's
   * to handle (a rejection is swallowed).
   */
  every(ms: number, fn: () => unknown): void {
    let pass: Promise<unknown> | undefined;
    const timer = setInterval(() => {
      pass ??= this.track(fn).finally(() => (pass = undefined));
    }, ms);
    timer.unref();
    this.timers.add(timer);
  }

  /**
   * Calls `fn` once, `ms` milliseconds from now, unless shutdown stopped the timers first (an unref'd
   * timer; shutdown waits for the call if it is running). Errors are the callback's to handle.
   */
  after(ms: number, fn: () => unknown): void {
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      void this.track(fn);
    }, ms);
    timer.unref();
    this.timers.add(timer);
  }

  /** Runs a timer's callback as a pass shutdown waits for; its rejection is swallowed. */
  private track(fn: () => unknown): Promise<unknown> {
    const pass: Promise<unknown> = Promise.resolve()
      .then(fn)
      .catch(() => undefined)
      .finally(() => this.running.delete(pass));
    this.running.add(pass);
    return pass;
  }

  /** Stops every timer registered with {@link Lifecycle.every} or {@link Lifecycle.after} and waits for passes still running. */
  async stopTimers(): Promise<void> {
    for (const t of this.timers) clearInterval(t);
    this.timers.clear();
    await Promise.all([...this.running]);
  }

  /**
   * Aborted when shutdown stops waiting for in-flight requests (`SVC_SHUTDOWN_TIMEOUT_MS` passed):
   * long-running handlers watch it to give up. Its reason is an Error whose message is
   * {@link SHUTTING_DOWN}, as for an event schedule's attempt given up on at shutdown.
   */
  get closeTimeout(): AbortSignal {
    return this.timedOut.signal;
  }

  /** Signals {@link Lifecycle.closeTimeout}. */
  abortInFlight(): void {
    this.timedOut.abort(new Error(SHUTTING_DOWN));
  }

  /** Marks a request as started; call the returned function when it ends. */
  enter(): () => void {
    this.requests++;
    let done = false;
    return () => {
      if (done) return;
      done = true;
      this.requests--;
      if (this.requests === 0) for (const w of this.idleWaiters.splice(0)) w();
    };
  }

  get inFlight(): number {
    return this.requests;
  }

  /** Resolves when no request is in flight, or after `timeoutMs`; answers whether it went idle. */
  idle(timeoutMs: number): Promise<boolean> {
    if (this.requests === 0) return Promise.resolve(true);
    return new Promise((resolve) => {
      const timer = setTimeout(() => resolve(false), timeoutMs);
      this.idleWaiters.push(() => {
        clearTimeout(timer);
        resolve(true);
      });
    });
  }
}

/**
 * How long after a first SIGINT or SIGTERM another one counts as the same request delivered again, in
 * ms. A terminal's Ctrl-C reaches every process of its foreground process group, and npm relays the
 * signal it got to its child (the service: `npm start` execs it) as well, so the service receives one
 * Ctrl-C twice within a few ms. Taken as a second signal, that repeat cut every graceful shutdown under
 * `npm start` short.
 */
export const SIGNAL_REPEAT_MS = 1000;

/** What a shutdown signal asks for: the first one a graceful stop, a later one to exit now. */
export type ShutdownSignal = "first" | "repeat" | "again";

/**
 * Classifies a process's shutdown signals (SIGINT, SIGTERM) in the order they arrive: `first`, then
 * `repeat` for any within `repeatMs` of the first (the same request delivered again: see
 * {@link SIGNAL_REPEAT_MS}; the caller ignores it), then `again` for any later one (the caller exits
 * at once). Used by `installSignalHandlers` (core/app.ts) and by the sandbox's start before the app is up.
 * @param repeatMs the window after the first signal, ms (default {@link SIGNAL_REPEAT_MS})
 * @param now the clock, ms (monotonic; tests pass their own)
 * @returns a function to call with each signal as it arrives
 */
export function shutdownSignals(repeatMs: number = SIGNAL_REPEAT_MS, now: () => number = () => performance.now()): () => ShutdownSignal {
  let first: number | undefined;
  return () => {
    const at = now();
    if (first === undefined) {
      first = at;
      return "first";
    }
    return at - first < repeatMs ? "repeat" : "again";
  };
}

/**
 * Keeps a service process running when a promise rejects with no handler (Node's default since 15 is to
 * exit): connector code's stray promise (`void somePromise()` that rejects after the handler returned)
 * would otherwise take every run, delivery and socket of the service down with it. Each such rejection
 * is logged at error level with its reason (`err`) instead. An exception thrown synchronously outside a
 * handler (a timer's callback) still ends the process, as Node decides: state after it is unknown.
 * Called once by a service's entry point (`sandbox/main.ts`); adding it twice logs twice.
 * @param log where the rejections go (the service's logger)
 */
export function logUnhandledRejections(log: { error(obj: object, msg: string): void }): void {
  process.on("unhandledRejection", (reason) => log.error({ err: reason }, "a promise rejected with no handler (connector code's stray promise?); the service goes on"));
}
