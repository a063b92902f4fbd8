/**
 * A caller's conversations a page at a time (`CONVERSATIONS_PAGE`, core/runtime/agents.ts): ties of
 * `updated_at` broken by id with no gap or repeat, read along `agent_conversations_by_owner` without a sort
 * (migration 021).
 */
import { afterEach, expect, it } from "vitest";
import { closeOpenedDatabases, openWithTable } from "../../test/helpers-db";
import { CONVERSATIONS_FIRST_PAGE, CONVERSATIONS_PAGE } from "./agents";

afterEach(closeOpenedDatabases);

it("pages a caller's conversations newest first, ties of updated_at by id, along the index without a sort", async () => {
  const db = await openWithTable([]);
  const at = (n: number) => `2026-11-29T10:00:0${n}.000Z`;
  await db.transaction(async (tx) => {
    // five share one updated_at; another owner's are never read
    for (const [id, owner, updated] of [["conv_a", "dev", at(1)], ["conv_b", "dev", at(2)], ["conv_c", "dev", at(2)], ["conv_d", "dev", at(2)], ["conv_e", "dev", at(2)], ["conv_f", "dev", at(2)], ["conv_g", "dev", at(3)], ["conv_x", "alice", at(2)]] as const) {
      await tx.run("INSERT INTO agent_conversations (id, agent_id, owner, title, created_at, updated_at) VALUES (?, 'sandbox.assistant', ?, 't', ?, ?)", [id, owner, updated, updated]);
    }
  });
  const ids: string[] = [];
  let page = await db.all<{ id: string; updated_at: string }>(CONVERSATIONS_FIRST_PAGE, ["dev", 2]);
  while (page.length) {
    ids.push(...page.map((r) => r.id));
    const last = page.at(-1)!;
    page = await db.all(CONVERSATIONS_PAGE, ["dev", last.updated_at, last.id, 2]);
  }
  expect(ids).toEqual(["conv_g", "conv_f", "conv_e", "conv_d", "conv_c", "conv_b", "conv_a"]);
  for (const sql of [CONVERSATIONS_FIRST_PAGE, CONVERSATIONS_PAGE]) {
    const plan = (await db.all<{ detail: string }>(`EXPLAIN QUERY PLAN ${sql}`, sql === CONVERSATIONS_PAGE ? ["dev", at(2), "conv_c", 2] : ["dev", 2])).map((r) => r.detail);
    expect(plan, sql).toEqual([expect.stringMatching(/^SEARCH agent_conversations USING INDEX agent_conversations_by_owner \(owner=\?/)]);
  }
});
