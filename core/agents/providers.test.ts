import { APICallError, simulateReadableStream } from "ai";
import { MockLanguageModelV3 } from "ai/test";
import { describe, expect, it } from "vitest";
import { ModelError, type ModelMessage, type ToolDefinition } from "./model";
import { aiSdkModel, modelFromEnv, toAiMessages } from "./providers";
import { ScriptedModel } from "./scripted";

const TOOLS: ToolDefinition[] = [
  {
    name: "read_objects",
    description: "Reads objects of a type the user may see.",
    inputSchema: { type: "object", properties: { objectTypeId: { type: "string" }, pageSize: { type: "number" } }, required: ["objectTypeId"] },
  },
];
/** The provider-level stream part (from `@ai-sdk/provider`, reached through the mock's type). */
type LanguageModelV3StreamPart = Awaited<ReturnType<MockLanguageModelV3["doStream"]>>["stream"] extends ReadableStream<infer T> ? T : never;
const USAGE = { inputTokens: { total: 42, noCache: 42, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: 7, text: 7, reasoning: 0 } };

/** A mock provider model that streams `chunks` (one stream per call). */
function mock(chunks: LanguageModelV3StreamPart[], chunkDelayInMs: number | null = null) {
  return new MockLanguageModelV3({ doStream: async () => ({ stream: simulateReadableStream({ chunks, chunkDelayInMs, initialDelayInMs: null }) }) });
}

const textThenToolCall: LanguageModelV3StreamPart[] = [
  { type: "stream-start", warnings: [] },
  { type: "text-start", id: "t1" },
  { type: "text-delta", id: "t1", delta: "Let me " },
  { type: "text-delta", id: "t1", delta: "look up " },
  { type: "text-delta", id: "t1", delta: "the invoices." },
  { type: "text-end", id: "t1" },
  { type: "tool-call", toolCallId: "toolu_1", toolName: "read_objects", input: '{"objectTypeId":"invoice","pageSize":5}' },
  { type: "finish", finishReason: { unified: "tool-calls", raw: "tool_use" }, usage: USAGE },
];

