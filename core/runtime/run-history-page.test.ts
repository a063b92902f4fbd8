/**
 * A run's history a page at a time (`WorkflowRuns.history`, `GET /api/workflow-runs/:runId/history`)
 * over a scripted Temporal frontend: Temporal sizes its pages in batches it never splits, may answer a
 * token and then an empty page, or an empty page in the middle; every page size must still join to
 * the whole history, in order, with nothing twice, and every position must move on.
 */
import { afterEach, expect, it } from "vitest";
import { closeOpenedDatabases, openWithTable } from "../../test/helpers-db";
import type { TemporalHost } from "../temporal/host";
import { WorkflowRuns } from "./workflows";

afterEach(closeOpenedDatabases);
const reads = WorkflowRuns.HISTORY_READS_PER_PAGE;
afterEach(() => void (WorkflowRuns.HISTORY_READS_PER_PAGE = reads));

/** A history of `sizes.length` batches, batch i holding sizes[i] events (ids 1, 2, … in order). */
function batches(sizes: number[]): number[][] {
  let id = 0;
  return sizes.map((n) => Array.from({ length: n }, () => ++id));
}

/**
 * A frontend answering `GetWorkflowExecutionHistory` as Temporal does: `maximumPageSize` batches from
 * the token's batch on, never a batch split. `emptyAt`: batch indexes where it answers a page of no
 * events with a token first (as at the end of Temporal's pages); `trailingEmpty`: the last page's
 * token is answered by an empty page without one.
 */
function frontend(history: number[][], opts: { emptyAt?: number[]; trailingEmpty?: boolean } = {}) {
  const calls: Array<{ token: string; size: number }> = [];
  const emptied = new Set<number>();
  const getWorkflowExecutionHistory = async (req: { maximumPageSize: number; nextPageToken?: Uint8Array }) => {
    const token = req.nextPageToken ? Buffer.from(req.nextPageToken).toString() : "0";
    calls.push({ token, size: req.maximumPageSize });
    const start = Number(token.replace("e", ""));
    if (start >= history.length) return { history: { events: [] }, nextPageToken: new Uint8Array() };
    if (opts.emptyAt?.includes(start) && !token.endsWith("e") && !emptied.has(start)) {
      emptied.add(start);
      return { history: { events: [] }, nextPageToken: Buffer.from(`${start}e`) };
    }
    const end = Math.min(history.length, start + Math.max(1, req.maximumPageSize));
    const events = history.slice(start, end).flat().map((eventId) => ({ eventId, eventType: 1 }));
    const more = end < history.length || opts.trailingEmpty;
    return { history: { events }, nextPageToken: more ? Buffer.from(String(end)) : new Uint8Array() };
  };
  const host = { client: { workflowService: { getWorkflowExecutionHistory } }, namespace: "default", payloadCodec: { encode: async (p: unknown) => p, decode: async (p: unknown) => p } };
  return { host: host as unknown as TemporalHost, calls };
}

async function runs(host: TemporalHost): Promise<WorkflowRuns> {
  // history() reads the store (the run's start) and Temporal
  return new WorkflowRuns(await openWithTable([]), undefined as never, undefined as never, host, undefined as never);
}

/** Every page at `pageSize`: the ids of each page's events. */
async function pages(r: WorkflowRuns, pageSize: number): Promise<number[][]> {
  const out: number[][] = [];
  let token: string | undefined;
  for (let guard = 0; guard < 200; guard++) {
    const page = await r.history("wrun_1", { pageSize, nextPageToken: token });
    expect(page.events.length).toBeLessThanOrEqual(pageSize);
    out.push(page.events.map((e) => e.eventId));
    token = page.nextPageToken;
    if (!token) return out;
  }
  throw new Error("the pages never ended");
}

