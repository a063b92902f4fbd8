/** SerialPass: one pass at a time, pokes coalesced into one more pass, stop, errors (no timers: passes are released by hand). */
import { describe, expect, it } from "vitest";
import { SerialPass } from "./serial-pass";

/** A pass whose calls block until released, one by one. */
function gatedPass() {
  const gates: Array<{ release: () => void; fail: (err: Error) => void }> = [];
  let started = 0;
  let inFlight = 0;
  let maxInFlight = 0;
  const pass = async () => {
    started++;
    inFlight++;
    maxInFlight = Math.max(maxInFlight, inFlight);
    try {
      await new Promise<void>((release, fail) => gates.push({ release, fail }));
    } finally {
      inFlight--;
    }
  };
  const settle = async () => {
    for (let i = 0; i < 5; i++) await Promise.resolve();
  };
  return {
    pass,
    get started() {
      return started;
    },
    get maxInFlight() {
      return maxInFlight;
    },
    /** Releases the oldest waiting pass (it returns, or throws `err`), then lets the runner move on. */
    async finish(err?: Error) {
      const gate = gates.shift();
      if (!gate) throw new Error("no pass is waiting");
      if (err) gate.fail(err);
      else gate.release();
      await settle();
    },
    settle,
  };
}

describe("SerialPass", () => {
  it("runs one pass per poke when idle, and resolves the poke when it is done", async () => {
    const g = gatedPass();
    const runner = new SerialPass(g.pass, { stopped: () => false, onError: () => undefined });
    let done = false;
    void runner.poke().then(() => (done = true));
    await g.settle();
    expect(g.started).toBe(1);
    expect(runner.busy).toBe(true);
    await g.finish();
    expect(done).toBe(true);
    expect(runner.busy).toBe(false);
    expect(g.started).toBe(1);
    void runner.poke();
    await g.settle();
    expect(g.started).toBe(2);
    await g.finish();
    expect(runner.busy).toBe(false);
  });

  it("coalesces any number of pokes during a pass into one more pass, never two at once", async () => {
    const g = gatedPass();
    const runner = new SerialPass(g.pass, { stopped: () => false, onError: () => undefined });
    const first = runner.poke();
    await g.settle();
    const during = [runner.poke(), runner.poke(), runner.poke()];
    for (const p of during) expect(p).toBe(during[0]); // one promise: the next pass's
    expect(during[0]).not.toBe(first);
    let firstDone = false;
    let duringDone = false;
    void first.then(() => (firstDone = true));
    void during[0]!.then(() => (duringDone = true));
    await g.finish();
    expect(g.started).toBe(2); // one more pass for the three pokes
    expect(firstDone).toBe(true); // its pass is over: it does not wait for the run
    expect(duringDone).toBe(false); // theirs is the pass running now
    await g.finish();
    expect(duringDone).toBe(true);
    expect(g.started).toBe(2);
    expect(g.maxInFlight).toBe(1);
    expect(runner.busy).toBe(false);
  });

  it("answers each poke after the pass that started after it, even while pokes keep coming (no waiting for a quiet moment)", async () => {
    const g = gatedPass();
    const runner = new SerialPass(g.pass, { stopped: () => false, onError: () => undefined });
    const done: number[] = [];
    void runner.poke().then(() => done.push(0));
    await g.settle();
    for (let i = 1; i <= 20; i++) {
      // a poke during every pass: the run never has a quiet moment
      void runner.poke().then(() => done.push(i));
      await g.finish();
      // the poke made during the pass before is answered as soon as the pass it asked for has ended
      expect(done).toEqual(Array.from({ length: i }, (_, k) => k));
    }
    expect(runner.busy).toBe(true);
    await g.finish();
    expect(done).toHaveLength(21);
    expect(runner.busy).toBe(false);
    expect(g.started).toBe(21);
  });

  it("does nothing while stopped, and ends a run after the pass in progress once stopped", async () => {
    const g = gatedPass();
    let stopped = true;
    const runner = new SerialPass(g.pass, { stopped: () => stopped, onError: () => undefined });
    await runner.poke();
    expect(g.started).toBe(0);
    stopped = false;
    const run = runner.poke();
    await g.settle();
    void runner.poke(); // asks for one more pass...
    stopped = true; // ...but the owner stops first
    const idle = runner.idle();
    await g.finish();
    await run;
    await idle;
    expect(g.started).toBe(1);
    expect(runner.busy).toBe(false);
  });

  it("hands a failing pass's error to onError, never rejects, and runs again only when poked meanwhile", async () => {
    const g = gatedPass();
    const errors: unknown[] = [];
    const runner = new SerialPass(g.pass, { stopped: () => false, onError: (err) => errors.push(err) });
    const alone = runner.poke();
    await g.settle();
    await g.finish(new Error("boom 1"));
    await expect(alone).resolves.toBeUndefined();
    expect(errors.map((e) => (e as Error).message)).toEqual(["boom 1"]);
    expect(g.started).toBe(1); // no spinning on its own

    const run = runner.poke();
    await g.settle();
    void runner.poke();
    await g.finish(new Error("boom 2"));
    expect(g.started).toBe(2 + 1); // poked during the failing pass: one more pass
    await g.finish();
    await expect(run).resolves.toBeUndefined();
    expect(errors.map((e) => (e as Error).message)).toEqual(["boom 1", "boom 2"]);
  });

  it("says whether the last pass failed, until a pass succeeds", async () => {
    const g = gatedPass();
    const runner = new SerialPass(g.pass, { stopped: () => false, onError: () => undefined });
    expect(runner.failed).toBe(false);
    void runner.poke();
    await g.settle();
    await g.finish(new Error("boom"));
    expect(runner.failed).toBe(true);
    void runner.poke();
    await g.settle();
    expect(runner.failed).toBe(true); // still the last pass's outcome while the next one runs
    await g.finish();
    expect(runner.failed).toBe(false);
  });

  it("loses no poke made as a run ends (the run is marked over in the same step as its last check)", async () => {
    // a poke `hops` microtasks after the first pass returns: whether it lands in the pass's tail, just
    // after the run's last check, or after the run, it must lead to a second pass
    for (let hops = 0; hops <= 8; hops++) {
      let passes = 0;
      const runner: SerialPass = new SerialPass(
        async () => {
          passes++;
          if (passes === 1) {
            let p = Promise.resolve();
            for (let i = 0; i < hops; i++) p = p.then(() => undefined);
            void p.then(() => runner.poke());
          }
        },
        { stopped: () => false, onError: () => undefined },
      );
      await runner.poke();
      for (let i = 0; i < 20; i++) await Promise.resolve();
      await runner.idle();
      expect({ hops, passes }).toEqual({ hops, passes: 2 });
      expect(runner.busy).toBe(false);
    }
  });

  it("survives a pass that throws synchronously", async () => {
    const errors: unknown[] = [];
    let calls = 0;
    const runner = new SerialPass(
      (() => {
        calls++;
        throw new Error("sync");
      }) as unknown as () => Promise<void>,
      { stopped: () => false, onError: (err) => errors.push(err) },
    );
    await runner.poke();
    expect(runner.busy).toBe(false);
    await runner.poke(); // a new run starts: it was not left marked busy
    expect(calls).toBe(2);
    expect(errors).toHaveLength(2);
  });

  it("keeps going when onError itself throws", async () => {
    const g = gatedPass();
    const runner = new SerialPass(g.pass, {
      stopped: () => false,
      onError: () => {
        throw new Error("logger down");
      },
    });
    const run = runner.poke();
    await g.settle();
    await g.finish(new Error("boom"));
    await expect(run).resolves.toBeUndefined();
    expect(runner.busy).toBe(false);
  });
});
