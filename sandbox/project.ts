import path from "node:path";
import { fileURLToPath } from "node:url";
import { allPermissions, can, defineProject } from "../core/sdk";
import { diagnosticsConnector } from "../connectors/diagnostics";
import { stripeConnector } from "../connectors/stripe";
import { githubConnector } from "../connectors/github";
import { slackConnector } from "../connectors/slack";
import { standardWebhooksConnector } from "../connectors/standard-webhooks";
import billing, { SAMPLE_PRICE_LIST } from "./billing";
import { seedArtifacts } from "./artifacts";
import { APPROVE_INVOICE, workflows } from "./workflows";

const here = path.dirname(fileURLToPath(import.meta.url));

export { SANDBOX_DATA_DIR, SANDBOX_DEV_TOKEN } from "./defaults";

/**
 * Development webhook secrets of the sandbox (documented in the README). Each is replaced by its
 * environment variable when set: STRIPE_WEBHOOK_SECRET, GITHUB_WEBHOOK_SECRET, SLACK_SIGNING_SECRET,
 * STANDARD_WEBHOOKS_SECRET.
 */
export const SANDBOX_WEBHOOK_SECRETS = {
  stripe: process.env.STRIPE_WEBHOOK_SECRET || "whsec_sandbox_stripe_development_secret",
  github: process.env.GITHUB_WEBHOOK_SECRET || "sandbox-github-development-secret",
  slack: process.env.SLACK_SIGNING_SECRET || "sandbox-slack-development-signing-secret",
  standardWebhooks: process.env.STANDARD_WEBHOOKS_SECRET || "whsec_c2FuZGJveC1zdGFuZGFyZC13ZWJob29rcy1kZXYtc2VjcmV0",
};

/**
 * The sandbox: a small billing-operations project with customers, invoices, the `billedTo` link,
 * `apiCalls` telemetry, the billing and diagnostics connectors and the `invoice-review` workflow.
 *
 * Identities: `dev` (every permission; the development token), `alice` (holds `approve:invoice`, views the price-list dataset), `auditor`
 * (sees customers only), `ops-bot` (a service account for the diagnostics actions).
 */
export const sandboxProject = defineProject({
  id: "sandbox",
  name: "Sandbox billing",
  objectTypes: {
    customer: {
      title: "Customer",
      properties: { name: { type: "string", required: true }, email: "string", country: "string", tier: "string", balance: "number", unpaidInvoices: "integer", statementMonth: "string" },
    },
    invoice: {
      title: "Invoice",
      properties: {
        number: { type: "string", required: true },
        customerId: { type: "string", required: true },
        amount: { type: "number", required: true },
        currency: { type: "string", required: true },
        status: { type: "string", required: true },
        dueDate: "date",
        approvalNote: "string",
        noticeSentAt: "datetime",
        reminderSentAt: { type: "datetime", description: "When the overdue-reminder event schedule last sent a payment reminder" },
        reviewStatus: "string",
        reviewedAt: "datetime",
        pdf: { type: "file", description: "The invoice document (a stored file reference)" },
      },
    },
    product: {
      title: "Product",
      description: "Projected from the price-list dataset: written only by its projection (commit a new dataset version to change one).",
      properties: { name: { type: "string", required: true }, unitPrice: { type: "number", required: true }, currency: { type: "string", required: true }, active: "boolean" },
    },
  },
  linkTypes: { billedTo: { source: "invoice", target: "customer", description: "The customer an invoice is billed to", properties: { note: "string" } } },
  telemetry: { apiCalls: { objectTypeId: "customer", unit: "calls", description: "API calls made for the customer" } },
  connectors: [
    billing,
    diagnosticsConnector(),
    stripeConnector({ secret: SANDBOX_WEBHOOK_SECRETS.stripe }),
    githubConnector({ secret: SANDBOX_WEBHOOK_SECRETS.github }),
    slackConnector({ signingSecret: SANDBOX_WEBHOOK_SECRETS.slack }),
    standardWebhooksConnector({ secret: SANDBOX_WEBHOOK_SECRETS.standardWebhooks }),
  ],
  workflows,
  workflowsModule: path.join(here, "workflows.ts"),
  devIdentity: "dev",
  identities: {
    dev: { type: "user", name: "Developer", permissions: (p) => [...allPermissions(p), APPROVE_INVOICE], devPassword: "dev-sandbox-password" },
    alice: { type: "user", name: "Alice (approver)", permissions: [can.view("invoice"), can.view("customer"), can.runAction("invoice.approve"), can.runWorkflow("invoice-review"), can.useAgent("assistant"), can.viewDataset("price-list"), APPROVE_INVOICE], devPassword: "alice-sandbox-password" },
    auditor: { type: "user", name: "Auditor", permissions: [can.view("customer")], devPassword: "auditor-sandbox-password" },
    "ops-bot": { type: "serviceAccount", name: "Operations bot", permissions: [can.runAction("diagnostics.sleep"), can.runAction("diagnostics.fail"), can.runAction("diagnostics.noop"), can.observe("logs")] },
  },
  async seed(ctx) {
    const customers = [
      { id: "cus_acme", name: "Acme Corp", email: "billing@acme.test", country: "US", tier: "enterprise" },
      { id: "cus_globex", name: "Globex", email: "ap@globex.test", country: "DE", tier: "business" },
      { id: "cus_initech", name: "Initech", email: "finance@initech.test", country: "GB", tier: "starter" },
    ];
    for (const { id, ...properties } of customers) ctx.objects.upsert("customer", id, properties);
    const invoices = [
      { id: "inv_1001", customerId: "cus_acme", amount: 1200, currency: "USD", status: "open", dueDate: "2026-12-01" },
      { id: "inv_1002", customerId: "cus_acme", amount: 15000, currency: "USD", status: "open", dueDate: "2026-11-15" },
      { id: "inv_1003", customerId: "cus_globex", amount: 480.5, currency: "EUR", status: "paid", dueDate: "2026-10-30" },
      { id: "inv_1004", customerId: "cus_globex", amount: 9800, currency: "EUR", status: "open", dueDate: "2026-12-20" },
      { id: "inv_1005", customerId: "cus_initech", amount: 75, currency: "GBP", status: "void", dueDate: "2026-09-01" },
      { id: "inv_1006", customerId: "cus_initech", amount: 2300, currency: "GBP", status: "open", dueDate: "2027-01-10" },
    ];
    for (const { id, ...p } of invoices) {
      ctx.objects.upsert("invoice", id, { number: id.replace("inv_", "INV-"), ...p });
      ctx.links.upsert({ sourceTypeId: "invoice", sourceId: id, linkId: "billedTo", targetTypeId: "customer", targetId: p.customerId });
    }
    ctx.datasets.snapshot("price-list", SAMPLE_PRICE_LIST);
    const published = await seedArtifacts(ctx.artifacts, "dev");
    ctx.log.info(published, "published the sandbox's artifacts");
  },
});
