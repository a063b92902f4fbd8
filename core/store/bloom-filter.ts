/**
 * Bloom filters over strings: "certainly not added" or "maybe added". The webhook deliveries keep one of
 * the idempotency keys stored (core/runtime/webhooks.ts) so that a new key needs no read of SQLite.
 */

/** Two independent 32-bit hashes of `text`'s UTF-16 code units (FNV-1a, and FNV-1a from another basis with a murmur3 finish). */
function hashes(text: string): [number, number] {
  let a = 0x811c9dc5;
  let b = 0x01000193 ^ text.length;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    a = Math.imul(a ^ c, 0x01000193);
    b = Math.imul(b ^ c, 0x5bd1e995);
    b ^= b >>> 15;
  }
  b ^= b >>> 16;
  b = Math.imul(b, 0x85ebca6b);
  b ^= b >>> 13;
  b = Math.imul(b, 0xc2b2ae35);
  b ^= b >>> 16;
  return [a >>> 0, (b | 1) >>> 0];
}

/**
 * A Bloom filter sized for `capacity` texts at a false-positive rate of `falsePositiveRate` once that
 * many were added (bits m = -n·ln p / ln²2, probes k = m/n · ln 2, by double hashing). Never answers
 * false for a text added.
 */
export class BloomFilter {
  private readonly bits: Uint32Array;
  private readonly m: number;
  private readonly k: number;
  /** Texts added (a text added twice counts twice). */
  size = 0;

  /**
   * @param capacity texts it is sized for (≥ 1)
   * @param falsePositiveRate in (0, 1), at `capacity` texts
   */
  constructor(
    readonly capacity: number,
    falsePositiveRate: number,
  ) {
    this.m = Math.max(32, Math.ceil((-capacity * Math.log(falsePositiveRate)) / Math.LN2 ** 2));
    this.k = Math.max(1, Math.round((this.m / capacity) * Math.LN2));
    this.bits = new Uint32Array(Math.ceil(this.m / 32));
  }

  /** Bytes its bits take. */
  get bytes(): number {
    return this.bits.byteLength;
  }

  add(text: string): void {
    const [h1, h2] = hashes(text);
    for (let i = 0; i < this.k; i++) {
      const bit = (h1 + i * h2) % this.m;
      this.bits[bit >>> 5]! |= 1 << (bit & 31);
    }
    this.size++;
  }

  /** False when `text` was certainly never added; true when it may have been. */
  mightHave(text: string): boolean {
    const [h1, h2] = hashes(text);
    for (let i = 0; i < this.k; i++) {
      const bit = (h1 + i * h2) % this.m;
      if ((this.bits[bit >>> 5]! & (1 << (bit & 31))) === 0) return false;
    }
    return true;
  }
}

/**
 * A scalable Bloom filter (Almeida et al., 2007): Bloom filters of growing capacity, each twice the one
 * before, texts added to the newest until it holds its capacity. Memory grows with what was added
 * (about 1.2 bytes per text at the default rate), and the false-positive rate stays under
 * `falsePositiveRate` × the number of filters (each one's at its capacity).
 */
export class ScalableBloomFilter {
  private readonly filters: BloomFilter[];

  /**
   * @param initialCapacity the first filter's capacity (texts)
   * @param falsePositiveRate each filter's, at its capacity
   */
  constructor(
    initialCapacity = 65_536,
    private readonly falsePositiveRate = 0.01,
  ) {
    this.filters = [new BloomFilter(initialCapacity, falsePositiveRate)];
  }

  add(text: string): void {
    let newest = this.filters[this.filters.length - 1]!;
    if (newest.size >= newest.capacity) this.filters.push((newest = new BloomFilter(newest.capacity * 2, this.falsePositiveRate)));
    newest.add(text);
  }

  /** False when `text` was certainly never added; true when it may have been. */
  mightHave(text: string): boolean {
    for (const filter of this.filters) if (filter.mightHave(text)) return true;
    return false;
  }

  /** Texts added, and the bytes the filters' bits take. */
  stats(): { size: number; bytes: number; filters: number } {
    return { size: this.filters.reduce((n, f) => n + f.size, 0), bytes: this.filters.reduce((n, f) => n + f.bytes, 0), filters: this.filters.length };
  }
}
