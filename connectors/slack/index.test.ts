/**
 * The Slack connector as a unit: `verify`, `idempotencyKey` and `handle` called directly, with
 * requests signed by the provider's own library and a fake handler context.
 */
import { createHmac } from "node:crypto";
import { describe, expect, it } from "vitest";
import type { WebhookRequest } from "../../core/sdk";
import { request, runHandler, verificationReason } from "../../test/fixtures/connector-context";
import { slackConnector } from "./index";

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
