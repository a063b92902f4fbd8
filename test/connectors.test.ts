/**
 * The provider connectors (connectors/stripe, github, slack, standard-webhooks) as units: their
 * `verify`, `idempotencyKey` and `handle` called directly, with requests signed by the providers' own
 * libraries and a fake handler context that records writes and logs. (HTTP delivery is covered by the
 * end-to-end webhook tests.)
 */
import { createHmac, randomBytes } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { sign as githubSign } from "@octokit/webhooks-methods";
import { Webhook } from "standardwebhooks";
import Stripe from "stripe";
import * as v from "valibot";
import { describe, expect, it } from "vitest";
import type { LinkKey, WebhookContext, WebhookDefinition, WebhookRequest, WebhookResponse } from "../core/sdk";
import { WebhookVerificationError } from "../core/sdk";
import { githubConnector } from "../connectors/github";
import { slackConnector } from "../connectors/slack";
import { standardWebhooksConnector } from "../connectors/standard-webhooks";
import { stripeConnector } from "../connectors/stripe";

const here = path.dirname(fileURLToPath(import.meta.url));

function request(headers: Record<string, string>, body: string): WebhookRequest {
  return { method: "POST", headers: new Headers(headers), rawBody: new TextEncoder().encode(body), url: new URL("http://localhost/api/webhooks/x/y") };
}

type LogLine = { level: "debug" | "info" | "warn" | "error"; obj: object | string; msg?: string };

/** A handler context whose writes and logs are recorded in arrays; reads find nothing. */
function fakeContext<B>(body: B, req: WebhookRequest) {
  const upserts: Array<{ objectTypeId: string; primaryId: string; properties: Record<string, unknown> }> = [];
  const links: Array<LinkKey & { properties?: Record<string, unknown> }> = [];
  const other: unknown[] = [];
  const logs: LogLine[] = [];
  const logAt = (level: LogLine["level"]) => (obj: object | string, msg?: string) => void logs.push({ level, obj, msg });
  const ctx: WebhookContext<B> = {
    body,
    request: req,
    delivery: { runId: "whrun_test", executionId: "exec_test", attempt: 1, connectorId: "test", webhookId: "events", idempotencyKey: null },
    log: { debug: logAt("debug"), info: logAt("info"), warn: logAt("warn"), error: logAt("error") },
    objects: {
      upsert: (objectTypeId, primaryId, properties) => void upserts.push({ objectTypeId, primaryId, properties }),
      update: (...args) => void other.push(["objects.update", ...args]),
      delete: (...args) => void other.push(["objects.delete", ...args]),
      get: async () => undefined,
      query: async () => ({ data: [] }),
    },
    links: { upsert: (link) => void links.push(link), delete: (link) => void other.push(["links.delete", link]) },
    telemetry: { append: (point) => void other.push(["telemetry.append", point]) },
    events: { read: async () => [], latestCursor: async () => undefined, append: async () => void other.push(["events.append"]) },
    workflows: { start: async () => ({ runId: "wfrun_test" }) },
  };
  return { ctx, upserts, links, other, logs };
}

/** Runs a webhook's handler on `body` and returns its answer with what it recorded. */
async function runHandler<B>(hook: WebhookDefinition<B>, body: B, req: WebhookRequest) {
  const fake = fakeContext(body, req);
  const response: WebhookResponse | void = await hook.handle(fake.ctx);
  return { response, ...fake };
}

function verificationReason(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(WebhookVerificationError);
    return (err as WebhookVerificationError).reason;
  }
  throw new Error("expected verify to throw");
}

