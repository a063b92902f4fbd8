/**
 * Real model providers behind the agents' `Model` interface (spec 4.3; issue 13), through the Vercel AI
 * SDK v6 (`streamText`, one step at a time: the runtime executes the tools, so they are given to the SDK
 * without `execute`).
 *
 * Configuration (environment, read by the caller and passed to `modelFromEnv`):
 *
 * | `SVC_AGENT_MODEL` | Model |
 * |---|---|
 * | unset, `scripted` | `ScriptedModel` (no network) |
 * | `openai-compatible:<model>` | an OpenAI-compatible chat endpoint at `SVC_AGENT_BASE_URL` (required), key `SVC_AGENT_API_KEY` (optional) |
 * | `anthropic:<model>` | Anthropic, key `ANTHROPIC_API_KEY`, else `SVC_AGENT_API_KEY` (one is required) |
 */
import { createRequire } from "node:module";
import type { JSONValue, LanguageModel, ModelMessage as AiModelMessage, ToolResultPart, ToolSet } from "ai";
import { abortError, ModelError, type Model, type ModelMessage, type ModelStep, type ToolCall, type ToolDefinition } from "./model";
import { ScriptedModel } from "./scripted";

/**
 * The AI SDK and its providers, required when a provider's model is first made or used: their load
 * (~0.25 s) stays out of the service's start-up, and the scripted default never loads them.
 */
const load = createRequire(import.meta.url);
const sdk = () => load("ai") as typeof import("ai");

/** The environment variables `modelFromEnv` reads (all optional). */
export interface ModelEnv {
  /** `scripted` (default), `openai-compatible:<model>` or `anthropic:<model>`. */
  SVC_AGENT_MODEL?: string;
  /** The OpenAI-compatible endpoint's base URL, e.g. `http://127.0.0.1:11434/v1` (required for `openai-compatible:`). */
  SVC_AGENT_BASE_URL?: string;
  /** The key sent to the OpenAI-compatible endpoint, and Anthropic's when `ANTHROPIC_API_KEY` is unset. */
  SVC_AGENT_API_KEY?: string;
  /** Anthropic's key (wins over `SVC_AGENT_API_KEY` for `anthropic:`). */
  ANTHROPIC_API_KEY?: string;
}

/** Options of `aiSdkModel`. */
export interface AiSdkModelOptions {
  /** Retries the AI SDK makes itself before a call starts streaming (default 2; 0 leaves retrying to the runtime). */
  maxRetries?: number;
}

const FORMS = `"scripted", "openai-compatible:<model>" (with SVC_AGENT_BASE_URL) or "anthropic:<model>"`;

/**
 * The agents' model as configured by `env` (see the module comment for the variables).
 * Nothing is contacted here: a provider is first called by `Model.step`.
 * @throws Error naming the variable when the value is not one of the accepted forms, when
 *   `openai-compatible:` has no `SVC_AGENT_BASE_URL`, or when `anthropic:` has no key
 */
export function modelFromEnv(env: ModelEnv): Model {
  const spec = env.SVC_AGENT_MODEL?.trim() ?? "";
  if (spec === "" || spec === "scripted") return new ScriptedModel();
  const match = /^(openai-compatible|anthropic):(.+)$/.exec(spec);
  const name = match?.[2]?.trim();
  if (!match || !name) throw new Error(`SVC_AGENT_MODEL="${spec}" is not a model this service knows; use ${FORMS}`);
  if (match[1] === "openai-compatible") {
    const baseURL = env.SVC_AGENT_BASE_URL?.trim();
    if (!baseURL) throw new Error(`SVC_AGENT_MODEL="${spec}" needs SVC_AGENT_BASE_URL: the OpenAI-compatible endpoint's base URL (e.g. http://127.0.0.1:11434/v1)`);
    const provider = (load("@ai-sdk/openai-compatible") as typeof import("@ai-sdk/openai-compatible")).createOpenAICompatible({ name: "openai-compatible", baseURL, apiKey: env.SVC_AGENT_API_KEY || undefined, includeUsage: true });
    return aiSdkModel(`openai-compatible:${name}`, provider.chatModel(name));
  }
  const apiKey = env.ANTHROPIC_API_KEY || env.SVC_AGENT_API_KEY;
  if (!apiKey) throw new Error(`SVC_AGENT_MODEL="${spec}" needs ANTHROPIC_API_KEY (or SVC_AGENT_API_KEY)`);
  return aiSdkModel(`anthropic:${name}`, (load("@ai-sdk/anthropic") as typeof import("@ai-sdk/anthropic")).createAnthropic({ apiKey })(name));
}

/**
 * A `Model` over any AI SDK v6 language model (a provider's, or `MockLanguageModelV3` in tests).
 * One `step` is one `streamText` call limited to one step (`stopWhen: stepCountIs(1)`), tools without
 * `execute`: text deltas go to `onText` in order (awaited), tool calls come back with their parsed input
 * (a call the SDK could not parse, or of an unknown tool, comes back as it is, for the runtime to answer
 * with an error), usage is the step's (missing counts are 0).
 * @param id the model's id, e.g. `anthropic:claude-sonnet-4-5`
 * @throws (from `step`) ModelError for provider failures (retryable for 429, 5xx and network errors);
 *   an error named `AbortError` when `request.signal` aborts
 */
