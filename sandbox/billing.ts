import * as v from "valibot";
import { ApiError, defineAction, defineAgent, defineConnector, defineDataset, definePipeline, defineRule, defineSchedule, defineSync } from "../core/sdk";

/**
 * The sandbox's billing operations. `invoice.approve` approves an invoice: it sets its status,
 * makes sure the `billedTo` link to its customer exists, and records an `apiCalls` telemetry point on
 * the customer, all in one commit. Its effect (on Temporal, after the run) stamps `noticeSentAt`.
 * The `overdue-scan` schedule marks open invoices past their due date as overdue, hourly; the
 * `invoice-overdue` rule then triggers for each of them (`rule.triggered`) and resolves once the invoice
 * is no longer overdue, e.g. approved (`rule.resolved`); the `overdue-reminder` event schedule fires on
 * each `rule.triggered` and stamps the invoice's `reminderSentAt` (a reminder sent).
 * The `customer-sync` sync upserts customers from a CRM export (a built-in sample when none is given);
 * the `monthly-statement` pipeline totals each customer's unpaid invoices into `balance`.
 * The `price-list` dataset (primary key `sku`) is projected into `product` objects, which only its
 * projection writes; the seed commits version 1 and the `price-list-sync` sync snapshots a new one (the
 * built-in sample, or the rows of its input).
 */

/** The sample price list the seed commits as `price-list` version 1 and `price-list-sync` snapshots when its input has no rows. */
export const SAMPLE_PRICE_LIST = [
  { sku: "SKU-API-1K", name: "API calls (per 1,000)", unitPrice: 0.5, currency: "USD", active: true },
  { sku: "SKU-LEGACY", name: "Legacy plan (monthly)", unitPrice: 29, currency: "USD", active: false },
  { sku: "SKU-SEAT", name: "User seat (monthly)", unitPrice: 12, currency: "USD", active: true },
  { sku: "SKU-STORAGE", name: "Storage (per GB-month)", unitPrice: 0.1, currency: "USD", active: true },
  { sku: "SKU-SUPPORT", name: "Premium support (monthly)", unitPrice: 499, currency: "USD", active: true },
];