describe("connectors import only the public SDK and valibot, and export only a factory (and types)", () => {
  const connectors = fs.readdirSync(path.join(here, "..", "connectors"), { withFileTypes: true }).filter((d) => d.isDirectory()).map((d) => d.name);
  const factoryOf = (dir: string) => `${dir.replace(/-(\w)/g, (_m, c: string) => c.toUpperCase())}Connector`;
  it("covers every connector folder", () => {
    expect(connectors).toEqual(expect.arrayContaining(["diagnostics", "github", "slack", "standard-webhooks", "stripe"]));
  });
  it.each(connectors.map((dir) => [dir, factoryOf(dir)]))("connectors/%s", async (dir, factory) => {
    const source = fs.readFileSync(path.join(here, "..", "connectors", dir, "index.ts"), "utf8");
    const specifiers = [...source.matchAll(/\bfrom\s+["']([^"']+)["']/g)].map((m) => m[1]);
    expect(specifiers.length).toBeGreaterThan(0);
    for (const s of specifiers) expect(["../../core/sdk", "valibot"]).toContain(s);
    expect(fs.existsSync(path.join(here, "..", "connectors", dir, "README.md"))).toBe(true);
    const mod = await import(`../connectors/${dir}/index.ts`);
    expect(Object.keys(mod)).toEqual([factory]);
  });
});

