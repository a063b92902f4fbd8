/**
 * The sandbox's workflows. This module is bundled into Temporal's workflow isolate: it may import
 * only valibot and the type-only SDK, and must stay deterministic.
 */
import * as v from "valibot";
import { defineWorkflow } from "../core/sdk/workflow";

/** Permission of the people who approve large invoices. */
export const APPROVE_INVOICE = "approve:invoice";

const Decision = v.object({ approved: v.boolean(), note: v.optional(v.pipe(v.string(), v.maxLength(500))) });

export const workflows = {
  /**
   * Reviews an invoice. Invoices up to `approvalThreshold` are marked reviewed after a short wait;
   * larger ones ask a holder of `approve:invoice` for an `approve` decision, which expires after
   * `approvalTimeoutMs`. Approval runs the `invoice.approve` action; rejection and expiry each record
   * their own review status.
   */
  "invoice-review": defineWorkflow({
    title: "Review an invoice",
    input: v.object({
      invoiceId: v.pipe(v.string(), v.minLength(1)),
      waitMs: v.optional(v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(3_600_000)), 1000),
      approvalThreshold: v.optional(v.pipe(v.number(), v.minValue(0)), 5000),
      approvalTimeoutMs: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1000), v.maxValue(30 * 86_400_000)), 86_400_000),
    }),
    async run(ctx, input) {
      const invoice = await ctx.node("read invoice", async () => {
        const found = await ctx.objects.get("invoice", input.invoiceId);
        if (!found) throw new Error(`No invoice "${input.invoiceId}"`);
        return found;
      });
      const amount = Number(invoice.properties.amount);
      ctx.log.info("reviewing invoice", { invoiceId: invoice.primaryId, amount, approvalNeeded: amount > input.approvalThreshold });
      await ctx.sleep(input.waitMs);
      const setStatus = (reviewStatus: string) =>
        ctx.write([{ op: "object.update", objectTypeId: "invoice", primaryId: invoice.primaryId, properties: { reviewStatus, reviewedAt: new Date().toISOString() } }]);

      if (amount <= input.approvalThreshold) {
        await ctx.node("write review status", () => setStatus("reviewed"));
        return { invoiceId: invoice.primaryId, reviewStatus: "reviewed", amount };
      }

      const decision = await ctx.node("approve", () =>
        ctx.intervention("approve", {
          prompt: `Approve invoice ${String(invoice.properties.number)} for ${amount} ${String(invoice.properties.currency)}?`,
          answer: Decision,
          assignees: { permission: APPROVE_INVOICE },
          expiresInMs: input.approvalTimeoutMs,
        }),
      );
      if (decision.status === "submitted" && decision.answer.approved) {
        const run = await ctx.node("approve invoice", () => ctx.actions.run("invoice.approve", { subject: { kind: "object", objectTypeId: "invoice", primaryId: invoice.primaryId }, params: decision.answer.note ? { note: decision.answer.note } : {} }));
        await ctx.node("write review status", () => setStatus(run.status === "succeeded" ? "approved" : "approval failed"));
        return { invoiceId: invoice.primaryId, reviewStatus: run.status === "succeeded" ? "approved" : "approval failed", amount, approvedBy: decision.by.id, actionRunId: run.runId };
      }
      const outcome = decision.status === "submitted" ? "rejected" : decision.status;
      ctx.log.warn(`invoice review ended ${outcome}`, { invoiceId: invoice.primaryId });
      await ctx.node(`record ${outcome}`, () => setStatus(outcome));
      return { invoiceId: invoice.primaryId, reviewStatus: outcome, amount };
    },
  }),
};
