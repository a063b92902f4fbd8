/**
 * Runs a pass of work one at a time and coalesces the requests for it: the shape of the durable stream
 * followers (`RuleEngine`, `DatasetProjector`, the event-schedule consumer's reader), which are poked
 * after every stream append and by the recovery timer.
 *
 * - `poke()` when idle starts a run: `pass()` is called, and called again as long as a poke arrived
 *   while the previous pass was running (any number of pokes during one pass cause ONE more pass).
 * - `poke()` during a run only marks it for one more pass. Every poke answers a promise that resolves
 *   when the first pass that *started after it* has ended, not when the run ends: under a steady
 *   stream of pokes a run goes on for as long as they come, and a caller waiting for the whole run
 *   (as the first version did) waited for a quiet moment (a paced load of action runs, each waiting for
 *   the outbox drain, saw ~200 ms sawtooth latencies). So a poker waits for at most the pass in
 *   progress plus its own.
 * - While `stopped()` is true a poke does nothing, and a run ends after the pass in progress.
 * - A pass that throws gives its error to `onError`; the run goes on as after a pass that returned (one
 *   more pass only if poked meanwhile, so a failing pass never spins on its own). `poke()` never rejects.
 *
 * The owner keeps its own stop flag (read through `stopped`) and, to stop, sets it and awaits `idle()`.
 */
export class SerialPass {
  /** The running loop, while there is one (what {@link SerialPass.idle} answers). */
  private running: Promise<void> | undefined;
  /** The pokers waiting for the next pass to start (one shared promise); undefined when nobody asked. */
  private next: { promise: Promise<void>; resolve: () => void } | undefined;

  /**
   * @param pass one pass of work; it may check `stopped` itself to end early
   * @param options `stopped`: whether to stop (read before each pass and at each poke);
   *   `onError`: gets what a pass threw (it must not throw itself)
   */
  constructor(
    private readonly pass: () => Promise<void>,
    private readonly options: { stopped: () => boolean; onError: (err: unknown) => void },
  ) {}

  /** Whether a run is in progress. */
  get busy(): boolean {
    return this.running !== undefined;
  }

  /**
   * Whether the last pass threw (false before the first): an owner that wakes only for some appends
   * wakes for any while this holds, so a failed pass is retried.
   */
  get failed(): boolean {
    return this.lastFailed;
  }
  private lastFailed = false;

  /**
   * Asks for a pass (see the class comment). @returns a promise resolved when a pass started after
   * this call has ended (at once when stopped; also when the owner stops before that pass starts);
   * it never rejects
   */
  poke(): Promise<void> {
    if (this.options.stopped()) return Promise.resolve();
    if (!this.next) {
      let resolve!: () => void;
      const promise = new Promise<void>((r) => (resolve = r));
      this.next = { promise, resolve };
    }
    const asked = this.next.promise;
    // the loop takes `next` before its first pass, so it must exist before the loop starts
    this.running ??= this.run();
    return asked;
  }

  /** Passes until nobody has asked for another; each pass answers the pokes made before it started. */
  private async run(): Promise<void> {
    // start on a later tick: pokes made in the same synchronous step share the first pass
    await Promise.resolve();
    for (;;) {
      const waiting = this.next;
      // checked and cleared in ONE synchronous step: a poke after this starts a new run (with a
      // `.finally` clearing it later, a poke in between would join a run that already ended)
      if (!waiting || this.options.stopped()) {
        this.next = undefined;
        this.running = undefined;
        waiting?.resolve();
        return;
      }
      this.next = undefined;
      try {
        // a pass that throws synchronously is handled like one that rejects
        await this.pass();
        this.lastFailed = false;
      } catch (err) {
        this.lastFailed = true;
        try {
          this.options.onError(err);
        } catch {
          // onError must not throw; if it does, the run still goes on
        }
      }
      waiting.resolve();
    }
  }

  /** Resolves when no run is in progress (immediately if idle). */
  idle(): Promise<void> {
    return this.running ?? Promise.resolve();
  }
}