describe("stripeConnector", () => {
  const secret = "whsec_test_0123456789abcdefghijklmnop";
  const stripe = new Stripe("sk_test_x");
  const connector = stripeConnector({ secret });
  const hook = connector.webhooks.events;

  const invoice = {
    id: "in_1Q2w3E",
    object: "invoice",
    number: "ACME-0042",
    customer: "cus_R2d2",
    customer_name: "Acme Corp",
    customer_email: "billing@acme.test",
    amount_due: 1234,
    currency: "usd",
    status: "paid",
    due_date: 1_700_000_000, // 2023-11-14T22:13:20Z
    lines: { object: "list", data: [] },
  };
  const event = (type: string, object: Record<string, unknown> = invoice) => ({ id: "evt_1AbC", object: "event", type, api_version: "2025-01-27.acacia", created: 1_700_000_000, livemode: false, data: { object } });
  const signedRequest = (payload: string, opts: { key?: string; timestamp?: number } = {}) =>
    request({ "content-type": "application/json", "stripe-signature": stripe.webhooks.generateTestHeaderString({ payload, secret: opts.key ?? secret, timestamp: opts.timestamp }) }, payload);

  it("declares connector stripe, webhook events, json with a schema", () => {
    expect(connector.id).toBe("stripe");
    expect(Object.keys(connector.webhooks)).toEqual(["events"]);
    expect(hook.format).toBe("json");
    expect(hook.schema).toBeDefined();
  });

  it("refuses to be built without a secret", () => {
    expect(() => stripeConnector({ secret: "" })).toThrow(/STRIPE_WEBHOOK_SECRET/);
    expect(() => stripeConnector({ secret: [] })).toThrow(/secret/);
  });

  it("verifies Stripe's signature, with rotation and the configured tolerance", () => {
    const payload = JSON.stringify(event("invoice.paid"));
    expect(() => hook.verify!(signedRequest(payload))).not.toThrow();
    expect(verificationReason(() => hook.verify!(signedRequest(payload, { key: "whsec_other" })))).toBe("bad_signature");
    expect(() => stripeConnector({ secret: ["whsec_old", secret] }).webhooks.events.verify!(signedRequest(payload))).not.toThrow();
    const stale = signedRequest(payload, { timestamp: Math.floor(Date.now() / 1000) - 1800 });
    expect(verificationReason(() => hook.verify!(stale))).toBe("timestamp_out_of_tolerance");
    expect(() => stripeConnector({ secret, toleranceSec: 3600 }).webhooks.events.verify!(stale)).not.toThrow();
  });

  it("validates the event envelope loosely (extra fields kept) and refuses other shapes", () => {
    const parsed = v.parse(hook.schema!, event("invoice.paid"));
    expect(parsed).toMatchObject({ id: "evt_1AbC", type: "invoice.paid", livemode: false, data: { object: { id: "in_1Q2w3E" } } });
    expect(v.safeParse(hook.schema!, { type: "invoice.paid", data: { object: {} } }).success).toBe(false);
    expect(v.safeParse(hook.schema!, { id: "evt_1", type: "invoice.paid", data: {} }).success).toBe(false);
  });

  it("keys deliveries by the Stripe event id", () => {
    const body = v.parse(hook.schema!, event("invoice.paid"));
    expect(hook.idempotencyKey!(request({}, ""), body)).toBe("evt_1AbC");
  });

  it("maps invoice.paid onto customer and invoice upserts and the billedTo link", async () => {
    const body = v.parse(hook.schema!, event("invoice.paid"));
    const { response, upserts, links, other } = await runHandler(hook, body, request({}, JSON.stringify(body)));
    expect(response).toBeUndefined();
    expect(upserts).toEqual([
      { objectTypeId: "customer", primaryId: "cus_R2d2", properties: { name: "Acme Corp", email: "billing@acme.test" } },
      { objectTypeId: "invoice", primaryId: "in_1Q2w3E", properties: { number: "ACME-0042", customerId: "cus_R2d2", amount: 12.34, currency: "USD", status: "paid", dueDate: "2023-11-14" } },
    ]);
    expect(links).toEqual([{ sourceTypeId: "invoice", sourceId: "in_1Q2w3E", linkId: "billedTo", targetTypeId: "customer", targetId: "cus_R2d2" }]);
    expect(other).toEqual([]);
  });

  it("falls back to ids when name and number are null, and omits a null email and due date", async () => {
    const draft = { ...invoice, number: null, customer_name: null, customer_email: null, due_date: null, status: "draft", amount_due: 0 };
    const body = v.parse(hook.schema!, event("invoice.created", draft));
    const { upserts, links } = await runHandler(hook, body, request({}, ""));
    expect(upserts).toEqual([
      { objectTypeId: "customer", primaryId: "cus_R2d2", properties: { name: "cus_R2d2" } },
      { objectTypeId: "invoice", primaryId: "in_1Q2w3E", properties: { number: "in_1Q2w3E", customerId: "cus_R2d2", amount: 0, currency: "USD", status: "draft" } },
    ]);
    expect(links).toHaveLength(1);
  });

  it("converts amounts of zero-decimal and three-decimal currencies by their minor unit", async () => {
    const yen = await runHandler(hook, v.parse(hook.schema!, event("invoice.finalized", { ...invoice, amount_due: 500, currency: "jpy" })), request({}, ""));
    expect(yen.upserts[1]!.properties).toMatchObject({ amount: 500, currency: "JPY" });
    const dinar = await runHandler(hook, v.parse(hook.schema!, event("invoice.finalized", { ...invoice, amount_due: 5120, currency: "kwd" })), request({}, ""));
    expect(dinar.upserts[1]!.properties).toMatchObject({ amount: 5.12, currency: "KWD" });
  });

  it("logs other events at debug and answers nothing (202)", async () => {
    for (const type of ["customer.created", "payment_intent.succeeded", "invoice.upcoming"]) {
      const body = v.parse(hook.schema!, event(type, type === "invoice.upcoming" ? { ...invoice, id: undefined } : { id: "x" }));
      const { response, upserts, links, logs } = await runHandler(hook, body, request({}, ""));
      expect(response).toBeUndefined();
      expect(upserts).toEqual([]);
      expect(links).toEqual([]);
      expect(logs).toEqual([{ level: "debug", obj: { eventId: "evt_1AbC", type }, msg: "stripe event ignored" }]);
    }
  });

  it("fails the run on an invoice event whose object cannot be mapped", async () => {
    const body = v.parse(hook.schema!, event("invoice.paid", { id: "in_1", customer: "cus_1" }));
    await expect(runHandler(hook, body, request({}, ""))).rejects.toThrow(/evt_1AbC.*not a mappable invoice/);
  });
});

