/**
 * The SDK's webhook signature helpers (core/sdk/signatures.ts) against the providers' own signers:
 * `stripe` (generateTestHeaderString), `@octokit/webhooks-methods` (sign), `standardwebhooks`
 * (Webhook#sign). Slack publishes no signer, so its documented scheme is computed here by hand.
 */
import { createHmac, randomBytes } from "node:crypto";
import { sign as githubSign } from "@octokit/webhooks-methods";
import { Webhook } from "standardwebhooks";
import Stripe from "stripe";
import { describe, expect, it } from "vitest";
import type { WebhookRequest } from "./connector";
import {
  verifyGitHubSignature,
  verifySlackSignature,
  verifyStandardWebhook,
  verifyStripeSignature,
  WebhookVerificationError,
  type WebhookVerificationReason,
} from "./signatures";

/** A fixed clock: 2023-11-14T22:13:20Z, in ms. */
const NOW_MS = 1_700_000_000_000;
const NOW_SEC = NOW_MS / 1000;
const now = () => NOW_MS;

const BODY = JSON.stringify({ id: "evt_1", type: "invoice.paid", data: { object: { id: "in_1", amount_due: 1234 } } });

function request(headers: Record<string, string>, body: string | Uint8Array = BODY): WebhookRequest {
  return {
    method: "POST",
    headers: new Headers(headers),
    rawBody: typeof body === "string" ? new TextEncoder().encode(body) : body,
    url: new URL("http://localhost/api/webhooks/x/y"),
  };
}

/** The body with one byte changed (the "1234" becomes "1235"). */
function alteredBody(body = BODY): Uint8Array {
  const bytes = new TextEncoder().encode(body);
  const i = body.indexOf("1234") + 3;
  bytes[i] = bytes[i]! + 1;
  return bytes;
}

/** Runs `fn` and returns the WebhookVerificationError's reason (fails if it passes or throws something else). */
function reasonOf(fn: () => void): WebhookVerificationReason {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(WebhookVerificationError);
    expect((err as Error).name).toBe("WebhookVerificationError");
    return (err as WebhookVerificationError).reason;
  }
  throw new Error("expected verification to fail, but it passed");
}

