/**
 * The agents' model interface (spec 1, 4.3): one small seam between a reply run and whatever produces
 * the words. Messages and tool definitions go in; streamed text and tool calls come out, one model call
 * (a "step") at a time. The runtime executes the tool calls itself and calls `step` again with the
 * results appended, until a step asks for no tool.
 *
 * Implementations: `ScriptedModel` (`./scripted.ts`, deterministic, no network: the sandbox's default
 * and the tests'), and the AI SDK adapter for real providers (`./providers.ts`, chosen by environment).
 *
 * Floor 2 (infrastructure): this module imports nothing.
 */

/** A tool the model may call. `inputSchema` is a JSON Schema object (draft 7 subset) for the call's input. */
export interface ToolDefinition {
  /** The tool's name as the model writes it, e.g. `publish_artifact`. */
  name: string;
  /** What the tool does, for the model. */
  description: string;
  /** A JSON Schema object describing the input (`{ type: "object", properties, required }`). */
  inputSchema: Record<string, unknown>;
}

/** One tool call the model asked for. `id` matches the later `tool` message's `toolCallId`. */
export interface ToolCall {
  /** Unique within the conversation (providers' ids, or `call_<step>_<i>` for the scripted model). */
  id: string;
  name: string;
  /** The parsed input (normally an object; a provider's malformed JSON arrives as its raw string). */
  input: unknown;
}

/**
 * One message of a conversation, oldest first. The system prompt is not a message (see `ModelRequest.system`).
 * - `user`: what the person wrote.
 * - `assistant`: what a step answered: its text (may be empty) and the tool calls it asked for.
 * - `tool`: the result of one tool call, JSON-serializable; `isError` when the tool failed and `result`
 *   says why.
 */
export type ModelMessage =
  | { role: "user"; text: string }
  | { role: "assistant"; text: string; toolCalls: ToolCall[] }
  | { role: "tool"; toolCallId: string; toolName: string; result: unknown; isError?: boolean };

/** The input of one model call. */
export interface ModelRequest {
  /** The system prompt: the agent's instructions plus the runtime's rules (e.g. pin `@<version>`). */
  system: string;
  /** The conversation so far, oldest first. */
  messages: ModelMessage[];
  /** The tools the model may call in this step (possibly none). */
  tools: ToolDefinition[];
  /** Aborts the call: the step rejects with an error named `AbortError`. */
  signal?: AbortSignal;
  /** true when this reply retries a failed one */
  retry?: boolean;
}

/** Token counts of one step (the scripted model counts words). */
export interface ModelUsage {
  inputTokens: number;
  outputTokens: number;
}

/**
 * The answer of one step: the whole text (the concatenation of the deltas given to `onText`), the tool
 * calls to run (empty when the reply is done), usage, and why the model stopped (`tool-calls` when it
 * waits for tool results; `other` covers content filters and provider-specific reasons).
 */
export interface ModelStep {
  text: string;
  toolCalls: ToolCall[];
  usage: ModelUsage;
  finishReason: "stop" | "tool-calls" | "length" | "other";
}

/** A language model as the agents' runtime sees it. */
export interface Model {
  /** "scripted", "openai-compatible:<model>", "anthropic:<model>" */
  readonly id: string;
  /**
   * One model call: streams text deltas through onText as they arrive (awaited in order, so a slow
   * consumer slows the stream down), answers the whole step.
   * @throws ModelError when the model or its provider fails (`retryable` says whether trying again may help)
   * @throws an error named `AbortError` when `request.signal` aborts the call
   */
  step(request: ModelRequest, onText: (delta: string) => void | Promise<void>): Promise<ModelStep>;
}

/**
 * A failed model call. `retryable` is true for failures that may pass when tried again later
 * (rate limits: HTTP 429, server errors: 5xx, network errors), false otherwise (bad request, bad key,
 * a scripted failure). The original error, if any, is the `cause`.
 */
export class ModelError extends Error {
  constructor(
    message: string,
    readonly retryable: boolean,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = "ModelError";
  }
}

/**
 * The error a model call rejects with when its `AbortSignal` fires: an `Error` named `AbortError`
 * (as `fetch` and the AI SDK name theirs), so callers test `error.name === "AbortError"`.
 */
export function abortError(message = "The model call was aborted"): Error {
  const error = new Error(message);
  error.name = "AbortError";
  return error;
}