describe("githubConnector", () => {
  const secret = "gh-webhook-secret";
  const connector = githubConnector({ secret });
  const hook = connector.webhooks.events;
  const payload = JSON.stringify({ action: "opened", repository: { id: 1, full_name: "octo-org/hello-world" }, sender: { login: "octocat" } });
  const headers = (signature: string) => ({
    "content-type": "application/json",
    "x-github-event": "issues",
    "x-github-delivery": "72d3162e-cc78-11e3-81ab-4c9367dc0958",
    "x-hub-signature-256": signature,
  });

  it("declares connector github, webhook events, json", () => {
    expect(connector.id).toBe("github");
    expect(Object.keys(connector.webhooks)).toEqual(["events"]);
    expect(hook.format).toBe("json");
    expect(() => githubConnector({ secret: "" })).toThrow(/GITHUB_WEBHOOK_SECRET/);
  });

  it("verifies X-Hub-Signature-256 signed by @octokit/webhooks-methods, with rotation", async () => {
    const signature = await githubSign(secret, payload);
    expect(() => hook.verify!(request(headers(signature), payload))).not.toThrow();
    expect(verificationReason(() => hook.verify!(request(headers(`sha256=${"0".repeat(64)}`), payload)))).toBe("bad_signature");
    const rotated = githubConnector({ secret: ["new-secret", secret] }).webhooks.events;
    expect(() => rotated.verify!(request(headers(signature), payload))).not.toThrow();
  });

  it("keys deliveries by X-GitHub-Delivery, none without it", () => {
    expect(hook.idempotencyKey!(request(headers("x"), payload), JSON.parse(payload))).toBe("72d3162e-cc78-11e3-81ab-4c9367dc0958");
    expect(hook.idempotencyKey!(request({}, payload), JSON.parse(payload))).toBeNull();
  });

  it("logs the event, its action and the repository, writes nothing, answers nothing (202)", async () => {
    const { response, upserts, links, logs } = await runHandler(hook, JSON.parse(payload), request(headers("x"), payload));
    expect(response).toBeUndefined();
    expect(upserts).toEqual([]);
    expect(links).toEqual([]);
    expect(logs).toEqual([{ level: "info", obj: { event: "issues", action: "opened", repository: "octo-org/hello-world", delivery: "72d3162e-cc78-11e3-81ab-4c9367dc0958" }, msg: "github event" }]);
  });

  it("handles a payload without a repository (organization events, ping of an app)", async () => {
    const { logs } = await runHandler(hook, { zen: "Keep it logically awesome.", hook_id: 1 }, request({ "x-github-event": "ping" }, "{}"));
    expect(logs[0]!.obj).toMatchObject({ event: "ping", repository: undefined });
  });
});

