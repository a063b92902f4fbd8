/**
 * Agents against the real Temporal dev server (spec 1, 4.3, 5): replies are durable runs whose model
 * and tool calls are activities, driven by the deterministic scripted model through the real tool path
 * (uploads, the artifact store's checks, deck checks). Publish, a change request that publishes version
 * 2 of the same artifact with pinned addresses, deck warnings back to the agent, cancel mid-reply,
 * retry of a failed reply (withdrawal), and who may read what.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { client, eventually, startApp, startFixtureProcess, tempDir, tokenFor } from "./helpers";
import { freePort } from "./setup/global";
import { AgentTools } from "../core/runtime/agent-tools";
import { defineProject } from "../core/sdk/project";
import { sandboxProject } from "../sandbox/project";
import billing from "../sandbox/billing";
import { AgentRuns } from "../core/runtime/agents";
import { Database } from "../core/store/db";
import { insertAgentRun } from "./helpers-agents";

type App = Awaited<ReturnType<typeof startApp>>;
let app: App;
let dev: ReturnType<typeof client>;
let alice: ReturnType<typeof client>;

/** Waits until the run is no longer queued or running, and answers its state. */
async function finished(c: ReturnType<typeof client>, runId: string): Promise<any> {
  return eventually(async () => {
    const res = await c.get(`/api/agent-runs/${runId}`);
    expect(res.status).toBe(200);
    return res.body.status === "queued" || res.body.status === "running" ? undefined : res.body;
  }, 60_000);
}

async function converse(c: ReturnType<typeof client>, message: string): Promise<{ conversationId: string; runId: string }> {
  const res = await c.post("/api/agents/assistant/conversations", { message });
  expect(res.status).toBe(200);
  return { conversationId: res.body.conversation.id, runId: res.body.runId };
}

beforeAll(async () => {
  app = await startApp({ env: { SVC_DECK_CHECKS: "true" } });
  dev = client(app);
  alice = client(app, await tokenFor(app, "alice"));
}, 120_000);

afterAll(() => app?.close());

