/**
 * The sandbox's workflows. This module is bundled into Temporal's workflow isolate: it may import
 * only valibot and the type-only SDK, and must stay deterministic.
 */
import * as v from "valibot";
import { defineWorkflow } from "../core/sdk/workflow";

export const workflows = {
  /** Reads an invoice, waits briefly, and records that it was reviewed. */
  "invoice-review": defineWorkflow({
    title: "Review an invoice",
    input: v.object({
      invoiceId: v.pipe(v.string(), v.minLength(1)),
      waitMs: v.optional(v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(3_600_000)), 1000),
    }),
    async run(ctx, input) {
      const invoice = await ctx.node("read invoice", async () => {
        const found = await ctx.objects.get("invoice", input.invoiceId);
        if (!found) throw new Error(`No invoice "${input.invoiceId}"`);
        return found;
      });
      await ctx.sleep(input.waitMs);
      await ctx.node("write review status", () =>
        ctx.write([{ op: "object.update", objectTypeId: "invoice", primaryId: invoice.primaryId, properties: { reviewStatus: "reviewed", reviewedAt: new Date().toISOString() } }]),
      );
      return { invoiceId: invoice.primaryId, reviewStatus: "reviewed", amount: invoice.properties.amount };
    },
  }),
};
