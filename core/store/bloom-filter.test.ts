/** Bloom filters (core/store/bloom-filter.ts): never a false "not added", and false positives near the rate they are sized for. */
import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { BloomFilter, ScalableBloomFilter } from "./bloom-filter";

describe("BloomFilter", () => {
  it("answers true for every text added and false for most others, near its rate at its capacity", () => {
    const filter = new BloomFilter(20_000, 0.01);
    for (let i = 0; i < 20_000; i++) filter.add(`standard-webhooks\u0000events\u0000msg_${i}`);
    for (let i = 0; i < 20_000; i++) expect(filter.mightHave(`standard-webhooks\u0000events\u0000msg_${i}`)).toBe(true);
    let positives = 0;
    for (let i = 0; i < 100_000; i++) if (filter.mightHave(`standard-webhooks\u0000events\u0000other_${i}`)) positives++;
    expect(positives / 100_000).toBeLessThan(0.02);
    expect(filter.bytes).toBeLessThan(20_000 * 1.3); // ~9.6 bits per text at 1 %
  });

  it("never forgets a text (property: any texts, unicode included)", () => {
    fc.assert(
      fc.property(fc.array(fc.string({ unit: "grapheme" }), { maxLength: 200 }), (texts) => {
        const filter = new BloomFilter(64, 0.01);
        for (const t of texts) filter.add(t);
        return texts.every((t) => filter.mightHave(t));
      }),
    );
  });
});

describe("ScalableBloomFilter", () => {
  it("grows by filters twice as large, keeps every text, and stays under its rate times its filters", () => {
    const filter = new ScalableBloomFilter(1_000, 0.01);
    for (let i = 0; i < 50_000; i++) filter.add(`key-${i}`);
    const { size, filters, bytes } = filter.stats();
    expect(size).toBe(50_000);
    expect(filters).toBe(6); // 1k + 2k + 4k + 8k + 16k + 32k ≥ 50k
    expect(bytes).toBeLessThan(63_000 * 1.3);
    for (let i = 0; i < 50_000; i++) expect(filter.mightHave(`key-${i}`)).toBe(true);
    let positives = 0;
    for (let i = 0; i < 100_000; i++) if (filter.mightHave(`absent-${i}`)) positives++;
    expect(positives / 100_000).toBeLessThan(0.01 * filters); // each filter's rate at its capacity, summed
  });
});