describe("verifyStandardWebhook (signed by the standardwebhooks library)", () => {
  const secret = `whsec_${randomBytes(24).toString("base64")}`;
  const other = `whsec_${randomBytes(24).toString("base64")}`;
  const msgId = "msg_2b7Fz1";

  /** Headers as a Standard Webhooks sender sends them; `sign` takes a Date and signs its whole seconds. */
  function signed(opts: { key?: string; ts?: number; body?: string; id?: string } = {}) {
    const ts = opts.ts ?? NOW_SEC;
    const id = opts.id ?? msgId;
    const signature = new Webhook(opts.key ?? secret).sign(id, new Date(ts * 1000), opts.body ?? BODY);
    return { "webhook-id": id, "webhook-timestamp": String(ts), "webhook-signature": signature };
  }

  it("passes a valid delivery", () => {
    const headers = signed();
    expect(headers["webhook-signature"]).toMatch(/^v1,[A-Za-z0-9+/]{43}=$/);
    expect(() => verifyStandardWebhook(request(headers), secret, { now })).not.toThrow();
  });

  it("accepts a secret without the whsec_ prefix (it is base64 too)", () => {
    expect(() => verifyStandardWebhook(request(signed()), secret.slice("whsec_".length), { now })).not.toThrow();
  });

  it("refuses a wrong secret", () => {
    expect(reasonOf(() => verifyStandardWebhook(request(signed()), other, { now }))).toBe("bad_signature");
  });

  it("refuses an altered body (one byte changed)", () => {
    expect(reasonOf(() => verifyStandardWebhook(request(signed(), alteredBody()), secret, { now }))).toBe("bad_signature");
  });

  it("refuses a signature made for another webhook-id", () => {
    const headers = { ...signed({ id: "msg_other" }), "webhook-id": msgId };
    expect(reasonOf(() => verifyStandardWebhook(request(headers), secret, { now }))).toBe("bad_signature");
  });

  it("refuses timestamps beyond the tolerance in both directions and accepts them within it", () => {
    expect(reasonOf(() => verifyStandardWebhook(request(signed({ ts: NOW_SEC - 301 })), secret, { now }))).toBe("timestamp_out_of_tolerance");
    expect(reasonOf(() => verifyStandardWebhook(request(signed({ ts: NOW_SEC + 301 })), secret, { now }))).toBe("timestamp_out_of_tolerance");
    expect(() => verifyStandardWebhook(request(signed({ ts: NOW_SEC - 299 })), secret, { now })).not.toThrow();
    expect(() => verifyStandardWebhook(request(signed({ ts: NOW_SEC + 299 })), secret, { now })).not.toThrow();
    expect(reasonOf(() => verifyStandardWebhook(request(signed({ ts: NOW_SEC - 11 })), secret, { now, toleranceSec: 10 }))).toBe("timestamp_out_of_tolerance");
  });

  it("refuses missing headers", () => {
    for (const name of ["webhook-id", "webhook-timestamp", "webhook-signature"] as const) {
      const headers: Record<string, string> = signed();
      delete headers[name];
      expect(reasonOf(() => verifyStandardWebhook(request(headers), secret, { now }))).toBe("missing_header");
    }
  });

  it("refuses malformed headers", () => {
    const headers = signed();
    expect(reasonOf(() => verifyStandardWebhook(request({ ...headers, "webhook-timestamp": "soon" }), secret, { now }))).toBe("malformed_header");
    expect(reasonOf(() => verifyStandardWebhook(request({ ...headers, "webhook-timestamp": `${NOW_SEC}.5` }), secret, { now }))).toBe("malformed_header");
    expect(reasonOf(() => verifyStandardWebhook(request({ ...headers, "webhook-signature": "garbage" }), secret, { now }))).toBe("malformed_header");
    expect(reasonOf(() => verifyStandardWebhook(request({ ...headers, "webhook-signature": "v1,not*base64!" }), secret, { now }))).toBe("malformed_header");
  });

  it("ignores entries of other versions such as v1a", () => {
    const good = signed()["webhook-signature"].slice("v1,".length);
    // The right digest under another version label must not count.
    expect(reasonOf(() => verifyStandardWebhook(request({ ...signed(), "webhook-signature": `v1a,${good} v2,${good}` }), secret, { now }))).toBe("malformed_header");
    expect(() => verifyStandardWebhook(request({ ...signed(), "webhook-signature": `v1a,${good} v1,${good}` }), secret, { now })).not.toThrow();
  });

  it("fails (without a RangeError) on a v1 signature of the wrong length", () => {
    expect(reasonOf(() => verifyStandardWebhook(request({ ...signed(), "webhook-signature": "v1,AAAA" }), secret, { now }))).toBe("bad_signature");
  });

  it("passes when one of several signatures in the header is valid", () => {
    const wrong = signed({ key: other })["webhook-signature"];
    const right = signed()["webhook-signature"];
    expect(() => verifyStandardWebhook(request({ ...signed(), "webhook-signature": `${wrong} ${right}` }), secret, { now })).not.toThrow();
    expect(reasonOf(() => verifyStandardWebhook(request({ ...signed(), "webhook-signature": `${wrong} ${wrong}` }), secret, { now }))).toBe("bad_signature");
  });

  it("rotates keys: an array of secrets with the right one second passes", () => {
    expect(() => verifyStandardWebhook(request(signed()), [other, secret], { now })).not.toThrow();
    expect(reasonOf(() => verifyStandardWebhook(request(signed()), [other], { now }))).toBe("bad_signature");
  });

  it("refuses empty or non-base64 secrets (fails closed)", () => {
    expect(reasonOf(() => verifyStandardWebhook(request(signed()), "", { now }))).toBe("invalid_secret");
    expect(reasonOf(() => verifyStandardWebhook(request(signed()), "whsec_", { now }))).toBe("invalid_secret");
    expect(reasonOf(() => verifyStandardWebhook(request(signed()), [], { now }))).toBe("invalid_secret");
    expect(reasonOf(() => verifyStandardWebhook(request(signed()), "whsec_not base64!", { now }))).toBe("invalid_secret");
  });
});

