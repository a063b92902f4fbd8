import { defineConnector, defineWebhook, verifyStandardWebhook } from "../../core/sdk";

/** Options of `standardWebhooksConnector`. */
export interface StandardWebhooksConnectorOptions {
  /** The endpoint's signing secret (`whsec_<base64>`), or several while rotating it. */
  secret: string | readonly string[];
  /** Connector id (a lowercase slug); also the URL segment. Default `standard-webhooks`. */
  id?: string;
  /** Largest accepted age (and clock skew into the future) of `webhook-timestamp`, in seconds. Default 300. */
  toleranceSec?: number;
}

/**
 * Any sender that follows Standard Webhooks (https://www.standardwebhooks.com: Svix, Resend, Clerk,
 * Supabase, OpenAI, …) (spec 2.12). Registers `POST /api/webhooks/<id>/events`:
 * - `verify`: `webhook-id`, `webhook-timestamp` and `webhook-signature` (`v1,<base64 HMAC-SHA256>`
 *   entries) against `secret`, timestamp within `toleranceSec` both ways;
 * - idempotency key: `webhook-id` (the same on every retry of one message);
 * - `handle` logs the payload's `type` when it has one and answers 202.
 *
 * Use one instance per sender, each with its own `id` and secret.
 *
 * @param opts the signing secret(s), from the environment, and the connector id
 * @throws Error when no secret (or an empty one) is given, or the id is not a lowercase slug
 * @example standardWebhooksConnector({ id: "resend", secret: process.env.RESEND_WEBHOOK_SECRET! })
 */
export function standardWebhooksConnector(opts: StandardWebhooksConnectorOptions) {
  const id = opts.id ?? "standard-webhooks";
  const secrets = typeof opts.secret === "string" ? [opts.secret] : [...opts.secret];
  if (secrets.length === 0 || secrets.some((s) => !s)) throw new Error(`standardWebhooksConnector(${id}): \`secret\` is empty (set it to the endpoint's whsec_… signing secret)`);
  const toleranceSec = opts.toleranceSec;

  return defineConnector({
    id,
    title: "Standard Webhooks",
    description: "Receives Standard Webhooks deliveries.",
    webhooks: {
      events: defineWebhook({
        description: "Standard Webhooks deliveries (webhook-id, webhook-timestamp, webhook-signature).",
        format: "json",
        verify: (req) => verifyStandardWebhook(req, secrets, { toleranceSec }),
        idempotencyKey: (req) => req.headers.get("webhook-id"),
        handle(ctx) {
          const type = (ctx.body as { type?: unknown } | null)?.type;
          ctx.log.info({ messageId: ctx.request.headers.get("webhook-id"), type: typeof type === "string" ? type : undefined }, "standard webhook received");
        },
      }),
    },
  });
}
