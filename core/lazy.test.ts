import { describe, expect, it } from "vitest";
import { lazily } from "./lazy";

describe("lazily", () => {
  it("loads once for every caller, concurrent or later", async () => {
    let loads = 0;
    const get = lazily(async () => ++loads);
    expect(await Promise.all([get(), get(), get()])).toEqual([1, 1, 1]);
    expect(await get()).toBe(1);
    expect(loads).toBe(1);
  });

  it("forgets a failed load: the next call tries again", async () => {
    let loads = 0;
    const get = lazily(async () => {
      if (++loads === 1) throw new Error("not yet");
      return loads;
    });
    await expect(get()).rejects.toThrow("not yet");
    expect(await get()).toBe(2);
    expect(await get()).toBe(2);
  });
});