describe("verifyStripeSignature (signed by the stripe library)", () => {
  const stripe = new Stripe("sk_test_x");
  const secret = "whsec_test_secret_0123456789abcdef";
  const other = "whsec_test_secret_rotated_fedcba98";

  /** `Stripe-Signature: t=<ts>,v1=<hex>` as Stripe's own test helper builds it. */
  function header(opts: { key?: string; ts?: number; body?: string } = {}): string {
    return stripe.webhooks.generateTestHeaderString({ payload: opts.body ?? BODY, secret: opts.key ?? secret, timestamp: opts.ts ?? NOW_SEC });
  }
  const sig = (h: string) => h.slice(h.indexOf("v1=") + 3);

  it("passes a valid delivery", () => {
    expect(header()).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
    expect(() => verifyStripeSignature(request({ "stripe-signature": header() }), secret, { now })).not.toThrow();
  });

  it("uses the whole whsec_ string as the key (not base64-decoded)", () => {
    const hex = createHmac("sha256", secret).update(`${NOW_SEC}.${BODY}`).digest("hex");
    expect(header()).toBe(`t=${NOW_SEC},v1=${hex}`);
  });

  it("refuses a wrong secret", () => {
    expect(reasonOf(() => verifyStripeSignature(request({ "stripe-signature": header({ key: other }) }), secret, { now }))).toBe("bad_signature");
  });

  it("refuses an altered body (one byte changed)", () => {
    expect(reasonOf(() => verifyStripeSignature(request({ "stripe-signature": header() }, alteredBody()), secret, { now }))).toBe("bad_signature");
  });

  it("refuses a signature whose t= was changed", () => {
    const h = header().replace(`t=${NOW_SEC}`, `t=${NOW_SEC + 1}`);
    expect(reasonOf(() => verifyStripeSignature(request({ "stripe-signature": h }), secret, { now }))).toBe("bad_signature");
  });

  it("refuses timestamps beyond the tolerance in both directions and accepts them within it", () => {
    const at = (ts: number, toleranceSec?: number) => () => verifyStripeSignature(request({ "stripe-signature": header({ ts }) }), secret, { now, toleranceSec });
    expect(reasonOf(at(NOW_SEC - 301))).toBe("timestamp_out_of_tolerance");
    expect(reasonOf(at(NOW_SEC + 301))).toBe("timestamp_out_of_tolerance");
    expect(at(NOW_SEC - 299)).not.toThrow();
    expect(at(NOW_SEC + 299)).not.toThrow();
    expect(at(NOW_SEC - 3000, 3600)).not.toThrow();
    expect(reasonOf(at(NOW_SEC + 61, 60))).toBe("timestamp_out_of_tolerance");
  });

  it("refuses a missing header", () => {
    expect(reasonOf(() => verifyStripeSignature(request({}), secret, { now }))).toBe("missing_header");
    expect(reasonOf(() => verifyStripeSignature(request({ "stripe-signature": "" }), secret, { now }))).toBe("missing_header");
  });

  it("refuses malformed headers", () => {
    const v1 = sig(header());
    for (const h of ["garbage", `v1=${v1}`, `t=,v1=${v1}`, `t=later,v1=${v1}`, `t=${NOW_SEC}`, `t=${NOW_SEC},v1=xyz`, `t=${NOW_SEC},t=${NOW_SEC},v1=${v1}`]) {
      expect(reasonOf(() => verifyStripeSignature(request({ "stripe-signature": h }), secret, { now })), h).toBe("malformed_header");
    }
  });

  it("ignores other schemes such as v0", () => {
    const good = sig(header());
    const bad = sig(header({ key: other }));
    expect(reasonOf(() => verifyStripeSignature(request({ "stripe-signature": `t=${NOW_SEC},v0=${good},v1=${bad}` }), secret, { now }))).toBe("bad_signature");
    expect(() => verifyStripeSignature(request({ "stripe-signature": `t=${NOW_SEC},v1=${good},v0=${bad}` }), secret, { now })).not.toThrow();
  });

  it("passes when one of several v1 signatures is valid (as during a secret roll)", () => {
    const good = sig(header());
    const bad = sig(header({ key: other }));
    expect(() => verifyStripeSignature(request({ "stripe-signature": `t=${NOW_SEC},v1=${bad},v1=${good}` }), secret, { now })).not.toThrow();
    expect(reasonOf(() => verifyStripeSignature(request({ "stripe-signature": `t=${NOW_SEC},v1=${bad},v1=${bad}` }), secret, { now }))).toBe("bad_signature");
  });

  it("rotates keys: an array of secrets with the right one second passes", () => {
    expect(() => verifyStripeSignature(request({ "stripe-signature": header() }), [other, secret], { now })).not.toThrow();
    expect(reasonOf(() => verifyStripeSignature(request({ "stripe-signature": header() }), [other], { now }))).toBe("bad_signature");
  });

  it("refuses empty secrets (fails closed) and a bad toleranceSec", () => {
    expect(reasonOf(() => verifyStripeSignature(request({ "stripe-signature": header() }), "", { now }))).toBe("invalid_secret");
    expect(reasonOf(() => verifyStripeSignature(request({ "stripe-signature": header() }), [secret, ""], { now }))).toBe("invalid_secret");
    expect(() => verifyStripeSignature(request({ "stripe-signature": header() }), secret, { now, toleranceSec: -1 })).toThrow(RangeError);
  });

  it("uses the real clock by default", () => {
    const fresh = stripe.webhooks.generateTestHeaderString({ payload: BODY, secret });
    expect(() => verifyStripeSignature(request({ "stripe-signature": fresh }), secret)).not.toThrow();
  });
});

