import { defineConnector, defineWebhook, verifyGitHubSignature } from "../../core/sdk";

/** Options of `githubConnector`. */
export interface GitHubConnectorOptions {
  /** The webhook's secret (repository or organization Settings → Webhooks), or several while rotating it. */
  secret: string | readonly string[];
}

/** `repository.full_name` of a GitHub payload, when there is one (`owner/name`). */
function repositoryName(body: unknown): string | undefined {
  if (typeof body !== "object" || body === null) return undefined;
  const repository = (body as { repository?: unknown }).repository;
  if (typeof repository !== "object" || repository === null) return undefined;
  const fullName = (repository as { full_name?: unknown }).full_name;
  return typeof fullName === "string" ? fullName : undefined;
}

/**
 * GitHub webhooks (spec 2.12). Registers `POST /api/webhooks/github/events` (content type
 * `application/json` in the webhook's settings):
 * - `verify`: `X-Hub-Signature-256` (HMAC-SHA256 of the raw body) against `secret`; GitHub signs no
 *   timestamp, so replays are stopped by the idempotency key only;
 * - idempotency key: `X-GitHub-Delivery` (a GUID; "Redeliver" in GitHub re-sends the same one);
 * - `handle` logs the event (`X-GitHub-Event`, e.g. `push`, `ping`), its `action` and the repository,
 *   and answers 202. Replace it with what your project does with the events.
 *
 * @param opts the webhook secret(s), from the environment
 * @throws Error when no secret (or an empty one) is given, so a missing environment variable stops startup
 * @example githubConnector({ secret: process.env.GITHUB_WEBHOOK_SECRET! })
 */
export function githubConnector(opts: GitHubConnectorOptions) {
  const secrets = typeof opts.secret === "string" ? [opts.secret] : [...opts.secret];
  if (secrets.length === 0 || secrets.some((s) => !s)) throw new Error("githubConnector: `secret` is empty (set GITHUB_WEBHOOK_SECRET to the webhook's secret)");

  return defineConnector({
    id: "github",
    title: "GitHub",
    description: "Receives GitHub webhook events.",
    webhooks: {
      events: defineWebhook({
        description: "GitHub webhook deliveries (content type application/json).",
        format: "json",
        verify: (req) => verifyGitHubSignature(req, secrets),
        idempotencyKey: (req) => req.headers.get("x-github-delivery"),
        handle(ctx) {
          const action = (ctx.body as { action?: unknown } | null)?.action;
          ctx.log.info(
            {
              event: ctx.request.headers.get("x-github-event"),
              action: typeof action === "string" ? action : undefined,
              repository: repositoryName(ctx.body),
              delivery: ctx.request.headers.get("x-github-delivery"),
            },
            "github event",
          );
        },
      }),
    },
  });
}
