import { describe, expect, it } from "vitest";
import { isValid, decodeTime } from "ulid";
import { newId, nowIso } from "./ids";

describe("newId", () => {
  it("answers prefixed ULIDs, unique and strictly increasing in this process, timed now", () => {
    const before = Date.now();
    const ids = Array.from({ length: 20_000 }, () => newId("evt"));
    const after = Date.now();
    expect(new Set(ids).size).toBe(ids.length);
    for (let i = 1; i < ids.length; i++) expect(ids[i]! > ids[i - 1]!).toBe(true);
    for (const id of [ids[0]!, ids.at(-1)!]) {
      expect(id).toMatch(/^evt_[0-9A-HJKMNP-TV-Z]{26}$/);
      expect(isValid(id.slice(4))).toBe(true);
      const t = decodeTime(id.slice(4));
      expect(t).toBeGreaterThanOrEqual(before);
      expect(t).toBeLessThanOrEqual(after);
    }
  });

  it("draws the random part from all 32 symbols, about evenly (the pooled PRNG spans [0, 1))", async () => {
    // one id per millisecond: each draws a fresh random part (within a millisecond ulid only increments)
    const counts = new Map<string, number>();
    for (let i = 0; i < 40; i++) {
      const id = newId("x");
      for (const c of id.slice(2 + 10)) counts.set(c, (counts.get(c) ?? 0) + 1);
      await new Promise((r) => setTimeout(r, 2));
    }
    // 40 ids x 16 symbols = 640 draws over 32 symbols (20 expected each)
    expect(counts.size).toBe(32);
    expect(Math.max(...counts.values())).toBeLessThan(60);
  });
});

describe("nowIso", () => {
  it("answers the current millisecond as ISO 8601 UTC, a new one as soon as the clock moves", async () => {
    const before = Date.now();
    const first = nowIso();
    expect(first).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
    expect(Date.parse(first)).toBeGreaterThanOrEqual(before);
    expect(Date.parse(first)).toBeLessThanOrEqual(Date.now());
    await new Promise((r) => setTimeout(r, 3));
    const later = nowIso();
    expect(Date.parse(later)).toBeGreaterThan(Date.parse(first));
    expect(Date.parse(later)).toBeLessThanOrEqual(Date.now());
  });
});