describe("verifyGitHubSignature (signed by @octokit/webhooks-methods)", () => {
  const secret = "It's a Secret to Everybody";
  const other = "rotated-secret";

  it("passes a valid delivery", async () => {
    const signature = await githubSign(secret, BODY);
    expect(signature).toMatch(/^sha256=[0-9a-f]{64}$/);
    expect(() => verifyGitHubSignature(request({ "x-hub-signature-256": signature }), secret)).not.toThrow();
  });

  it("matches GitHub's documented test vector", () => {
    // https://docs.github.com/en/webhooks/using-webhooks/validating-webhook-deliveries#testing-the-webhook-payload-validation
    const signature = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17";
    expect(() => verifyGitHubSignature(request({ "x-hub-signature-256": signature }, "Hello, World!"), secret)).not.toThrow();
  });

  it("refuses a wrong secret", async () => {
    const signature = await githubSign(other, BODY);
    expect(reasonOf(() => verifyGitHubSignature(request({ "x-hub-signature-256": signature }), secret))).toBe("bad_signature");
  });

  it("refuses an altered body (one byte changed)", async () => {
    const signature = await githubSign(secret, BODY);
    expect(reasonOf(() => verifyGitHubSignature(request({ "x-hub-signature-256": signature }, alteredBody()), secret))).toBe("bad_signature");
  });

  it("refuses a missing header (the legacy SHA-1 X-Hub-Signature is not enough)", () => {
    const sha1 = `sha1=${createHmac("sha1", secret).update(BODY).digest("hex")}`;
    expect(reasonOf(() => verifyGitHubSignature(request({}), secret))).toBe("missing_header");
    expect(reasonOf(() => verifyGitHubSignature(request({ "x-hub-signature": sha1 }), secret))).toBe("missing_header");
  });

  it("refuses malformed headers", async () => {
    const hex = (await githubSign(secret, BODY)).slice("sha256=".length);
    for (const h of [hex, `sha1=${hex}`, `sha256=${hex.slice(2)}`, `sha256=${hex}00`, "sha256=zz"]) {
      expect(reasonOf(() => verifyGitHubSignature(request({ "x-hub-signature-256": h }), secret)), h).toBe("malformed_header");
    }
  });

  it("rotates keys: an array of secrets with the right one second passes", async () => {
    const signature = await githubSign(secret, BODY);
    expect(() => verifyGitHubSignature(request({ "x-hub-signature-256": signature }), [other, secret])).not.toThrow();
    expect(reasonOf(() => verifyGitHubSignature(request({ "x-hub-signature-256": signature }), [other]))).toBe("bad_signature");
  });

  it("refuses an empty secret (fails closed even against a signature made with an empty key)", () => {
    const emptyKey = `sha256=${createHmac("sha256", "").update(BODY).digest("hex")}`;
    expect(reasonOf(() => verifyGitHubSignature(request({ "x-hub-signature-256": emptyKey }), ""))).toBe("invalid_secret");
  });
});

