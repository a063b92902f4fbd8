/**
 * Deck checks in their own process (spec 4.3; issue 15, memory): the real child process (forked through
 * tsx from source) and Debian's Chromium, installed by the test setup when missing. What the rules find
 * is deck-check.test.ts's business; this file checks the process around them: answers come back whole
 * (screenshots as Buffers), the process stops when idle and starts again, a crash or a kill answers
 * unchecked and the next check starts a new one, and the process does not outlive the service.
 */
import { spawn } from "node:child_process";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureChromium } from "../../test/setup/chromium";
import { cleanDeck } from "../../test/fixtures/decks";
import { childPids, processRuns as alive } from "../../test/helpers-fs";
import { eventually } from "../../test/helpers";
import { DeckCheckProcess } from "./deck-check-process";

const ROOT = path.resolve(import.meta.dirname, "../..");
const log = (line: string) => process.stderr.write(`${line}\n`);
const opened: DeckCheckProcess[] = [];

/** A DeckCheckProcess closed after the file's tests. */
function open(options: ConstructorParameters<typeof DeckCheckProcess>[0] = {}): DeckCheckProcess {
  const decks = new DeckCheckProcess({ log, ...options });
  opened.push(decks);
  return decks;
}

beforeAll(() => ensureChromium(log));
afterAll(async () => {
  await Promise.all(opened.map((d) => d.close()));
});

describe("DeckCheckProcess", () => {
  it("checks a deck in a child process and hands the screenshots back as Buffers", async () => {
    const decks = open({ idleMs: 0 });
    expect(decks.pid).toBeUndefined(); // nothing starts before the first use
    const result = await decks.check({ files: cleanDeck() });
    if (!result.checked) throw new Error(`expected a checked deck, got: ${result.reason}`);
    expect(result.slides.map((s) => s.number)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    expect(result.slides.flatMap((s) => s.warnings)).toEqual([]);
    for (const s of result.slides) {
      expect(Buffer.isBuffer(s.screenshot)).toBe(true);
      expect(s.screenshot.subarray(1, 4).toString("latin1")).toBe("PNG");
      expect(s.screenshot.readUInt32BE(16)).toBe(1280);
    }
    expect(decks.pid).toBeGreaterThan(0);
    expect(decks.pid).not.toBe(process.pid);
    const pid = decks.pid!;
    await decks.close();
    expect(alive(pid)).toBe(false);
    expect(await decks.check({ files: cleanDeck() })).toEqual({ checked: false, reason: expect.stringContaining("shut down") });
  });

  it("whenChecking() resolves once a check is handed to the process (a warm() is none), at once while one runs", async () => {
    const decks = open({ idleMs: 0 });
    const seen: string[] = [];
    const waiting = decks.whenChecking().then(() => seen.push("first"));
    expect(await decks.warm()).toEqual({ ok: true });
    await new Promise((r) => setTimeout(r, 50));
    expect(seen).toEqual([]);
    const checking = decks.check({ files: cleanDeck() });
    await waiting;
    await decks.whenChecking().then(() => seen.push("during"));
    expect(seen).toEqual(["first", "during"]);
    expect((await checking).checked).toBe(true);
    void decks.whenChecking().then(() => seen.push("after"));
    await new Promise((r) => setTimeout(r, 50));
    expect(seen).toEqual(["first", "during"]);
  });

  it("stops the process after idleMs without a check, and starts a new one for the next check", async () => {
    const lines: string[] = [];
    const decks = open({ idleMs: 300, log: (line) => lines.push(line) });
    expect(await decks.warm()).toEqual({ ok: true });
    const first = decks.pid!;
    expect(alive(first)).toBe(true);
    await eventually(async () => !alive(first), 15_000, 50);
    expect(decks.pid).toBeUndefined();
    expect(lines.some((l) => l.includes("no deck checked for 300 ms"))).toBe(true);
    const again = await decks.check({ files: cleanDeck(2) });
    expect(again.checked).toBe(true);
    expect(decks.pid).not.toBe(first);
  });

  it("answers unchecked when the process dies during a check, and starts a new one for the next", async () => {
    const decks = open({ idleMs: 0 });
    expect(await decks.warm()).toEqual({ ok: true });
    const pid = decks.pid!;
    const checking = decks.check({ files: cleanDeck(20) });
    await new Promise((r) => setTimeout(r, 200)); // the check is under way (20 slides take seconds)
    process.kill(pid, "SIGKILL");
    expect(await checking).toEqual({ checked: false, reason: expect.stringMatching(/deck-check process exited \(SIGKILL\)/) });
    const next = await decks.check({ files: cleanDeck(2) });
    expect(next.checked).toBe(true);
    expect(decks.pid).not.toBe(pid);
  });

  it("answers the child's reason when there is no browser", async () => {
    const decks = open({ executablePath: "/nonexistent/chromium" });
    expect(await decks.check({ files: cleanDeck() })).toEqual({ checked: false, reason: expect.stringContaining("/nonexistent/chromium is missing") });
    expect(await decks.warm()).toEqual({ ok: false, reason: expect.stringContaining("/nonexistent/chromium is missing") });
  });

  it("does not outlive the service: a service killed with SIGKILL takes the process and its Chromium with it", async () => {
    const script = `
      import { DeckCheckProcess } from ${JSON.stringify(path.join(ROOT, "core/artifacts/deck-check-process.ts"))};
      const decks = new DeckCheckProcess({ idleMs: 0 });
      const warm = await decks.warm();
      process.stdout.write(JSON.stringify({ warm, pid: decks.pid }) + "\\n");
      setInterval(() => undefined, 1000);
    `;
    const service = spawn(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], { cwd: ROOT, stdio: ["ignore", "pipe", "inherit"] });
    try {
      const line = await new Promise<string>((resolve, reject) => {
        let out = "";
        service.stdout.on("data", (d) => {
          out += d;
          if (out.includes("\n")) resolve(out.split("\n")[0]!);
        });
        service.once("exit", (code) => reject(new Error(`the service exited with ${code} before it answered`)));
      });
      const { warm, pid } = JSON.parse(line) as { warm: { ok: boolean }; pid: number };
      expect(warm).toEqual({ ok: true });
      // the child's Chromium: a process whose parent is the child
      const browsers = () => childPids(pid);
      expect(browsers().length).toBeGreaterThan(0);
      const chromium = browsers();
      service.kill("SIGKILL");
      await eventually(async () => !alive(pid), 15_000, 50);
      await eventually(async () => chromium.every((p) => !alive(p)), 15_000, 50);
    } finally {
      service.kill("SIGKILL");
    }
  });
});