describe("slackConnector", () => {
  const signingSecret = "8f742231b10e8888abcd99yyyzzz85a5";
  const connector = slackConnector({ signingSecret });
  const hook = connector.webhooks.events;

  /** Slack's documented signature: `v0=` hex HMAC-SHA256 of `v0:<ts>:<body>` (https://api.slack.com/authentication/verifying-requests-from-slack). */
  function slackRequest(body: string, contentType: string, extra: Record<string, string> = {}, key = signingSecret): WebhookRequest {
    const ts = String(Math.floor(Date.now() / 1000));
    const signature = `v0=${createHmac("sha256", key).update(`v0:${ts}:${body}`).digest("hex")}`;
    return request({ "content-type": contentType, "x-slack-request-timestamp": ts, "x-slack-signature": signature, ...extra }, body);
  }

  const challenge = JSON.stringify({ token: "Jhj5dZrVaK7ZwHHjRyZWjbDl", challenge: "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P", type: "url_verification" });
  const eventCallback = JSON.stringify({
    token: "XXYYZZ",
    team_id: "T123ABC456",
    api_app_id: "A123ABC456",
    event: { type: "app_mention", user: "U123ABC456", text: "<@U0LAN0Z89> hi", ts: "1515449522.000016", channel: "C123ABC456" },
    type: "event_callback",
    event_id: "Ev123ABC456",
    event_time: 1515449522,
  });
  const slashCommand = new URLSearchParams({
    token: "gIkuvaNzQIHg97ATvDxqgjtO",
    team_id: "T0001",
    channel_id: "C2147483705",
    user_id: "U2147483697",
    command: "/weather",
    text: "94070",
    response_url: "https://hooks.slack.com/commands/1234/5678",
    trigger_id: "13345224609.738474920.8088930838d88f008e0",
  }).toString();
  const interaction = new URLSearchParams({
    payload: JSON.stringify({ type: "block_actions", trigger_id: "12466734323.1395872398.9e6f9e2d1b", user: { id: "U123" }, actions: [{ action_id: "approve" }] }),
  }).toString();

  it("declares connector slack, webhook events, text", () => {
    expect(connector.id).toBe("slack");
    expect(Object.keys(connector.webhooks)).toEqual(["events"]);
    expect(hook.format).toBe("text");
    expect(() => slackConnector({ signingSecret: "" })).toThrow(/SLACK_SIGNING_SECRET/);
  });

  it("verifies Slack's v0 signature, with rotation", () => {
    expect(() => hook.verify!(slackRequest(eventCallback, "application/json"))).not.toThrow();
    expect(() => hook.verify!(slackRequest(slashCommand, "application/x-www-form-urlencoded"))).not.toThrow();
    expect(verificationReason(() => hook.verify!(slackRequest(eventCallback, "application/json", {}, "another-secret")))).toBe("bad_signature");
    const rotated = slackConnector({ signingSecret: ["new-signing-secret", signingSecret] }).webhooks.events;
    expect(() => rotated.verify!(slackRequest(eventCallback, "application/json"))).not.toThrow();
  });

  it("answers the url_verification challenge with 200 JSON, without an idempotency key", async () => {
    const req = slackRequest(challenge, "application/json");
    expect(hook.idempotencyKey!(req, challenge)).toBeNull();
    const { response, upserts } = await runHandler(hook, challenge, req);
    expect(response).toEqual({ status: 200, headers: { "content-type": "application/json" }, body: { challenge: "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P" } });
    expect(upserts).toEqual([]);
  });

  it("keys Events API deliveries by event_id (retries carry the same one) and answers nothing (202)", async () => {
    const req = slackRequest(eventCallback, "application/json; charset=utf-8", { "x-slack-retry-num": "1", "x-slack-retry-reason": "http_timeout" });
    expect(hook.idempotencyKey!(req, eventCallback)).toBe("Ev123ABC456");
    const { response, logs } = await runHandler(hook, eventCallback, req);
    expect(response).toBeUndefined();
    expect(logs).toEqual([{ level: "info", obj: { type: "event_callback", eventId: "Ev123ABC456", eventType: "app_mention", teamId: "T123ABC456", retryNum: "1" }, msg: "slack event" }]);
  });

  it("parses slash commands (form body): keyed by trigger_id, acknowledged with an empty 200", async () => {
    const req = slackRequest(slashCommand, "application/x-www-form-urlencoded");
    expect(hook.idempotencyKey!(req, slashCommand)).toBe("13345224609.738474920.8088930838d88f008e0");
    const { response, logs } = await runHandler(hook, slashCommand, req);
    expect(response).toEqual({ status: 200 });
    expect(logs).toEqual([
      { level: "info", obj: { command: "/weather", teamId: "T0001", userId: "U2147483697", triggerId: "13345224609.738474920.8088930838d88f008e0" }, msg: "slack slash command" },
    ]);
  });

  it("parses interactivity (form field payload holding JSON): keyed by the payload's trigger_id", async () => {
    const req = slackRequest(interaction, "application/x-www-form-urlencoded");
    expect(hook.idempotencyKey!(req, interaction)).toBe("12466734323.1395872398.9e6f9e2d1b");
    const { response, logs } = await runHandler(hook, interaction, req);
    expect(response).toEqual({ status: 200 });
    expect(logs[0]).toEqual({ level: "info", obj: { type: "block_actions", triggerId: "12466734323.1395872398.9e6f9e2d1b" }, msg: "slack interaction" });
  });

  it("has no idempotency key for form bodies without a trigger_id", () => {
    const body = "token=abc&team_id=T1&text=hello";
    expect(hook.idempotencyKey!(slackRequest(body, "application/x-www-form-urlencoded"), body)).toBeNull();
  });

  it("answers 400 to a body that does not parse (and has no key for it)", async () => {
    for (const [body, type] of [["{not json", "application/json"], ["[1,2]", "application/json"], ["payload=%7Bnope", "application/x-www-form-urlencoded"]] as const) {
      const req = slackRequest(body, type);
      expect(hook.idempotencyKey!(req, body)).toBeNull();
      const { response, logs } = await runHandler(hook, body, req);
      expect(response).toMatchObject({ status: 400, body: { error: { code: "invalid_request" } } });
      expect(logs[0]!.level).toBe("warn");
    }
  });
});

