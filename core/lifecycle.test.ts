import { describe, expect, it } from "vitest";
import { Lifecycle, shutdownSignals, SIGNAL_REPEAT_MS } from "./lifecycle";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("Lifecycle.after", () => {
  it("calls the function once, after the delay", async () => {
    const lifecycle = new Lifecycle();
    const calls: number[] = [];
    const began = performance.now();
    lifecycle.after(40, () => calls.push(performance.now() - began));
    await sleep(10);
    expect(calls).toEqual([]);
    await sleep(120);
    expect(calls).toHaveLength(1);
    expect(calls[0]).toBeGreaterThanOrEqual(35);
    await lifecycle.stopTimers();
  });

  it("never calls it when the timers stop first", async () => {
    const lifecycle = new Lifecycle();
    let called = false;
    lifecycle.after(30, () => (called = true));
    await lifecycle.stopTimers();
    await sleep(80);
    expect(called).toBe(false);
  });

  it("lets shutdown wait for a call still running, and swallows its rejection", async () => {
    const lifecycle = new Lifecycle();
    const order: string[] = [];
    lifecycle.after(0, async () => {
      order.push("began");
      await sleep(60);
      order.push("ended");
      throw new Error("the callback's own failure");
    });
    await sleep(20);
    expect(order).toEqual(["began"]);
    await lifecycle.stopTimers();
    order.push("stopped");
    expect(order).toEqual(["began", "ended", "stopped"]);
  });
});

describe("shutdownSignals", () => {
  it("answers first, then repeat within the window, then again after it", () => {
    let t = 1_000;
    const classify = shutdownSignals(SIGNAL_REPEAT_MS, () => t);
    expect(classify()).toBe("first");
    t += 33; // npm relaying the Ctrl-C the process group already delivered
    expect(classify()).toBe("repeat");
    t += SIGNAL_REPEAT_MS - 34;
    expect(classify()).toBe("repeat");
    t += 1; // SIGNAL_REPEAT_MS after the first
    expect(classify()).toBe("again");
    t += 5_000;
    expect(classify()).toBe("again");
  });

  it("with a window of 0 takes every later signal as a new one", () => {
    const classify = shutdownSignals(0, () => 0);
    expect(classify()).toBe("first");
    expect(classify()).toBe("again");
  });
});

describe("logUnhandledRejections", () => {
  it("keeps the process running and logs the reason of a promise rejected with no handler (Node alone exits)", async () => {
    const { spawnSync } = await import("node:child_process");
    const script = (install: boolean) =>
      `import { logUnhandledRejections } from ${JSON.stringify(new URL("./lifecycle.ts", import.meta.url).pathname)};` +
      (install ? `logUnhandledRejections({ error: (obj, msg) => console.log("LOGGED", obj.err.message, "|", msg) });` : "") +
      `void Promise.reject(new Error("a stray rejection")); setTimeout(() => console.log("STILL RUNNING"), 100);`;
    const run = (install: boolean) => spawnSync(process.execPath, ["--import", "tsx", "--input-type=module", "--eval", script(install)], { encoding: "utf8", timeout: 30_000 });
    const kept = run(true);
    expect([kept.status, kept.stdout.trim().split("\n")]).toEqual([0, ["LOGGED a stray rejection | a promise rejected with no handler (connector code's stray promise?); the service goes on", "STILL RUNNING"]]);
    const bare = run(false);
    expect([bare.status, bare.stdout.includes("STILL RUNNING")]).toEqual([1, false]);
  });
});
