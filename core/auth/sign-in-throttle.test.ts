import { describe, expect, it } from "vitest";
import { SignInThrottle } from "./sign-in-throttle";
import { isApiError } from "../errors";

/** What `check` answers: undefined when the attempt may go on, else the 429's Retry-After seconds. */
function retryAfter(throttle: SignInThrottle, identity: string, address?: string): number | undefined {
  try {
    throttle.check(identity, address);
    return undefined;
  } catch (err) {
    if (!isApiError(err) || err.code !== "too_many_requests") throw err;
    return Number(err.headers!["retry-after"]);
  }
}

describe("SignInThrottle", () => {
  it("lets an identity's first failures through, then makes it wait 1 s, 2 s, 4 s … after its last failure, capped at 5 min", () => {
    let now = 1_000_000;
    const throttle = new SignInThrottle(() => now);
    for (let i = 0; i < SignInThrottle.FREE_FAILURES_PER_IDENTITY; i++) {
      expect(retryAfter(throttle, "alice"), `attempt ${i + 1}`).toBeUndefined();
      throttle.failed("alice", undefined);
    }
    expect(retryAfter(throttle, "alice")).toBe(1);
    expect(retryAfter(throttle, "bob")).toBeUndefined(); // another identity is not held up
    now += 1000;
    expect(retryAfter(throttle, "alice")).toBeUndefined();
    throttle.failed("alice", undefined);
    expect(retryAfter(throttle, "alice")).toBe(2);
    for (let i = 0; i < 20; i++) throttle.failed("alice", undefined);
    expect(retryAfter(throttle, "alice")).toBe(300);
    // a success clears it; so does a quarter of an hour without failures
    throttle.succeeded("alice", undefined);
    expect(retryAfter(throttle, "alice")).toBeUndefined();
    for (let i = 0; i < 10; i++) throttle.failed("carol", undefined);
    now += SignInThrottle.FORGET_MS;
    throttle.failed("carol", undefined);
    expect(retryAfter(throttle, "carol")).toBeUndefined();
  });

  it("counts an address's failures across identities, with more free failures (offices share an address)", () => {
    let now = 0;
    const throttle = new SignInThrottle(() => now);
    for (let i = 0; i < SignInThrottle.FREE_FAILURES_PER_ADDRESS; i++) {
      expect(retryAfter(throttle, `user-${i}`, "203.0.113.7")).toBeUndefined();
      throttle.failed(`user-${i}`, "203.0.113.7");
    }
    expect(retryAfter(throttle, "someone-new", "203.0.113.7")).toBe(1);
    expect(retryAfter(throttle, "someone-new", "198.51.100.1")).toBeUndefined();
    now += 60_000;
    expect(retryAfter(throttle, "someone-new", "203.0.113.7")).toBeUndefined();
  });

  it("keeps at most MAX_KEYS keys, forgetting the oldest", () => {
    const throttle = new SignInThrottle(() => 0);
    for (let i = 0; i < 6; i++) throttle.failed("first", undefined);
    for (let i = 0; i < SignInThrottle.MAX_KEYS; i++) throttle.failed(`spray-${i}`, undefined);
    expect(retryAfter(throttle, "first")).toBeUndefined();
    expect((throttle as unknown as { failures: Map<string, unknown> }).failures.size).toBe(SignInThrottle.MAX_KEYS);
  });
});
