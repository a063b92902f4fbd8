import { ApiError } from "../errors";

/** One key's failed sign-ins in a row: how many, and when the last one was (ms since the epoch). */
interface Failures {
  count: number;
  last: number;
}

/**
 * Slows down password guessing at sign-in (spec 5; OWASP's throttling rather than a lockout, which an
 * attacker could use to keep a user out): failed sign-ins are counted per identity and per client
 * address. Past a key's free failures in a row ({@link SignInThrottle.FREE_FAILURES_PER_IDENTITY},
 * {@link SignInThrottle.FREE_FAILURES_PER_ADDRESS}: offices share addresses), the next attempt must
 * wait 1 s after the last failure, then 2 s, 4 s, … up to {@link SignInThrottle.MAX_WAIT_MS}; one that
 * comes sooner is refused with 429 `too_many_requests` and `Retry-After`, without its password being
 * checked. A successful sign-in clears its identity's and address's counts; a key is forgotten
 * {@link SignInThrottle.FORGET_MS} after its last failure. Held in memory (one service process per
 * data dir), at most {@link SignInThrottle.MAX_KEYS} keys (the oldest go first).
 */
export class SignInThrottle {
  static readonly FREE_FAILURES_PER_IDENTITY = 5;
  static readonly FREE_FAILURES_PER_ADDRESS = 20;
  static readonly MAX_WAIT_MS = 5 * 60_000;
  static readonly FORGET_MS = 15 * 60_000;
  static readonly MAX_KEYS = 10_000;
  /** By key (`identity:<id>`, `address:<ip>`), least recently failed first. */
  private readonly failures = new Map<string, Failures>();

  /** @param now the clock (ms since the epoch; tests pass their own) */
  constructor(private readonly now: () => number = Date.now) {}

  /**
   * Refuses an attempt that comes too soon after its identity's or address's last failures.
   * @param address the client's IP address, when known
   * @throws {ApiError} too_many_requests (429) with `Retry-After` (whole seconds) and `details.retryAfterSeconds`
   */
  check(identity: string, address: string | undefined): void {
    const wait = Math.max(this.waitMs(`identity:${identity}`, SignInThrottle.FREE_FAILURES_PER_IDENTITY), address ? this.waitMs(`address:${address}`, SignInThrottle.FREE_FAILURES_PER_ADDRESS) : 0);
    if (wait <= 0) return;
    const seconds = Math.ceil(wait / 1000);
    throw new ApiError("too_many_requests", `Too many failed sign-ins for this identity or from this address; try again in ${seconds} s`, { retryAfterSeconds: seconds }, { "retry-after": String(seconds) });
  }

  /** Counts a failed sign-in against the identity and the address. */
  failed(identity: string, address: string | undefined): void {
    this.count(`identity:${identity}`);
    if (address) this.count(`address:${address}`);
  }

  /** Clears the identity's and the address's counts after a successful sign-in. */
  succeeded(identity: string, address: string | undefined): void {
    this.failures.delete(`identity:${identity}`);
    if (address) this.failures.delete(`address:${address}`);
  }

  /** How long `key` must still wait (ms; 0 or less: it may try now). */
  private waitMs(key: string, free: number): number {
    const f = this.failures.get(key);
    if (!f || f.count < free) return 0;
    const backoff = Math.min(1000 * 2 ** (f.count - free), SignInThrottle.MAX_WAIT_MS);
    return f.last + backoff - this.now();
  }

  private count(key: string): void {
    const now = this.now();
    const before = this.failures.get(key);
    const count = before && now - before.last < SignInThrottle.FORGET_MS ? before.count + 1 : 1;
    // re-inserted: the map stays in order of last failure, oldest first
    this.failures.delete(key);
    this.failures.set(key, { count, last: now });
    for (const [k, f] of this.failures) {
      if (this.failures.size <= SignInThrottle.MAX_KEYS && now - f.last < SignInThrottle.FORGET_MS) break;
      this.failures.delete(k);
    }
  }
}