describe("aiSdkModel (the AI SDK v6 adapter)", () => {
  it("forwards text deltas in order and answers the tool call with parsed input, usage and finish reason", async () => {
    const provider = mock(textThenToolCall);
    const deltas: string[] = [];
    const step = await aiSdkModel("anthropic:test", provider).step({ system: "Be brief.", messages: [{ role: "user", text: "How many invoices?" }], tools: TOOLS }, async (d) => {
      await new Promise((r) => setTimeout(r, 1));
      deltas.push(d);
    });
    expect(deltas).toEqual(["Let me ", "look up ", "the invoices."]);
    expect(step).toEqual({
      text: "Let me look up the invoices.",
      toolCalls: [{ id: "toolu_1", name: "read_objects", input: { objectTypeId: "invoice", pageSize: 5 } }],
      usage: { inputTokens: 42, outputTokens: 7 },
      finishReason: "tool-calls",
    });
    expect(provider.doStreamCalls).toHaveLength(1); // one step: no automatic continuation
    const call = provider.doStreamCalls[0]!;
    expect(call.tools).toEqual([{ type: "function", name: "read_objects", description: TOOLS[0]!.description, inputSchema: TOOLS[0]!.inputSchema }]);
    expect(call.prompt).toEqual([
      { role: "system", content: "Be brief." },
      { role: "user", content: [{ type: "text", text: "How many invoices?" }] },
    ]);
  });

  it("answers a text-only step with finish reason stop, and passes no tools when there are none", async () => {
    const provider = mock([
      { type: "text-start", id: "t" },
      { type: "text-delta", id: "t", delta: "Hi" },
      { type: "text-end", id: "t" },
      { type: "finish", finishReason: { unified: "stop", raw: "end_turn" }, usage: USAGE },
    ]);
    const step = await aiSdkModel("x", provider).step({ system: "", messages: [{ role: "user", text: "hello" }], tools: [] }, () => {});
    expect(step).toMatchObject({ text: "Hi", toolCalls: [], finishReason: "stop" });
    expect(provider.doStreamCalls[0]!.tools).toBeUndefined();
    expect(provider.doStreamCalls[0]!.prompt[0]).toEqual({ role: "user", content: [{ type: "text", text: "hello" }] });
  });

  it("hands a call to an unknown tool or with unparsable input back as it is, for the runtime to answer", async () => {
    const provider = mock([
      { type: "tool-call", toolCallId: "c1", toolName: "no_such_tool", input: "{}" },
      { type: "tool-call", toolCallId: "c2", toolName: "read_objects", input: "{oops" },
      { type: "finish", finishReason: { unified: "tool-calls", raw: undefined }, usage: USAGE },
    ]);
    const step = await aiSdkModel("x", provider).step({ system: "", messages: [{ role: "user", text: "go" }], tools: TOOLS }, () => {});
    expect(step.toolCalls).toEqual([
      { id: "c1", name: "no_such_tool", input: {} },
      { id: "c2", name: "read_objects", input: "{oops" },
    ]);
  });

  it("sends a conversation with tool calls and results as the provider's prompt", async () => {
    const provider = mock(textThenToolCall);
    const messages: ModelMessage[] = [
      { role: "user", text: "Publish a report" },
      { role: "assistant", text: "Publishing.", toolCalls: [{ id: "c1", name: "publish_artifact", input: { kind: "document", title: "R" } }, { id: "c2", name: "read_objects", input: { objectTypeId: "invoice" } }] },
      { role: "tool", toolCallId: "c1", toolName: "publish_artifact", result: { address: "artifact:art_1@1", version: 1, warnings: undefined } },
      { role: "tool", toolCallId: "c2", toolName: "read_objects", result: { code: "forbidden", message: "No access" }, isError: true },
    ];
    await aiSdkModel("x", provider).step({ system: "S", messages, tools: TOOLS }, () => {});
    expect(provider.doStreamCalls[0]!.prompt).toMatchObject([
      { role: "system", content: "S" },
      { role: "user", content: [{ type: "text", text: "Publish a report" }] },
      {
        role: "assistant",
        content: [
          { type: "text", text: "Publishing." },
          { type: "tool-call", toolCallId: "c1", toolName: "publish_artifact", input: { kind: "document", title: "R" } },
          { type: "tool-call", toolCallId: "c2", toolName: "read_objects", input: { objectTypeId: "invoice" } },
        ],
      },
      {
        role: "tool",
        content: [
          { type: "tool-result", toolCallId: "c1", toolName: "publish_artifact", output: { type: "json", value: { address: "artifact:art_1@1", version: 1 } } },
          { type: "tool-result", toolCallId: "c2", toolName: "read_objects", output: { type: "error-json", value: { code: "forbidden", message: "No access" } } },
        ],
      },
    ]);
  });

  it("turns provider failures into ModelError: retryable for 429, 5xx and the network, not for 4xx", async () => {
    const failing = (error: unknown) => new MockLanguageModelV3({ doStream: async () => Promise.reject(error) });
    const apiError = (statusCode: number) =>
      new APICallError({ message: `status ${statusCode}`, url: "https://example.invalid", requestBodyValues: {}, statusCode, responseHeaders: { "retry-after-ms": "1" } });
    const run = (error: unknown) => aiSdkModel("openai-compatible:m", failing(error), { maxRetries: 0 }).step({ system: "", messages: [{ role: "user", text: "x" }], tools: [] }, () => {}).catch((e: unknown) => e);
    for (const [error, retryable] of [[apiError(429), true], [apiError(503), true], [apiError(401), false], [apiError(400), false], [new TypeError("fetch failed"), true], [new Error("something else"), false]] as const) {
      const got = await run(error);
      expect(got).toBeInstanceOf(ModelError);
      expect((got as ModelError).retryable).toBe(retryable);
      expect((got as ModelError).message).toContain("openai-compatible:m");
    }
    // after the SDK's own retries give up (one here, 1 ms later as the header asks), the last error decides
    const flaky = failing(apiError(500));
    expect(await aiSdkModel("m", flaky, { maxRetries: 1 }).step({ system: "", messages: [{ role: "user", text: "x" }], tools: [] }, () => {}).catch((e: unknown) => e)).toMatchObject({ name: "ModelError", retryable: true, message: "The model m failed (HTTP 500): status 500" });
    expect(flaky.doStreamCalls).toHaveLength(2);
  });

  it("throws an error part of the stream as a ModelError, after the text that came before it", async () => {
    const deltas: string[] = [];
    const provider = mock([
      { type: "text-start", id: "t" },
      { type: "text-delta", id: "t", delta: "partial" },
      { type: "error", error: new Error("overloaded") },
    ]);
    const error = await aiSdkModel("x", provider).step({ system: "", messages: [{ role: "user", text: "x" }], tools: [] }, (d) => void deltas.push(d)).catch((e: unknown) => e);
    expect(deltas).toEqual(["partial"]);
    expect(error).toMatchObject({ name: "ModelError", message: "The model x failed: overloaded" });
  });

  it("stops with an AbortError when the signal fires mid-stream", async () => {
    const controller = new AbortController();
    const deltas: string[] = [];
    const provider = mock(textThenToolCall, 30);
    const run = aiSdkModel("x", provider).step({ system: "", messages: [{ role: "user", text: "x" }], tools: TOOLS, signal: controller.signal }, (d) => {
      deltas.push(d);
      controller.abort();
    });
    await expect(run).rejects.toMatchObject({ name: "AbortError" });
    expect(deltas).toEqual(["Let me "]);
  });
});

