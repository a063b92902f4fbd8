/**
 * An agent reply through a provider over HTTP (`SVC_AGENT_MODEL=openai-compatible:<model>`): the app
 * against a local server speaking OpenAI's chat-completions streaming protocol (server-sent events), the
 * one part that cannot run here being the model itself. Checks what the runtime sends (the agent's
 * instructions and the runtime's rules, pinning `@<version>` among them, spec 4.3; the tools; the key)
 * and that the streamed text becomes the reply.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { client, eventually, startApp } from "./helpers";
import type { App } from "../core/app";

/** The requests the fake provider received: their path, Authorization header and JSON body. */
const received: Array<{ path: string; authorization?: string; body: any }> = [];
let provider: http.Server;
let app: App;

/** One chat-completions chunk (OpenAI's `chat.completion.chunk`). */
const chunk = (choices: unknown[], extra: Record<string, unknown> = {}) => `data: ${JSON.stringify({ id: "chatcmpl-1", object: "chat.completion.chunk", created: 1_764_000_000, model: "local-test", choices, ...extra })}\n\n`;

beforeAll(async () => {
  provider = http.createServer((req, res) => {
    let raw = "";
    req.on("data", (d) => (raw += d));
    req.on("end", () => {
      received.push({ path: req.url ?? "", authorization: req.headers.authorization, body: JSON.parse(raw) });
      res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
      res.write(chunk([{ index: 0, delta: { role: "assistant", content: "Hello " }, finish_reason: null }]));
      res.write(chunk([{ index: 0, delta: { content: "from the provider." }, finish_reason: null }]));
      res.write(chunk([{ index: 0, delta: {}, finish_reason: "stop" }]));
      res.write(chunk([], { usage: { prompt_tokens: 321, completion_tokens: 5, total_tokens: 326 } }));
      res.end("data: [DONE]\n\n");
    });
  });
  await new Promise<void>((resolve) => provider.listen(0, "127.0.0.1", resolve));
  const base = `http://127.0.0.1:${(provider.address() as AddressInfo).port}/v1`;
  app = await startApp({ env: { SVC_AGENT_MODEL: "openai-compatible:local-test", SVC_AGENT_BASE_URL: base, SVC_AGENT_API_KEY: "sk-local-test" } });
}, 120_000);
afterAll(async () => {
  await app?.close();
  await new Promise((resolve) => provider?.close(resolve));
});

describe("an agent reply through an OpenAI-compatible provider", () => {
  it("sends the agent's instructions with the runtime's rules (pin @<version>), the conversation and the tools, and streams the answer into the reply", { timeout: 90_000 }, async () => {
    const dev = client(app);
    const started = await dev.post("/api/agents/assistant/conversations", { message: "How many open invoices are there?" });
    expect(started.status).toBe(200);
    const run = await eventually(async () => {
      const r = (await dev.get(`/api/agent-runs/${started.body.runId}`)).body;
      return r.status === "queued" || r.status === "running" ? undefined : r;
    }, 60_000);
    expect(run.error).toBeUndefined();
    expect(run).toMatchObject({ status: "completed", usage: { inputTokens: 321, outputTokens: 5, modelCalls: 1 } });

    expect(received).toHaveLength(1);
    const [request] = received;
    expect(request!.path).toBe("/v1/chat/completions");
    expect(request!.authorization).toBe("Bearer sk-local-test");
    expect(request!.body).toMatchObject({ model: "local-test", stream: true });
    const [system, ...rest] = request!.body.messages as Array<{ role: string; content: string }>;
    expect(system!.role).toBe("system");
    expect(system!.content).toContain("Pin versions in every artifact address you write: artifact:<id>@<version>.");
    expect(system!.content).toContain("publish the next version of that same artifact (publish_version), never a new one");
    expect(rest).toEqual([{ role: "user", content: "How many open invoices are there?" }]);
    expect((request!.body.tools as Array<{ function: { name: string } }>).map((t) => t.function.name)).toEqual(["read_objects", "run_action", "publish_artifact", "publish_version", "read_artifact"]);

    const conversation = (await dev.get(`/api/conversations/${started.body.conversation.id}`)).body;
    expect(conversation.messages.map((m: { role: string; text: string }) => [m.role, m.text])).toEqual([
      ["user", "How many open invoices are there?"],
      ["assistant", "Hello from the provider."],
    ]);
  });
});