describe("verifySlackSignature (Slack's documented scheme, computed by hand)", () => {
  const secret = "8f742231b10e8888abcd99yyyzzz85a5";
  const other = "rotated0signing0secret0000000000";
  const FORM = "token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&command=%2Fweather&text=94070&trigger_id=13345224609.738474920.8088930838d88f008e0";

  /**
   * Slack signs `v0:<X-Slack-Request-Timestamp>:<raw body>` with HMAC-SHA256 keyed by the Signing
   * Secret and sends `X-Slack-Signature: v0=<hex>`; there is no official signer library.
   * https://api.slack.com/authentication/verifying-requests-from-slack
   */
  function signed(opts: { key?: string; ts?: number; body?: string } = {}) {
    const ts = String(opts.ts ?? NOW_SEC);
    const hex = createHmac("sha256", opts.key ?? secret).update(`v0:${ts}:${opts.body ?? FORM}`).digest("hex");
    return { "x-slack-request-timestamp": ts, "x-slack-signature": `v0=${hex}` };
  }

  it("passes a valid delivery", () => {
    expect(() => verifySlackSignature(request(signed(), FORM), secret, { now })).not.toThrow();
  });

  it("matches Slack's documented example request", () => {
    // The worked example of https://api.slack.com/authentication/verifying-requests-from-slack
    const body =
      "token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c";
    const headers = { "x-slack-request-timestamp": "1531420618", "x-slack-signature": "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503" };
    expect(signed({ ts: 1531420618, body })).toEqual(headers);
    expect(() => verifySlackSignature(request(headers, body), secret, { now: () => 1531420618_000 })).not.toThrow();
  });

  it("refuses a wrong secret", () => {
    expect(reasonOf(() => verifySlackSignature(request(signed({ key: other }), FORM), secret, { now }))).toBe("bad_signature");
  });

  it("refuses an altered body (one byte changed)", () => {
    const bytes = new TextEncoder().encode(FORM);
    bytes[FORM.indexOf("94070") + 4] = "1".charCodeAt(0);
    expect(reasonOf(() => verifySlackSignature(request(signed(), bytes), secret, { now }))).toBe("bad_signature");
  });

  it("refuses a signature replayed under another timestamp", () => {
    const headers = { ...signed(), "x-slack-request-timestamp": String(NOW_SEC - 1) };
    expect(reasonOf(() => verifySlackSignature(request(headers, FORM), secret, { now }))).toBe("bad_signature");
  });

  it("refuses timestamps beyond the tolerance in both directions and accepts them within it", () => {
    const at = (ts: number, toleranceSec?: number) => () => verifySlackSignature(request(signed({ ts }), FORM), secret, { now, toleranceSec });
    expect(reasonOf(at(NOW_SEC - 301))).toBe("timestamp_out_of_tolerance");
    expect(reasonOf(at(NOW_SEC + 301))).toBe("timestamp_out_of_tolerance");
    expect(at(NOW_SEC - 300)).not.toThrow();
    expect(at(NOW_SEC + 300)).not.toThrow();
    expect(reasonOf(at(NOW_SEC - 31, 30))).toBe("timestamp_out_of_tolerance");
  });

  it("refuses missing headers", () => {
    for (const name of ["x-slack-request-timestamp", "x-slack-signature"] as const) {
      const headers: Record<string, string> = signed();
      delete headers[name];
      expect(reasonOf(() => verifySlackSignature(request(headers, FORM), secret, { now }))).toBe("missing_header");
    }
  });

  it("refuses malformed headers", () => {
    const headers = signed();
    const hex = headers["x-slack-signature"].slice(3);
    expect(reasonOf(() => verifySlackSignature(request({ ...headers, "x-slack-request-timestamp": "yesterday" }, FORM), secret, { now }))).toBe("malformed_header");
    expect(reasonOf(() => verifySlackSignature(request({ ...headers, "x-slack-signature": hex }, FORM), secret, { now }))).toBe("malformed_header");
    expect(reasonOf(() => verifySlackSignature(request({ ...headers, "x-slack-signature": `v1=${hex}` }, FORM), secret, { now }))).toBe("malformed_header");
    expect(reasonOf(() => verifySlackSignature(request({ ...headers, "x-slack-signature": "v0=abc" }, FORM), secret, { now }))).toBe("malformed_header");
  });

  it("rotates keys: an array of secrets with the right one second passes", () => {
    expect(() => verifySlackSignature(request(signed(), FORM), [other, secret], { now })).not.toThrow();
    expect(reasonOf(() => verifySlackSignature(request(signed(), FORM), [other], { now }))).toBe("bad_signature");
  });

  it("refuses an empty signing secret (fails closed)", () => {
    expect(reasonOf(() => verifySlackSignature(request(signed({ key: "" }), FORM), "", { now }))).toBe("invalid_secret");
  });
});

describe("WebhookVerificationError", () => {
  it("is an Error with a name, a reason and a message", () => {
    const err = new WebhookVerificationError("bad_signature", "nope");
    expect(err).toBeInstanceOf(Error);
    expect(err.name).toBe("WebhookVerificationError");
    expect(err.reason).toBe("bad_signature");
    expect(err.message).toBe("nope");
  });

  it("is, with the four helpers, all the module exports at run time", async () => {
    const sdk = await import("./signatures");
    expect(Object.keys(sdk).sort()).toEqual(["WebhookVerificationError", "verifyGitHubSignature", "verifySlackSignature", "verifyStandardWebhook", "verifyStripeSignature"]);
  });
});