describe("toAiMessages", () => {
  it("merges consecutive tool results, drops empty assistant messages and makes results JSON-safe", () => {
    expect(
      toAiMessages([
        { role: "user", text: "hi" },
        { role: "assistant", text: "", toolCalls: [] },
        { role: "assistant", text: "", toolCalls: [{ id: "a", name: "t", input: {} }] },
        { role: "tool", toolCallId: "a", toolName: "t", result: undefined },
        { role: "tool", toolCallId: "b", toolName: "t", result: "plain text", isError: false },
        { role: "assistant", text: "done", toolCalls: [] },
      ]),
    ).toEqual([
      { role: "user", content: "hi" },
      { role: "assistant", content: [{ type: "tool-call", toolCallId: "a", toolName: "t", input: {} }] },
      {
        role: "tool",
        content: [
          { type: "tool-result", toolCallId: "a", toolName: "t", output: { type: "json", value: null } },
          { type: "tool-result", toolCallId: "b", toolName: "t", output: { type: "json", value: "plain text" } },
        ],
      },
      { role: "assistant", content: [{ type: "text", text: "done" }] },
    ]);
  });
});

describe("modelFromEnv", () => {
  it("defaults to the scripted model", () => {
    expect(modelFromEnv({})).toBeInstanceOf(ScriptedModel);
    expect(modelFromEnv({ SVC_AGENT_MODEL: "scripted" }).id).toBe("scripted");
    expect(modelFromEnv({ SVC_AGENT_MODEL: " " }).id).toBe("scripted");
  });

  it("builds provider models without contacting them", () => {
    expect(modelFromEnv({ SVC_AGENT_MODEL: "openai-compatible:llama3.1", SVC_AGENT_BASE_URL: "http://127.0.0.1:9/v1" }).id).toBe("openai-compatible:llama3.1");
    expect(modelFromEnv({ SVC_AGENT_MODEL: "anthropic:claude-sonnet-4-5", ANTHROPIC_API_KEY: "k" }).id).toBe("anthropic:claude-sonnet-4-5");
    expect(modelFromEnv({ SVC_AGENT_MODEL: "anthropic:claude-sonnet-4-5", SVC_AGENT_API_KEY: "k" }).id).toBe("anthropic:claude-sonnet-4-5");
  });

  it("refuses bad values with a message naming the variable and the accepted forms", () => {
    expect(() => modelFromEnv({ SVC_AGENT_MODEL: "openai-compatible:llama3.1" })).toThrow(/SVC_AGENT_BASE_URL/);
    expect(() => modelFromEnv({ SVC_AGENT_MODEL: "anthropic:claude-sonnet-4-5" })).toThrow(/ANTHROPIC_API_KEY/);
    for (const value of ["gpt-4o", "openai:gpt-4o", "anthropic:", "Scripted"]) {
      expect(() => modelFromEnv({ SVC_AGENT_MODEL: value, SVC_AGENT_BASE_URL: "http://x", ANTHROPIC_API_KEY: "k" })).toThrow(
        /SVC_AGENT_MODEL=.*"scripted", "openai-compatible:<model>" \(with SVC_AGENT_BASE_URL\) or "anthropic:<model>"/,
      );
    }
  });
});