export function aiSdkModel(id: string, languageModel: LanguageModel, options: AiSdkModelOptions = {}): Model {
  return {
    id,
    async step(request, onText): Promise<ModelStep> {
      if (request.signal?.aborted) throw abortError();
      let text = "";
      const toolCalls: ToolCall[] = [];
      let usage = { inputTokens: 0, outputTokens: 0 };
      let finishReason: ModelStep["finishReason"] = "other";
      try {
        const result = sdk().streamText({
          model: languageModel,
          system: request.system || undefined,
          messages: toAiMessages(request.messages),
          tools: toAiTools(request.tools),
          stopWhen: sdk().stepCountIs(1),
          abortSignal: request.signal,
          maxRetries: options.maxRetries ?? 2,
          onError: () => {}, // the error also arrives as an `error` part, thrown below
        });
        for await (const part of result.fullStream) {
          if (part.type === "text-delta") {
            if (part.text === "") continue;
            text += part.text;
            await onText(part.text);
          } else if (part.type === "tool-call") {
            if (!part.providerExecuted) toolCalls.push({ id: part.toolCallId, name: part.toolName, input: part.input });
          } else if (part.type === "finish-step") {
            usage = { inputTokens: part.usage.inputTokens ?? 0, outputTokens: part.usage.outputTokens ?? 0 };
            finishReason = part.finishReason === "stop" || part.finishReason === "tool-calls" || part.finishReason === "length" ? part.finishReason : "other";
          } else if (part.type === "error") {
            throw part.error;
          } else if (part.type === "abort") {
            throw abortError();
          }
        }
      } catch (error) {
        if (request.signal?.aborted || (error instanceof Error && error.name === "AbortError")) throw abortError();
        throw toModelError(id, error);
      }
      return { text, toolCalls, usage, finishReason };
    },
  };
}

/**
 * Our messages as AI SDK v6 `ModelMessage`s: `user` → user text; `assistant` → a text part (when not
 * empty) and `tool-call` parts (`toolCallId`, `toolName`, `input`), dropped when it has neither (providers
 * refuse empty messages); consecutive `tool` messages → one `tool` message of `tool-result` parts with
 * `output: { type: "json", value }` (`{ type: "error-json", value }` when `isError`), the value made
 * JSON-safe (`undefined` → `null`, like `JSON.stringify`).
 */
export function toAiMessages(messages: ModelMessage[]): AiModelMessage[] {
  const out: AiModelMessage[] = [];
  for (const m of messages) {
    if (m.role === "user") out.push({ role: "user", content: m.text });
    else if (m.role === "assistant") {
      const content = [
        ...(m.text !== "" ? [{ type: "text" as const, text: m.text }] : []),
        ...m.toolCalls.map((c) => ({ type: "tool-call" as const, toolCallId: c.id, toolName: c.name, input: c.input })),
      ];
      if (content.length > 0) out.push({ role: "assistant", content });
    } else {
      const value = jsonValue(m.result);
      const part: ToolResultPart = { type: "tool-result", toolCallId: m.toolCallId, toolName: m.toolName, output: m.isError ? { type: "error-json", value } : { type: "json", value } };
      const last = out.at(-1);
      if (last?.role === "tool") last.content.push(part);
      else out.push({ role: "tool", content: [part] });
    }
  }
  return out;
}

/** Our tool definitions as an AI SDK tool set (JSON Schema through `jsonSchema()`, no `execute`); undefined when there are none. */
function toAiTools(tools: ToolDefinition[]): ToolSet | undefined {
  if (tools.length === 0) return undefined;
  return Object.fromEntries(tools.map((t) => [t.name, sdk().tool({ description: t.description, inputSchema: sdk().jsonSchema(t.inputSchema as Parameters<typeof import("ai").jsonSchema>[0]) })]));
}

/** A JSON-safe copy of a tool result (what `JSON.stringify` keeps; `undefined` → `null`). */
function jsonValue(value: unknown): JSONValue {
  const text = JSON.stringify(value);
  return text === undefined ? null : (JSON.parse(text) as JSONValue);
}

/**
 * A provider failure as a `ModelError`: retryable for HTTP 429 and 5xx, the SDK's own retryable call
 * errors, and network failures (no HTTP status); not for other statuses or anything else.
 */
function toModelError(id: string, error: unknown): ModelError {
  if (error instanceof ModelError) return error;
  const cause = sdk().RetryError.isInstance(error) ? (error.lastError ?? error) : error;
  if (sdk().APICallError.isInstance(cause)) {
    const status = cause.statusCode;
    const retryable = status === undefined ? cause.isRetryable : status === 429 || status >= 500 || cause.isRetryable;
    return new ModelError(`The model ${id} failed${status ? ` (HTTP ${status})` : ""}: ${cause.message}`, retryable, { cause: error });
  }
  const message = cause instanceof Error ? cause.message : String(cause);
  return new ModelError(`The model ${id} failed: ${message}`, isNetworkError(cause), { cause: error });
}

/** A fetch or socket failure (nothing answered): `fetch failed`, connection refused or reset, DNS, timeouts. */
function isNetworkError(error: unknown): boolean {
  const codes = ["ECONNREFUSED", "ECONNRESET", "ENOTFOUND", "EAI_AGAIN", "ETIMEDOUT", "EPIPE", "UND_ERR_SOCKET", "UND_ERR_CONNECT_TIMEOUT"];
  for (let e: unknown = error, depth = 0; e instanceof Error && depth < 4; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if ((typeof code === "string" && codes.includes(code)) || (e instanceof TypeError && /fetch failed|network/i.test(e.message))) return true;
  }
  return false;
}
