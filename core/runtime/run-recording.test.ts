/** RunRecording (core/runtime/handler.ts): when a run's record is committed on its own. */
import { describe, expect, it } from "vitest";
import { RunRecording } from "./handler";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("RunRecording", () => {
  it("leaves the record to the completion when the handler ends before afterMs, and never writes it", async () => {
    let writes = 0;
    const recording = new RunRecording(async () => void writes++, 30);
    expect(await recording.ended()).toBe(false);
    await sleep(60);
    expect(writes).toBe(0);
  });

  it("writes the record once afterMs passed, and ended() waits for that commit", async () => {
    let writes = 0;
    let committed = false;
    const recording = new RunRecording(async () => {
      writes++;
      await sleep(20);
      committed = true;
    }, 10);
    await sleep(15);
    expect(writes).toBe(1);
    expect(await recording.ended()).toBe(true);
    expect(committed).toBe(true);
    expect(writes).toBe(1);
  });

  it("now() writes at once and only once (a store's beforeStore, then the timer)", async () => {
    let writes = 0;
    const recording = new RunRecording(async () => void writes++, 20);
    await Promise.all([recording.now(), recording.now()]);
    expect(writes).toBe(1);
    await sleep(40);
    expect(writes).toBe(1);
    expect(await recording.ended()).toBe(true);
  });

  it("afterMs 0 writes before the handler starts", () => {
    let writes = 0;
    const recording = new RunRecording(async () => void writes++, 0);
    expect(writes).toBe(1);
    return expect(recording.ended()).resolves.toBe(true);
  });

  it("ended() throws the record's own commit error", async () => {
    const recording = new RunRecording(() => Promise.reject(new Error("disk full")), 0);
    await expect(recording.now()).rejects.toThrow("disk full");
    await expect(recording.ended()).rejects.toThrow("disk full");
  });
});
