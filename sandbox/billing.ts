import * as v from "valibot";
import { ApiError, defineAction, defineConnector, defineSchedule } from "../core";

/**
 * The sandbox's billing operations. `invoice.approve` approves an invoice: it sets its status,
 * makes sure the `billedTo` link to its customer exists, and records an `apiCalls` telemetry point on
 * the customer, all in one commit. Its effect (on Temporal, after the run) stamps `noticeSentAt`.
 * The `overdue-scan` schedule marks open invoices past their due date as overdue, hourly.
 */
export default defineConnector({
  id: "billing",
  title: "Billing",
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
  },
  actions: {
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