describe("agent replies", () => {
  it("publishes a document, then on a change request publishes version 2 of the same artifact, pinning addresses", async () => {
    const { conversationId, runId } = await converse(dev, "Write a report titled Q4 outlook");
    const run = await finished(dev, runId);
    expect(run).toMatchObject({ status: "completed", published: [{ version: 1, kind: "document", title: "Q4 outlook", withdrawn: false }] });
    expect(run.usage.modelCalls).toBe(2);
    const artifactId = run.published[0].artifactId;
    expect((await dev.get(`/api/artifacts/${artifactId}`)).body.owner).toBe("dev");

    const change = await dev.post(`/api/conversations/${conversationId}/messages`, { text: "Please change it: add the risks" });
    expect(change.status).toBe(200);
    const second = await finished(dev, change.body.runId);
    expect(second).toMatchObject({ status: "completed", published: [{ artifactId, version: 2 }] });
    const v2 = await dev.get(`/api/artifacts/${artifactId}/versions/2/files/document.md`);
    expect(v2.text ?? JSON.stringify(v2.body)).toContain(`artifact:${artifactId}@1`);

    const conv = await dev.get(`/api/conversations/${conversationId}`);
    expect(conv.body.messages.map((m: any) => m.role)).toEqual(["user", "assistant", "user", "assistant"]);
    expect(conv.body.messages[1].text).toContain(`artifact:${artifactId}@1`);
    expect(conv.body.runs).toHaveLength(2);

    // the same messages a page at a time, each page's token bound to this conversation
    const first = await dev.get(`/api/conversations/${conversationId}/messages?pageSize=3`);
    expect(first.status).toBe(200);
    expect(first.body.data).toEqual(conv.body.messages.slice(0, 3));
    const rest = await dev.get(`/api/conversations/${conversationId}/messages?pageSize=3&nextPageToken=${first.body.nextPageToken}`);
    expect(rest.body).toEqual({ data: conv.body.messages.slice(3) });
    expect((await dev.get(`/api/conversations/${conversationId}/messages`)).body).toEqual({ data: conv.body.messages });
    const other = (await dev.post("/api/agents/assistant/conversations", { title: "other" })).body.conversation.id;
    expect(await dev.get(`/api/conversations/${other}/messages?nextPageToken=${first.body.nextPageToken}`)).toMatchObject({ status: 400, body: { error: { code: "invalid_request", message: expect.stringContaining("another conversation's messages") } } });
    expect((await alice.get(`/api/conversations/${conversationId}/messages`)).status).toBe(404);
  });

  it("hands the deck check's warnings back to the agent", async () => {
    const { runId } = await converse(dev, "Make a deck with small print, titled Board update");
    const run = await finished(dev, runId);
    expect(run.status).toBe("completed");
    const out = await dev.get(`/api/agent-runs/${runId}/output?limit=500`);
    const result = out.body.records.find((r: any) => r.kind === "tool.result").data.result;
    expect(result.deckCheck.checked).toBe(true);
    expect(result.warnings.some((w: any) => w.code === "small_text")).toBe(true);
    const text = out.body.records.filter((r: any) => r.kind === "text").map((r: any) => r.data.delta).join("");
    expect(text).toMatch(/small_text on slide 4/);
  });

  it("tells the agent when a deck was published unchecked (no browser)", async () => {
    app.config.deckChecks = false; // the same config object the artifact store reads at publish time
    try {
      const { runId } = await converse(dev, "Make slides titled Unchecked");
      expect((await finished(dev, runId)).status).toBe("completed");
      const out = await dev.get(`/api/agent-runs/${runId}/output?limit=500`);
      expect(out.body.records.find((r: any) => r.kind === "tool.result").data.result.deckCheck).toEqual({ checked: false, reason: "deck checks are off (SVC_DECK_CHECKS=false)" });
      expect(out.body.records.filter((r: any) => r.kind === "text").map((r: any) => r.data.delta).join("")).toContain("The deck was published unchecked: deck checks are off");
    } finally {
      app.config.deckChecks = true;
    }
  });

  it("keeps what a cancelled reply published", async () => {
    const { runId } = await converse(dev, "Write a document titled Slow one, slowly");
    await eventually(async () => ((await dev.get(`/api/agent-runs/${runId}`)).body.published.length === 1 ? true : undefined), 30_000);
    expect((await dev.post(`/api/agent-runs/${runId}/cancel`, {})).status).toBe(200);
    const run = await finished(dev, runId);
    expect(run.status).toBe("cancelled");
    expect(run.published[0].withdrawn).toBe(false);
    // cancelling again, once it has ended: 409, as for a workflow run
    const again = await dev.post(`/api/agent-runs/${runId}/cancel`, {});
    expect([again.status, again.body.error]).toEqual([409, { code: "conflict", message: `Run ${runId} is not running (it is cancelled)`, details: { status: "cancelled" } }]);
    expect((await dev.get(`/api/artifacts/${run.published[0].artifactId}/versions/1`)).status).toBe(200);
  });

  it("a cancel mid-text answers the run ended: run.finished is its last record, its usage stays, and the conversation takes the next message at once", async () => {
    const { conversationId, runId } = await converse(dev, "Make a deck titled Cancel me, slowly");
    // the model streams a word every 150 ms: cancel once the first words are out
    await eventually(async () => ((await dev.get(`/api/agent-runs/${runId}/output?limit=500`)).body.records.some((r: any) => r.kind === "text") ? true : undefined), 30_000);
    const cancelled = await dev.post(`/api/agent-runs/${runId}/cancel`, {});
    expect([cancelled.status, cancelled.body.status]).toEqual([200, "cancelled"]);
    const usage = cancelled.body.usage;
    // the step heard of the cancel only at a heartbeat Temporal answers: it went on streaming after run.finished
    await new Promise((r) => setTimeout(r, 2_500));
    const records = (await dev.get(`/api/agent-runs/${runId}/output?limit=500`)).body.records as any[];
    expect(records.at(-1)).toMatchObject({ kind: "run.finished", data: { status: "cancelled" } });
    expect(records.filter((r) => r.kind === "tool.call")).toEqual([]);
    expect((await dev.get(`/api/agent-runs/${runId}`)).body).toMatchObject({ status: "cancelled", usage, published: [] });
    const next = await dev.post(`/api/conversations/${conversationId}/messages`, { text: "Never mind" });
    expect(next.status).toBe(200);
    expect((await finished(dev, next.body.runId)).status).toBe("completed");
  });

  it("withdraws what a failed reply published when it is retried, and the retry publishes anew", async () => {
    const { runId } = await converse(dev, "Write a report titled Doomed, then fail");
    const failed = await finished(dev, runId);
    expect(failed.status).toBe("failed");
    // the scripted model's ModelError: the run's error says a model call failed, and so does its output's error record
    expect(failed.error).toEqual({ code: "model_failed", message: expect.stringContaining("failed on purpose") });
    const errors = ((await dev.get(`/api/agent-runs/${runId}/output?limit=500`)).body.records as any[]).filter((r) => r.kind === "error");
    expect(errors.map((r) => r.data)).toEqual([failed.error]);
    const first = failed.published[0];
    expect((await dev.get(`/api/artifacts/${first.artifactId}`)).status).toBe(200);

    const retry = await dev.post(`/api/agent-runs/${runId}/retry`, {});
    expect(retry.status).toBe(200);
    expect((await dev.post(`/api/agent-runs/${runId}/retry`, {})).status).toBe(409);
    const again = await finished(dev, retry.body.runId);
    expect(again).toMatchObject({ status: "completed", retryOf: runId });
    expect(again.published[0].artifactId).not.toBe(first.artifactId);
    for (const path of [`/api/artifacts/${first.artifactId}`, `/api/artifacts/${first.artifactId}/versions/1`]) {
      const gone = await dev.get(path);
      expect(gone.status, path).toBe(404);
      expect(gone.body.error, path).toMatchObject({ code: "not_found", message: expect.stringContaining("was withdrawn"), details: { withdrawn: true } });
    }
    expect((await alice.get(`/api/artifacts/${first.artifactId}`)).body.error.message).toBe(`No artifact "${first.artifactId}"`); // not the owner: nothing said
    expect((await dev.get(`/api/agent-runs/${runId}`)).body).toMatchObject({ retriedBy: retry.body.runId, published: [{ withdrawn: true }] });
  });
});

