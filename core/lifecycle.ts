/**
 * Process lifetime: in-flight request tracking and ordered hooks (Fastify's `onReady` / `onClose`,
 * in plugin form). Plugins register `ready` and `shutdown` hooks; shutdown hooks run in reverse order
 * of registration, each awaited.
 */
export class Lifecycle {
  private requests = 0;
  private idleWaiters: Array<() => void> = [];
  private readonly hooks = { ready: [] as Array<() => unknown>, shutdown: [] as Array<() => unknown> };
  shuttingDown = false;

  /** Registers a hook: `ready` after every plugin is set up and the server listens; `shutdown` on close. */
  hook(name: "ready" | "shutdown", fn: () => unknown): void {
    this.hooks[name].push(fn);
  }

  /** Runs the hooks of `name` (shutdown ones in reverse), awaiting each; errors go to `onError`. */
  async run(name: "ready" | "shutdown", onError: (err: unknown) => void): Promise<void> {
    const list = name === "shutdown" ? [...this.hooks.shutdown].reverse() : this.hooks.ready;
    for (const fn of list) {
      try {
        await fn();
      } catch (err) {
        onError(err);
      }
    }
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
