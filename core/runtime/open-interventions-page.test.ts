/**
 * The caller's open interventions a page at a time (`WorkflowRuns.openFor`, `GET /api/interventions`):
 * oldest first, ties of `requested_at` broken by id, only those the caller may answer, with no gap or
 * repeat however the rows it may not answer fall between pages; read along `interventions_open_by_time`
 * without a sort (migration 022).
 */
import { afterEach, expect, it } from "vitest";
import { closeOpenedDatabases, openWithTable } from "../../test/helpers-db";
import type { Principal } from "../auth/permissions";
import type { Database } from "../store/db";
import { OPEN_INTERVENTIONS_FIRST_PAGE, OPEN_INTERVENTIONS_PAGE, OPEN_INTERVENTIONS_SUMMARY, WorkflowRuns } from "./workflows";

afterEach(closeOpenedDatabases);
const chunk = WorkflowRuns.OPEN_INTERVENTIONS_CHUNK;
const reads = WorkflowRuns.OPEN_INTERVENTIONS_READS_PER_PAGE;
afterEach(() => void ((WorkflowRuns.OPEN_INTERVENTIONS_CHUNK = chunk), (WorkflowRuns.OPEN_INTERVENTIONS_READS_PER_PAGE = reads)));

const at = (n: number) => `2026-11-29T10:00:0${n}.000Z`;
const alice: Principal = { type: "user", id: "alice", permissions: new Set(["approve:invoice"]) };
const bob: Principal = { type: "user", id: "bob", permissions: new Set() };

async function seed(db: Database): Promise<void> {
  // [id, requested_at, assignees, status]: alice may answer the ones named hers or needing approve:invoice
  const rows: Array<[string, string, object, string]> = [
    ["i_a", at(1), { identities: ["alice"] }, "open"],
    ["i_b", at(2), { identities: ["bob"] }, "open"],
    ["i_c", at(2), { permission: "approve:invoice" }, "open"],
    ["i_d", at(2), { identities: ["bob"] }, "open"],
    ["i_e", at(2), { identities: ["bob"] }, "open"],
    ["i_f", at(2), { identities: ["alice", "bob"] }, "open"],
    ["i_g", at(3), { identities: ["alice"] }, "submitted"],
    ["i_h", at(4), { permission: "approve:invoice" }, "open"],
    ["i_i", at(5), { identities: ["bob"] }, "open"],
  ];
  await db.transaction(async (tx) => {
    for (const [id, requested, assignees, status] of rows) {
      await tx.run("INSERT INTO interventions (id, run_id, workflow_id, name, prompt, assignees, status, requested_at) VALUES (?, 'wrun_1', 'invoice-review', ?, 'p', ?, ?, ?)", [id, id, JSON.stringify(assignees), status, requested]);
    }
  });
}

/** Every page of `principal`'s listing, `pageSize` at a time: the ids on each page. */
async function pages(runs: WorkflowRuns, principal: Principal, pageSize: number): Promise<string[][]> {
  const out: string[][] = [];
  let token: string | undefined;
  do {
    const page = await runs.openFor(principal, { pageSize, nextPageToken: token });
    out.push(page.data.map((i) => i.id));
    token = page.nextPageToken;
  } while (token);
  return out;
}

it("pages the open interventions a caller may answer, oldest first, whatever falls between pages and however many rows a read takes", async () => {
  const db = await openWithTable([]);
  await seed(db);
  // openFor reads only the store
  const runs = new WorkflowRuns(db, undefined as never, undefined as never, undefined as never, undefined as never);
  for (const size of [200, 2, 1]) {
    WorkflowRuns.OPEN_INTERVENTIONS_CHUNK = size;
    expect(await pages(runs, alice, 2), `reads of ${size}`).toEqual([["i_a", "i_c"], ["i_f", "i_h"]]);
    expect(await pages(runs, alice, 1), `reads of ${size}`).toEqual([["i_a"], ["i_c"], ["i_f"], ["i_h"]]);
    expect(await pages(runs, bob, 3), `reads of ${size}`).toEqual([["i_b", "i_d", "i_e"], ["i_f", "i_i"]]);
  }
  WorkflowRuns.OPEN_INTERVENTIONS_CHUNK = chunk;
  // a full last page says nothing follows when nothing the caller may answer does
  expect(await runs.openFor(alice, { pageSize: 4 })).toMatchObject({ data: { length: 4 } });
  expect((await runs.openFor(alice, { pageSize: 4 })).nextPageToken).toBeUndefined();
  // a page stops after its reads: bob may answer none of alice's first two, and gets an empty page that goes on
  WorkflowRuns.OPEN_INTERVENTIONS_CHUNK = 1;
  WorkflowRuns.OPEN_INTERVENTIONS_READS_PER_PAGE = 1;
  const short = await runs.openFor(bob, { pageSize: 3 });
  expect(short.data).toEqual([]);
  expect((await runs.openFor(bob, { pageSize: 3, nextPageToken: short.nextPageToken })).data.map((i) => i.id)).toEqual(["i_b"]);
  WorkflowRuns.OPEN_INTERVENTIONS_READS_PER_PAGE = 2;
  const paged = await pages(runs, bob, 3);
  expect(paged.flat()).toEqual(["i_b", "i_d", "i_e", "i_f", "i_i"]);
  expect(paged.length).toBeGreaterThan(2);
  WorkflowRuns.OPEN_INTERVENTIONS_CHUNK = chunk;
  WorkflowRuns.OPEN_INTERVENTIONS_READS_PER_PAGE = reads;
  // another caller's token is refused rather than read as a position
  const token = (await runs.openFor(alice, { pageSize: 1 })).nextPageToken!;
  await expect(runs.openFor(bob, { pageSize: 1, nextPageToken: token })).rejects.toMatchObject({ code: "invalid_request", message: "nextPageToken was answered to another caller: send one your own listing answered" });
});

it("reads the open interventions along interventions_open_by_time, without a sort", async () => {
  const db = await openWithTable([]);
  for (const [sql, params] of [[OPEN_INTERVENTIONS_FIRST_PAGE, [2]], [OPEN_INTERVENTIONS_PAGE, [at(2), "i_c", 2]]] as const) {
    const plan = (await db.all<{ detail: string }>(`EXPLAIN QUERY PLAN ${sql}`, [...params])).map((r) => r.detail);
    expect(plan, sql).toEqual([expect.stringMatching(/^(SCAN|SEARCH) interventions USING INDEX interventions_open_by_time\b/)]);
  }
});

it("counts the open interventions and finds the oldest from interventions_open_by_time alone (svc_interventions_open)", async () => {
  const db = await openWithTable([]);
  const runs = new WorkflowRuns(db, undefined as never, undefined as never, undefined as never, undefined as never);
  expect(await runs.openInterventionsSummary()).toEqual({ open: 0 });
  await seed(db);
  // i_g was submitted: 8 open, the oldest i_a
  expect(await runs.openInterventionsSummary()).toEqual({ open: 8, oldestRequestedAt: at(1) });
  const plan = (await db.all<{ detail: string }>(`EXPLAIN QUERY PLAN ${OPEN_INTERVENTIONS_SUMMARY}`)).map((r) => r.detail);
  expect(plan).toEqual(["SCAN interventions USING COVERING INDEX interventions_open_by_time"]);
});
