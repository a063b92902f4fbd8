/**
 * Runs a pass of work one at a time and coalesces the requests for it: the shape of the durable stream
 * followers (`RuleEngine`, `DatasetProjector`, the event-schedule consumer's reader), which are poked
 * after every stream append and by the recovery timer.
 *
 * - `poke()` when idle starts a run: `pass()` is called, and called again as long as a poke arrived
 *   while the previous pass was running (any number of pokes during one pass cause ONE more pass).
 * - `poke()` during a run only marks it for one more pass and answers the run's promise.
 * - While `stopped()` is true a poke does nothing, and a run ends after the pass in progress.
 * - A pass that throws gives its error to `onError`; the run goes on as after a pass that returned (one
 *   more pass only if poked meanwhile, so a failing pass never spins on its own). `poke()` never rejects.
 *
 * The owner keeps its own stop flag (read through `stopped`) and, to stop, sets it and awaits `idle()`.
 */
export class SerialPass {
  private running: Promise<void> | undefined;
  private again = false;

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
   * Asks for a pass (see the class comment). @returns the run that will include a pass started after
   * this call (resolved at once when stopped); it never rejects
   */
  poke(): Promise<void> {
    if (this.options.stopped()) return Promise.resolve();
    if (this.running) {
      this.again = true;
      return this.running;
    }
    // a pass that throws synchronously still answers a promise, so `run` always awaits before it ends
    const pass = (): Promise<void> => {
      try {
        return this.pass();
      } catch (err) {
        return Promise.reject(err);
      }
    };
    const run = async () => {
      for (;;) {
        this.again = false;
        try {
          await pass();
        } catch (err) {
          try {
            this.options.onError(err);
          } catch {
            // onError must not throw; if it does, the run still goes on
          }
        }
        // checked and cleared in ONE synchronous step: a poke after this starts a new run (with a
        // `.finally` clearing it later, a poke in between would join a run that already ended)
        if (!this.again || this.options.stopped()) {
          this.running = undefined;
          return;
        }
      }
    };
    // `run` awaits its first pass before it can clear `running`, so this assignment comes first
    this.running = run();
    return this.running;
  }

  /** Resolves when no run is in progress (at once when idle); never rejects. */
  idle(): Promise<void> {
    return this.running ?? Promise.resolve();
  }
}
