import * as v from "valibot";
import { defineConnector, defineWebhook, verifyStripeSignature } from "../../core/sdk";

/** Options of `stripeConnector`. */
export interface StripeConnectorOptions {
  /**
   * The endpoint's signing secret (`whsec_…`, Dashboard → Developers → Webhooks, or printed by
   * `stripe listen`), or several while rolling it: any of them may have signed a delivery.
   */
  secret: string | readonly string[];
  /** Largest accepted age (and clock skew into the future) of the signed timestamp, in seconds. Default 300. */
  toleranceSec?: number;
}

/** The event envelope (https://docs.stripe.com/api/events/object); fields not named here are kept. */
const StripeEvent = v.looseObject({
  id: v.string(),
  type: v.string(),
  data: v.looseObject({ object: v.record(v.string(), v.unknown()) }),
});

/** The fields of a Stripe invoice (https://docs.stripe.com/api/invoices/object) this connector maps. */
const StripeInvoice = v.looseObject({
  id: v.pipe(v.string(), v.minLength(1)),
  number: v.nullish(v.string()),
  customer: v.pipe(v.string(), v.minLength(1)),
  customer_name: v.nullish(v.string()),
  customer_email: v.nullish(v.string()),
  /** In the currency's minor unit (cents for USD). */
  amount_due: v.pipe(v.number(), v.integer()),
  /** Lowercase ISO 4217. */
  currency: v.pipe(v.string(), v.length(3)),
  status: v.string(),
  /** Unix seconds. */
  due_date: v.nullish(v.number()),
});

/** Currencies whose Stripe amounts are not in hundredths (https://docs.stripe.com/currencies#minor-units). */
const ZERO_DECIMAL = new Set(["bif", "clp", "djf", "gnf", "jpy", "kmf", "krw", "mga", "pyg", "rwf", "ugx", "vnd", "vuv", "xaf", "xof", "xpf"]);
const THREE_DECIMAL = new Set(["bhd", "jod", "kwd", "omr", "tnd"]);

/** A Stripe amount (minor units) in major units: 1234 USD cents → 12.34, 500 JPY → 500, 5120 KWD fils → 5.12. */
function toMajorUnits(amount: number, currency: string): number {
  const c = currency.toLowerCase();
  if (ZERO_DECIMAL.has(c)) return amount;
  return amount / (THREE_DECIMAL.has(c) ? 1000 : 100);
}

/**
 * Stripe webhooks (spec 2.12). Registers `POST /api/webhooks/stripe/events`:
 * - `verify`: the `Stripe-Signature` header against `secret` (HMAC-SHA256, timestamp within
 *   `toleranceSec` both ways), before the body is parsed;
 * - body: the JSON event envelope (`id`, `type`, `data.object`), else 400;
 * - idempotency key: the event id (`evt_…`), so Stripe's retries of one event are one delivery;
 * - `invoice.*` events (except `invoice.upcoming`, a preview without an id) upsert the `customer`
 *   and the `invoice` objects and their `billedTo` link; other events are logged at debug and answered
 *   202.
 *
 * An `invoice.*` event whose `data.object` lacks a mapped field (see `StripeInvoice`) fails the run
 * (500): Stripe retries it, and a retry after the connector is fixed re-uses the same execution.
 *
 * @param opts the signing secret(s) (from the environment) and the timestamp tolerance
 * @throws Error when no secret (or an empty one) is given, so a missing environment variable stops startup
 * @example stripeConnector({ secret: process.env.STRIPE_WEBHOOK_SECRET!.split(",") })
 */
export function stripeConnector(opts: StripeConnectorOptions) {
  const secrets = typeof opts.secret === "string" ? [opts.secret] : [...opts.secret];
  if (secrets.length === 0 || secrets.some((s) => !s)) throw new Error("stripeConnector: `secret` is empty (set STRIPE_WEBHOOK_SECRET to the endpoint's whsec_… signing secret)");
  const toleranceSec = opts.toleranceSec;

  return defineConnector({
    id: "stripe",
    title: "Stripe",
    description: "Receives Stripe events; invoice events update customers and invoices.",
    webhooks: {
      events: defineWebhook({
        description: "Stripe event deliveries (Dashboard → Developers → Webhooks, or `stripe listen --forward-to`).",
        format: "json",
        schema: StripeEvent,
        verify: (req) => verifyStripeSignature(req, secrets, { toleranceSec }),
        idempotencyKey: (_req, body) => body.id,
        handle(ctx) {
          const event = ctx.body;
          if (!event.type.startsWith("invoice.") || event.type === "invoice.upcoming") {
            ctx.log.debug({ eventId: event.id, type: event.type }, "stripe event ignored");
            return;
          }
          const parsed = v.safeParse(StripeInvoice, event.data.object);
          if (!parsed.success) throw new Error(`Stripe ${event.type} ${event.id}: data.object is not a mappable invoice: ${v.summarize(parsed.issues)}`);
          const invoice = parsed.output;
          const customerId = invoice.customer;

          ctx.objects.upsert("customer", customerId, {
            name: invoice.customer_name ?? customerId,
            ...(invoice.customer_email ? { email: invoice.customer_email } : {}),
          });
          ctx.objects.upsert("invoice", invoice.id, {
            number: invoice.number ?? invoice.id,
            customerId,
            amount: toMajorUnits(invoice.amount_due, invoice.currency),
            currency: invoice.currency.toUpperCase(),
            status: invoice.status,
            ...(invoice.due_date ? { dueDate: new Date(invoice.due_date * 1000).toISOString().slice(0, 10) } : {}),
          });
          ctx.links.upsert({ sourceTypeId: "invoice", sourceId: invoice.id, linkId: "billedTo", targetTypeId: "customer", targetId: customerId });
          ctx.log.info({ eventId: event.id, type: event.type, invoice: invoice.id, customer: customerId }, "stripe invoice synced");
        },
      }),
    },
  });
}
