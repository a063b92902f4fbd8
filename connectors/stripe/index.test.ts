/**
 * The Stripe connector as a unit: `verify`, `idempotencyKey` and `handle` called directly, with
 * requests signed by the provider's own library and a fake handler context.
 */
import Stripe from "stripe";
import * as v from "valibot";
import { describe, expect, it } from "vitest";
import { request, runHandler, verificationReason } from "../../test/fixtures/connector-context";
import { stripeConnector } from "./index";

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
