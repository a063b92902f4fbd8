/**
 * The Standard Webhooks connector as a unit: `verify`, `idempotencyKey` and `handle` called directly, with
 * requests signed by the provider's own library and a fake handler context.
 */
import { Webhook } from "standardwebhooks";
import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import type { WebhookRequest } from "../../core/sdk";
import { request, runHandler, verificationReason } from "../../test/fixtures/connector-context";
import { standardWebhooksConnector } from "./index";

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