describe("standardWebhooksConnector", () => {
  const secret = `whsec_${randomBytes(32).toString("base64")}`;
  const connector = standardWebhooksConnector({ secret });
  const hook = connector.webhooks.events;
  const payload = JSON.stringify({ type: "email.delivered", created_at: "2024-02-22T23:41:12.126Z", data: { email_id: "56761188-7520-42d8-8898-ff6fc54ce618" } });

  /** Headers as the `standardwebhooks` library signs them (`sign` takes a Date). */
  function signed(id = "msg_p5jXN8AQM9LWM0D4loKWxJek", key = secret): WebhookRequest {
    const at = new Date();
    return request(
      { "content-type": "application/json", "webhook-id": id, "webhook-timestamp": String(Math.floor(at.getTime() / 1000)), "webhook-signature": new Webhook(key).sign(id, at, payload) },
      payload,
    );
  }

  it("declares connector standard-webhooks (or the given id), webhook events, json", () => {
    expect(connector.id).toBe("standard-webhooks");
    expect(Object.keys(connector.webhooks)).toEqual(["events"]);
    expect(hook.format).toBe("json");
    expect(standardWebhooksConnector({ secret, id: "resend" }).id).toBe("resend");
    expect(() => standardWebhooksConnector({ secret, id: "Not A Slug" })).toThrow(/lowercase slug/);
    expect(() => standardWebhooksConnector({ secret: [] })).toThrow(/secret/);
  });

  it("verifies deliveries signed by the standardwebhooks library, with rotation", () => {
    expect(() => hook.verify!(signed())).not.toThrow();
    const other = `whsec_${randomBytes(32).toString("base64")}`;
    expect(verificationReason(() => hook.verify!(signed(undefined, other)))).toBe("bad_signature");
    expect(() => standardWebhooksConnector({ secret: [other, secret] }).webhooks.events.verify!(signed())).not.toThrow();
  });

  it("keys deliveries by webhook-id", () => {
    expect(hook.idempotencyKey!(signed("msg_abc"), JSON.parse(payload))).toBe("msg_abc");
    expect(hook.idempotencyKey!(request({}, payload), JSON.parse(payload))).toBeNull();
  });

  it("logs the payload's type and answers nothing (202)", async () => {
    const { response, upserts, logs } = await runHandler(hook, JSON.parse(payload), signed("msg_abc"));
    expect(response).toBeUndefined();
    expect(upserts).toEqual([]);
    expect(logs).toEqual([{ level: "info", obj: { messageId: "msg_abc", type: "email.delivered" }, msg: "standard webhook received" }]);
    const untyped = await runHandler(hook, [1, 2, 3], signed("msg_def"));
    expect(untyped.logs[0]!.obj).toEqual({ messageId: "msg_def", type: undefined });
  });
});
