// executionIdOf (core/runtime/webhook-runs.ts): a keyed delivery's execution id must never change across
// versions (a provider's retry after an upgrade must land on the same execution), so it is checked here
// against the first implementation, kept as the reference: the digest's first 34 hex digits as a BigInt,
// its low 130 bits in 26 Crockford base32 digits.
import { createHash, randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { attemptError, executionIdOf, storedAttemptError } from "./webhook-runs";

const CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
function reference(connectorId: string, webhookId: string, key: string): string {
  let bits = BigInt(`0x${createHash("sha256").update(`${connectorId}\u0000${webhookId}\u0000${key}`).digest("hex").slice(0, 34)}`);
  let digits = "";
  for (let i = 0; i < 26; i++, bits >>= 5n) digits = CROCKFORD[Number(bits & 31n)] + digits;
  return `exec_${digits}`;
}

describe("executionIdOf", () => {
  it("answers the same id as the first implementation, for 5,000 random and a few edge keys", () => {
    const keys = ["", "a", "msg_2Lh9Jq", "ключ", "\u0000", "x".repeat(300), ...Array.from({ length: 5000 }, () => randomBytes(1 + (randomBytes(1)[0]! % 40)).toString("base64url"))];
    for (const key of keys) expect(executionIdOf("standard-webhooks", "events", key)).toBe(reference("standard-webhooks", "events", key));
  });

  it("is exec_ and 26 Crockford digits, and differs between connectors, webhooks and keys", () => {
    const id = executionIdOf("c", "w", "k");
    expect(id).toMatch(/^exec_[0-9A-HJKMNP-TV-Z]{26}$/);
    expect(new Set([id, executionIdOf("c2", "w", "k"), executionIdOf("c", "w2", "k"), executionIdOf("c", "w", "k2")]).size).toBe(4);
  });
});

describe("an attempt's error (README \"Run errors\")", () => {
  it("reads the code it was stored with, and gives attempts stored before codes interrupted or failed", () => {
    expect(attemptError(storedAttemptError("invalid_answer", "its status 99 is not a whole number in 200-599"))).toEqual({ code: "invalid_answer", message: "its status 99 is not a whole number in 200-599" });
    // as older versions stored them: { message } alone
    expect(attemptError(JSON.stringify({ message: "interrupted (the process stopped during the attempt)" }))).toEqual({ code: "interrupted", message: "interrupted (the process stopped during the attempt)" });
    expect(attemptError(JSON.stringify({ message: "boom" }))).toEqual({ code: "failed", message: "boom" });
  });
});