describe("listing conversations", () => {
  it("pages the caller's conversations, the most recently updated first, with no gaps or repeats; another caller's token is refused", async () => {
    for (let i = 0; i < 3; i++) await dev.post("/api/agents/assistant/conversations", { title: `paged ${i}` });
    const all = (await dev.get("/api/conversations")).body.data as Array<{ id: string; updatedAt: string }>;
    expect(all.length).toBeGreaterThanOrEqual(3);
    expect(all.map((c) => c.updatedAt)).toEqual([...all.map((c) => c.updatedAt)].sort().reverse());
    const paged: string[] = [];
    let token: string | undefined;
    do {
      const page = (await dev.get(`/api/conversations?pageSize=2${token ? `&nextPageToken=${token}` : ""}`)).body;
      expect(page.data.length).toBeLessThanOrEqual(2);
      paged.push(...page.data.map((c: { id: string }) => c.id));
      token = page.nextPageToken;
    } while (token);
    expect(paged).toEqual(all.map((c) => c.id));
    const first = (await dev.get("/api/conversations?pageSize=1")).body.nextPageToken;
    const refused = await alice.get(`/api/conversations?nextPageToken=${first}`);
    expect([refused.status, refused.body.error.message]).toEqual([400, "nextPageToken was answered to another caller: send one your own listing answered"]);
    expect((await alice.get("/api/conversations")).body.data).toEqual([]);
  });
});

describe("who may read what", () => {
  it("lets only the owner read a conversation and its runs, and only holders of use:agent start one", async () => {
    const { conversationId, runId } = await converse(dev, "hello");
    await finished(dev, runId);
    expect((await alice.get(`/api/agent-runs/${runId}`)).status).toBe(404);
    expect((await alice.get(`/api/conversations/${conversationId}`)).status).toBe(404);
    expect((await alice.post(`/api/conversations/${conversationId}/messages`, { text: "hi" })).status).toBe(404);
    const auditor = client(app, await tokenFor(app, "auditor"));
    expect((await auditor.post("/api/agents/assistant/conversations", { message: "hi" })).status).toBe(403);
    expect((await dev.post("/api/agents/nobody/conversations", {})).status).toBe(404);
    const project = await dev.get("/api/project");
    expect(project.body.agents).toEqual([expect.objectContaining({ id: "assistant", model: "scripted", tools: ["read_objects", "run_action", "publish_artifact", "publish_version", "read_artifact"] })]);
  });

  it("runs an action through the run_action tool only with what POST /api/actions asks: the action's permission, and viewing its subject's type", async () => {
    const tools = app.container.resolve(AgentTools);
    const call = { id: "call-1", name: "run_action", input: { actionId: "invoice.approve", subject: { objectTypeId: "invoice", primaryId: "inv_1005" }, params: {} } };
    const as = (...permissions: string[]) => ({ principal: { type: "user" as const, id: "tool-user", permissions: new Set(permissions) }, agentId: "assistant", runId: "tool-check", step: 1, index: 0 });
    await expect(tools.execute(call, as("view:object:invoice"))).rejects.toMatchObject({ code: "forbidden", message: 'You may not run action "invoice.approve"' });
    await expect(tools.execute(call, as("run:action:invoice.approve"))).rejects.toMatchObject({ code: "forbidden", message: 'You may not view objects of type "invoice"' });
    // with both it runs (the seed's inv_1005 is void: the action's own refusal, recorded as a failed run)
    expect(await tools.execute(call, as("run:action:invoice.approve", "view:object:invoice"))).toMatchObject({ actionId: "invoice.approve", status: "failed", error: { message: "Invoice inv_1005 is void and cannot be approved" } });
  });
});