it("joins to the whole history at every page size, however Temporal's batches and empty pages fall", async () => {
  const shapes = [
    { sizes: [3, 1, 5, 2, 7, 1, 1, 4], opts: {} },
    { sizes: [6, 6, 6], opts: { trailingEmpty: true } },
    { sizes: [2, 9, 1, 3], opts: { emptyAt: [1, 3] } },
    { sizes: [1], opts: {} },
  ];
  for (const { sizes, opts } of shapes) {
    const history = batches(sizes);
    const all = history.flat();
    for (let pageSize = 1; pageSize <= all.length + 1; pageSize++) {
      const { host } = frontend(history, opts);
      const got = await pages(await runs(host), pageSize);
      expect(got.flat(), `${JSON.stringify(sizes)} ${JSON.stringify(opts)} at ${pageSize}`).toEqual(all);
      // a page is short only at the end, or where Temporal answered nothing (an empty page, the one after the last)
      if (!opts.emptyAt && !opts.trailingEmpty) expect(got.slice(0, -1).every((p) => p.length === pageSize)).toBe(true);
    }
  }
});

it("resumes inside one of Temporal's pages by asking for it again at the size it was read with, then moves on with Temporal's token", async () => {
  const { host, calls } = frontend(batches([3, 3, 3, 3, 3]));
  const r = await runs(host);
  const seen: number[][] = [];
  let token: string | undefined;
  do {
    const page = await r.history("wrun_1", { pageSize: 4, nextPageToken: token });
    seen.push(page.events.map((e) => e.eventId));
    token = page.nextPageToken;
  } while (token);
  expect(seen).toEqual([[1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12], [13, 14, 15]]);
  // Temporal's first page (4 batches: 12 events) three times at the size it was first asked for, then its second page
  expect(calls).toEqual([{ token: "0", size: 4 }, { token: "0", size: 4 }, { token: "0", size: 4 }, { token: "4", size: 4 }]);
});

it("stops reading after HISTORY_READS_PER_PAGE empty pages of Temporal's and answers a token to go on from", async () => {
  WorkflowRuns.HISTORY_READS_PER_PAGE = 1;
  const { host } = frontend(batches([2, 2]), { emptyAt: [0] });
  const r = await runs(host);
  const first = await r.history("wrun_1", { pageSize: 10 });
  expect(first.events).toEqual([]);
  expect(first.nextPageToken).toEqual(expect.any(String));
  expect((await r.history("wrun_1", { pageSize: 10, nextPageToken: first.nextPageToken })).events.map((e) => e.eventId)).toEqual([1, 2, 3, 4]);
});

it("refuses a position past its page's events and one of another run, and answers 503 when Temporal does not", async () => {
  const { host } = frontend(batches([3, 3]));
  const r = await runs(host);
  const token = (await r.history("wrun_1", { pageSize: 1 })).nextPageToken!;
  await expect(r.history("wrun_2", { pageSize: 1, nextPageToken: token })).rejects.toMatchObject({ code: "invalid_request", message: expect.stringContaining("another run's history") });
  const forged = JSON.parse(Buffer.from(token, "base64url").toString());
  forged.position[2] = 40;
  await expect(r.history("wrun_1", { pageSize: 1, nextPageToken: Buffer.from(JSON.stringify(forged)).toString("base64url") })).rejects.toMatchObject({ code: "invalid_request", message: expect.stringContaining("past the events of its page") });
  forged.position[1] = 5000;
  await expect(r.history("wrun_1", { pageSize: 1, nextPageToken: Buffer.from(JSON.stringify(forged)).toString("base64url") })).rejects.toMatchObject({ code: "invalid_request" });
  const down = { ...(host as any), client: { workflowService: { getWorkflowExecutionHistory: () => Promise.reject(new Error("connect ECONNREFUSED")) } } };
  await expect((await runs(down)).history("wrun_1", { pageSize: 1 })).rejects.toMatchObject({ code: "unavailable", message: "Temporal did not answer: connect ECONNREFUSED" });
});