/** The sample CRM export `customer-sync` uses when its input has none. */
const SAMPLE_CRM = [
  { id: "cus_acme", name: "Acme Corp", email: "billing@acme.test", country: "US" },
  { id: "cus_globex", name: "Globex GmbH", email: "ap@globex.test", country: "DE" },
  { id: "cus_umbrella", name: "Umbrella Ltd", email: "accounts@umbrella.test", country: "GB" },
];
const CrmCustomer = v.object({ id: v.pipe(v.string(), v.minLength(1)), name: v.pipe(v.string(), v.minLength(1)), email: v.optional(v.string()), country: v.optional(v.string()) });
export default defineConnector({
  id: "billing",
  title: "Billing",
  rules: {
    "invoice-overdue": defineRule({
      objectTypeId: "invoice",
      where: { status: "overdue" },
      title: "Invoice overdue",
      description: "An invoice the overdue scan marked overdue; resolved when its status changes (approved, paid, void).",
    }),
  },
  schedules: {
    "overdue-scan": defineSchedule({
      cron: "0 * * * *",
      timezone: "UTC",
      overlap: "skip",
      description: "Marks open invoices whose due date has passed as overdue.",
      async run(ctx) {
        const today = ctx.occurrenceAt.slice(0, 10);
        let nextPageToken: string | undefined;
        do {
          const page = await ctx.objects.query({ objectTypeId: "invoice", where: { status: "open", dueDate: { lt: today } }, pageSize: 200, nextPageToken });
          for (const invoice of page.data) ctx.objects.update("invoice", invoice.primaryId, { status: "overdue" });
          nextPageToken = page.nextPageToken;
        } while (nextPageToken);
      },
    }),
    // an event schedule (spec 6.1): once per rule.triggered about an invoice, in order per invoice, retried on failure
    "overdue-reminder": defineSchedule({
      on: { types: ["rule.triggered"], objectTypeId: "invoice" },
      description: "When the invoice-overdue rule triggers for an invoice, sends its customer a payment reminder and stamps reminderSentAt.",
      async run(ctx) {
        const { ruleId, subject } = ctx.event.payload as { ruleId?: string; subject?: { primaryId?: unknown } };
        // only the rule engine's own events (no actor): an appended rule.triggered sends no reminder
        if (ruleId !== "invoice-overdue" || ctx.event.actor !== undefined || typeof subject?.primaryId !== "string") return;
        const invoice = await ctx.objects.get("invoice", subject.primaryId);
        // paid, approved or deleted since: nothing to remind (stamping an overdue invoice leaves the rule triggered: no loop)
        if ((invoice?.properties as { status?: string } | undefined)?.status !== "overdue") return;
        ctx.objects.update("invoice", subject.primaryId, { reminderSentAt: new Date().toISOString() });
        ctx.log.info({ invoice: subject.primaryId, attempt: ctx.attempt }, "payment reminder sent");
      },
    }),
  },
  datasets: {
    "price-list": defineDataset({
      title: "Price list",
      description: "The products the company sells and their unit prices; projected into product objects.",
      columns: { sku: "string", name: { type: "string", required: true }, unitPrice: { type: "number", required: true }, currency: { type: "string", required: true }, active: "boolean" },
      primaryKey: "sku",
      projection: { objectTypeId: "product", properties: { name: "name", unitPrice: "unitPrice", currency: "currency", active: "active" } },
    }),
  },
  syncs: {
    "price-list-sync": defineSync({
      title: "Sync the price list",
      description: "Snapshots the price-list dataset: the input's rows, or the built-in sample.",
      input: v.object({ rows: v.optional(v.array(v.record(v.string(), v.unknown()))) }),
      async run(ctx) {
        const rows = ctx.input.rows ?? SAMPLE_PRICE_LIST;
        ctx.datasets.snapshot("price-list", rows);
        ctx.log.info({ count: rows.length }, "price list snapshotted");
        return { rows: rows.length };
      },
    }),
    "customer-sync": defineSync({
      title: "Sync customers from the CRM",
      input: v.object({ customers: v.optional(v.array(CrmCustomer)) }),
      async run(ctx) {
        const customers = ctx.input.customers ?? SAMPLE_CRM;
        for (const { id, ...properties } of customers) ctx.objects.upsert("customer", id, properties);
        ctx.log.info({ count: customers.length }, "customers synced");
        return { synced: customers.length };
      },
    }),
  },
  pipelines: {
    "monthly-statement": definePipeline({
      title: "Monthly statement",
      input: v.object({ month: v.pipe(v.string(), v.regex(/^\d{4}-\d{2}$/, "must be YYYY-MM")) }),
      steps: [
        {
          name: "collect unpaid invoices",
          async run(ctx) {
            const totals: Record<string, { amount: number; count: number }> = {};
            let nextPageToken: string | undefined;
            do {
              const page = await ctx.objects.query({ objectTypeId: "invoice", where: { status: { in: ["open", "overdue", "approved"] } }, pageSize: 200, nextPageToken });
              for (const invoice of page.data) {
                const p = invoice.properties as { customerId: string; amount: number };
                const t = (totals[p.customerId] ??= { amount: 0, count: 0 });
                t.amount = Math.round((t.amount + p.amount) * 100) / 100;
                t.count++;
              }
              nextPageToken = page.nextPageToken;
            } while (nextPageToken);
            return totals;
          },
        },
        {
          name: "update balances",
          async run(ctx) {
            const totals = ctx.results["collect unpaid invoices"] as Record<string, { amount: number; count: number }>;
            for (const [customerId, t] of Object.entries(totals)) {
              if (await ctx.objects.get("customer", customerId)) ctx.objects.update("customer", customerId, { balance: t.amount, unpaidInvoices: t.count, statementMonth: ctx.input.month });
            }
            return { customers: Object.keys(totals).length };
          },
        },
      ],
    }),
  },
  agents: {
    // a billing assistant: the sandbox runs it on the scripted model (no key, no network) unless
    // SVC_AGENT_MODEL points at a real provider (see the README)
    assistant: defineAgent({
      title: "Billing assistant",
      instructions: "You are the billing team's assistant. You read invoices and customers the user may see, and publish reports, sheets and decks they ask for as artifacts.",
    }),
  },
  actions: {
    "invoice.attach-pdf": defineAction({
      title: "Attach an invoice's PDF",
      description: "Sets the invoice's `pdf` file property to an uploaded file (POST /api/files first). The file is then read through the invoice.",
      subject: { objectTypeId: "invoice" },
      params: v.object({ file: v.object({ id: v.pipe(v.string(), v.regex(/^file_[0-9A-Za-z]+$/, "must be a file id file_…")) }) }),
      async run(ctx) {
        ctx.objects.update("invoice", ctx.subject!.primaryId, { pdf: { id: ctx.params.file.id } });
        return { invoiceId: ctx.subject!.primaryId, file: { id: ctx.params.file.id } };
      },
    }),
    "invoice.approve": defineAction({
      title: "Approve an invoice",
      subject: { objectTypeId: "invoice" },
      params: v.object({ note: v.optional(v.pipe(v.string(), v.maxLength(500))) }),
      async run(ctx) {
        const invoice = (await ctx.objects.get("invoice", ctx.subject!.primaryId))!;
        const p = invoice.properties as { status?: string; customerId?: string };
        if (p.status === "void") throw new ApiError("invalid_request", `Invoice ${invoice.primaryId} is void and cannot be approved`);
        ctx.objects.update("invoice", invoice.primaryId, { status: "approved", approvalNote: ctx.params.note ?? null });
        if (p.customerId) {
          ctx.links.upsert({ sourceTypeId: "invoice", sourceId: invoice.primaryId, linkId: "billedTo", targetTypeId: "customer", targetId: p.customerId });
          ctx.telemetry.append({ objectTypeId: "customer", objectId: p.customerId, propertyId: "apiCalls", value: 1 });
        }
        ctx.log.info({ invoice: invoice.primaryId }, "invoice approved");
        return { invoiceId: invoice.primaryId, status: "approved" };
      },
      async effect(ctx) {
        const id = ctx.run.subject!.primaryId;
        ctx.objects.update("invoice", id, { noticeSentAt: ctx.run.finishedAt! });
        ctx.log.info({ invoice: id }, "approval notice sent");
      },
    }),
  },
});