describe("a worker killed in the middle of a reply", () => {
  it("resumes on restart over the same data directory and publishes nothing twice", async () => {
    const dataDir = tempDir();
    const port = await freePort();
    let child = await startFixtureProcess("sandbox-server.ts", dataDir, port);
    const c = client(() => ({ url: `http://127.0.0.1:${port}` }) as App);
    const { runId } = await converse(c, "Write a document titled Survivor, slowly");
    // killed once the document is published, while the closing text streams
    await eventually(async () => ((await c.get(`/api/agent-runs/${runId}`)).body.published?.length === 1 ? true : undefined), 30_000);
    child.kill("SIGKILL");
    await child.exited;
    child = await startFixtureProcess("sandbox-server.ts", dataDir, port);
    try {
      const run = await finished(c, runId);
      expect(run.status).toBe("completed");
      expect(run.published).toHaveLength(1);
      const versions = await c.get(`/api/artifacts/${run.published[0].artifactId}/versions`);
      expect(versions.body.data.map((v: any) => v.version)).toEqual([1]);
      const list = await c.get("/api/artifacts?kind=document");
      expect(list.body.data.filter((a: any) => a.title.startsWith("Survivor"))).toHaveLength(1);
      const out = await c.get(`/api/agent-runs/${runId}/output?limit=500`);
      expect(out.body.records.filter((r: any) => r.kind === "artifact.published")).toHaveLength(1);
    } finally {
      child.kill("SIGTERM");
      await child.exited;
    }
  }, 120_000);
});

it("stops a reply whose owner may no longer use its agent at its next model call (spec 5); its owner may still cancel it", { timeout: 90_000 }, async () => {
  // the auditor's own conversation with the assistant, whose use the auditor does not have (taken away
  // since): rows as an earlier version of the project made them, queued as the service queues a reply
  const runs = app.container.resolve(AgentRuns);
  const { conversationId, runId } = await insertAgentRun(app.container.resolve(Database), "auditor", "How many open invoices?");
  await (runs as unknown as { queue(runId: string, conversationId: string): Promise<void> }).queue(runId, conversationId);
  const row = await eventually(async () => {
    const r = await runs.runRow(runId);
    return r.status === "queued" || r.status === "running" ? undefined : r;
  }, 60_000);
  expect(row.status).toBe("failed");
  expect(JSON.parse(row.error!)).toMatchObject({ code: "agent_failed", message: 'auditor may no longer use agent "assistant" (use:agent:assistant): the reply stopped' });
  expect(JSON.parse(row.usage)).toMatchObject({ modelCalls: 0 });
  // reading it is refused (403), stopping it is not: it has ended, so 409 as for any ended run
  const auditor = client(app, await tokenFor(app, "auditor"));
  expect((await auditor.get(`/api/agent-runs/${runId}`)).status).toBe(403);
  expect((await auditor.post(`/api/agent-runs/${runId}/cancel`, {})).body.error.code).toBe("conflict");
});

it("fails a reply that needs more model calls than its agent allows with the step_limit code", { timeout: 120_000 }, async () => {
  // the sandbox's assistant allowed one model call: a report takes two (the publish, then the answer)
  const project = defineProject({ ...sandboxProject, connectors: sandboxProject.connectors.map((c) => (c === billing ? { ...billing, agents: { assistant: { ...billing.agents.assistant, maxSteps: 1 } } } : c)) });
  const limited = await startApp({ project });
  try {
    const c = client(limited);
    const { runId } = await converse(c, "Write a report titled Too long");
    const run = await finished(c, runId);
    expect(run).toMatchObject({ status: "failed", error: { code: "step_limit", message: "The reply needed more than 1 model calls" } });
    const records = (await c.get(`/api/agent-runs/${runId}/output?limit=500`)).body.records as any[];
    expect(records.filter((r) => r.kind === "error").map((r) => r.data)).toEqual([run.error]);
  } finally {
    await limited.close();
  }
});
