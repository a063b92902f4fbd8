import * as v from "valibot";
import { AgentOutput, AgentRunStateSchema, AgentRuns, ConversationMessageSchema, ConversationSchema, definePlugin } from "../../core/plugin-api";
import { agentsSocket } from "./socket";

const RunParams = v.object({ runId: v.pipe(v.string(), v.description("`arun_…`")) });
const Message = v.pipe(v.string(), v.trim(), v.minLength(1, "a message must not be empty"), v.maxLength(20_000, "a message has at most 20,000 characters"));
const Queued = v.object({ runId: v.string(), conversationId: v.string() });
const OWNER_ONLY = "Only the conversation's owner reads it and its runs (for everyone else they do not exist: 404), while they may use its agent (`use:agent:<id>`; 403 once that was taken from them).";

/**
 * Agents (spec 1, 4.3, 5, 6.5): start a conversation with an agent a connector declares, post messages
 * (each answers `{ runId }` once its reply run is queued on Temporal), read the conversation and a run,
 * cancel a running reply, retry a failed one; `/ws/agents` streams a run's output and the caller's
 * agent activity.
 */
export default definePlugin({
  name: "agents",
  deps: { runs: AgentRuns, output: AgentOutput },
  setup({ routes, authenticateUpgrade, config }, { runs, output }) {
    // the domain types these routes answer, named in the OpenAPI document (Conversation, ConversationMessage, AgentRunState)
    routes.component("Conversation", ConversationSchema);
    routes.component("ConversationMessage", ConversationMessageSchema);
    routes.component("AgentRunState", AgentRunStateSchema);
    routes.add({
      method: "POST",
      path: "/api/agents/:agentId/conversations",
      summary: "Start a conversation with an agent",
      description: `Needs \`use:agent:<agentId>\`. With \`message\`, the first reply is queued at once and \`runId\` names its run (follow it on /ws/agents or at GET /api/agent-runs/{runId}). The conversation belongs to you. ${OWNER_ONLY}`,
      tags: ["agents"],
      auth: "bearer",
      params: v.object({ agentId: v.string() }),
      body: v.strictObject({ title: v.optional(v.pipe(v.string(), v.trim(), v.minLength(1), v.maxLength(200))), message: v.optional(Message) }),
      responses: { 200: { description: "The conversation (and the queued reply's runId)", schema: v.object({ conversation: ConversationSchema, runId: v.optional(v.string()) }) }, 404: { description: "No such agent" }, 503: { description: "Temporal did not queue the reply; nothing was kept" } },
      handler: ({ principal, params, body }) => runs.start(principal!, params.agentId, body),
    });
    routes.add({
      method: "GET",
      path: "/api/conversations",
      summary: "List your conversations",
      description: "The most recently updated first, a page at a time: `nextPageToken` names the next page while there is one. A conversation updated while you page moves to the front (a later page may miss it).",
      tags: ["agents"],
      auth: "bearer",
      query: v.object(routes.schemas.pageQuery({ max: 200, defaultSize: 200 })),
      responses: {
        200: { description: "Conversations", schema: v.object({ data: v.array(v.omit(ConversationSchema, ["messages", "runs"])), nextPageToken: v.optional(v.string()) }) },
        400: { description: "`invalid_request`: a `nextPageToken` this listing did not issue (another caller's, or edited)" },
      },
      handler: async ({ principal, query }) => runs.conversations(principal!, { pageSize: query.pageSize ?? 200, nextPageToken: query.nextPageToken }),
    });
    routes.add({
      method: "GET",
      path: "/api/conversations/:conversationId",
      summary: "Read a conversation",
      description: `Its messages (yours and the agent's replies, all of them: page through a long conversation's with GET /api/conversations/{conversationId}/messages) and its reply runs. ${OWNER_ONLY}`,
      tags: ["agents"],
      auth: "bearer",
      params: v.object({ conversationId: v.string() }),
      responses: { 200: { description: "The conversation", schema: ConversationSchema }, 404: { description: "No such conversation (or not yours)" } },
      handler: ({ principal, params }) => runs.conversation(principal!, params.conversationId),
    });
    routes.add({
      method: "GET",
      path: "/api/conversations/:conversationId/messages",
      summary: "List a conversation's messages",
      description: `Oldest first, yours and the agent's replies, a page at a time; continue with \`nextPageToken\`. For a long conversation, where reading it whole (GET /api/conversations/{conversationId}) grows with every message. ${OWNER_ONLY}`,
      tags: ["agents"],
      auth: "bearer",
      params: v.object({ conversationId: v.string() }),
      query: v.object(routes.schemas.pageQuery({ max: 200, defaultSize: 50 })),
      responses: {
        200: { description: "A page of messages; `nextPageToken` when more follow (absent on the last page)", schema: v.object({ data: v.array(ConversationMessageSchema), nextPageToken: v.optional(v.string()) }) },
        400: { description: "`invalid_request`: a `nextPageToken` this listing did not issue (another conversation's, or edited)" },
        404: { description: "No such conversation (or not yours)" },
      },
      handler: ({ principal, params, query }) => runs.messages(principal!, params.conversationId, { pageSize: query.pageSize ?? 50, nextPageToken: query.nextPageToken }),
    });
    routes.add({
      method: "POST",
      path: "/api/conversations/:conversationId/messages",
      summary: "Post a message",
      description: `Queues the agent's reply as a durable run on Temporal and answers \`{ runId }\` once queued (as for workflow runs). One reply at a time per conversation: 409 while one is queued or running. A change request ("change the title…") makes the agent publish the next version of the same artifact. ${OWNER_ONLY}`,
      tags: ["agents"],
      auth: "bearer",
      params: v.object({ conversationId: v.string() }),
      body: v.strictObject({ text: Message }),
      responses: { 200: { description: "Queued", schema: Queued }, 404: { description: "No such conversation (or not yours)" }, 409: { description: "A reply is still running in this conversation" }, 503: { description: "Temporal did not queue the reply; the message was not kept" } },
      handler: ({ principal, params, body }) => runs.post(principal!, params.conversationId, body.text),
    });
    routes.add({
      method: "GET",
      path: "/api/agent-runs/:runId",
      summary: "Read a reply run",
      description: `Status (queued, running, completed, failed, cancelled), the artifact versions it published (and whether a retry withdrew them), token usage, the error of a failed run. ${OWNER_ONLY}`,
      tags: ["agents"],
      auth: "bearer",
      params: RunParams,
      responses: { 200: { description: "The run", schema: AgentRunStateSchema }, 404: { description: "No such run (or not yours)" } },
      handler: ({ principal, params }) => runs.state(principal!, params.runId),
    });
    routes.add({
      method: "GET",
      path: "/api/agent-runs/:runId/output",
      summary: "Read a reply run's output",
      description: `A page of the run's retained output after \`afterCursor\` (text deltas, tool calls and results, published and withdrawn versions, errors), as /ws/agents sends it. \`cursor\` acknowledges \`afterCursor\`, or is null when retention no longer covers it and the page starts at the earliest output kept. \`nextCursor\` is where to continue (send it as \`afterCursor\`): a position, present once the run has output, so stop paging on a page shorter than \`limit\` (caught up; for a run that has ended, its end), not on a null \`nextCursor\`. ${OWNER_ONLY}`,
      tags: ["agents"],
      auth: "bearer",
      params: RunParams,
      query: v.object({ afterCursor: v.optional(v.string()), limit: v.optional(routes.schemas.queryInteger({ min: 1, max: 500, description: "1 to 500, default 100" })) }),
      responses: {
        200: { description: "A page of output", schema: v.object({ cursor: v.nullable(v.string()), records: v.array(v.object({ cursor: v.string(), runId: v.string(), kind: v.string(), data: v.unknown(), at: v.string() })), nextCursor: v.nullable(v.string()) }) },
        404: { description: "No such run (or not yours)" },
      },
      handler: async ({ principal, params, query }) => {
        await runs.state(principal!, params.runId);
        const page = await output.read({ runId: params.runId }, query.afterCursor, query.limit ?? 100);
        return { cursor: page.reset ? null : (query.afterCursor ?? null), records: page.records, nextCursor: page.records.at(-1)?.cursor ?? query.afterCursor ?? null };
      },
    });
    routes.add({
      method: "POST",
      path: "/api/agent-runs/:runId/cancel",
      summary: "Cancel a reply",
      description: `Stops a queued or running reply; what it already published stays published. Answers once the run has ended \`cancelled\` (its \`run.finished\` is then the last record of its output, and its usage stays what it was), or after 10 s with the run as it is then. A run that has ended is 409 \`conflict\`. ${OWNER_ONLY}`,
      tags: ["agents"],
      auth: "bearer",
      params: RunParams,
      responses: { 200: { description: "The run once it ended (or, after 10 s, as it is then)", schema: AgentRunStateSchema }, 404: { description: "No such run (or not yours)" }, 409: { description: "`conflict`: the run has ended (`details.status`)" } },
      handler: ({ principal, params }) => runs.cancel(principal!, params.runId),
    });
    routes.add({
      method: "POST",
      path: "/api/agent-runs/:runId/retry",
      summary: "Retry a failed reply",
      description: `First withdraws every artifact version the failed reply published (they are no longer readable, their numbers are not reused, and other artifacts that show them pinned show them as unavailable; those following the latest show the newest version left), then queues a new run answering the same message: \`{ runId }\`. ${OWNER_ONLY}`,
      tags: ["agents"],
      auth: "bearer",
      params: RunParams,
      responses: { 200: { description: "The new run, queued", schema: Queued }, 404: { description: "No such run (or not yours)" }, 409: { description: "The run did not fail, or was already retried" } },
      handler: ({ principal, params }) => runs.retry(principal!, params.runId),
    });
    routes.ws(
      "/ws/agents",
      {
        summary: "Agent output over WebSocket",
        description: "Spec 6.5. Browser session and allowed Origin only. `{type:\"subscribe\", runId, afterCursor?}`: the run's retained output after the cursor as `record` frames, then live, with `run.snapshot` frames on subscribe and on every change; `{type:\"subscribe\", activity:true}`: your agent activity; `{type:\"replay\", runId, afterCursor?, limit?}`: one page. When retention no longer covers a cursor, output resumes from the earliest kept and the cursor is acknowledged as null.",
      },
      agentsSocket({ output, runs, authenticateUpgrade, maxBufferedBytes: config.wsMaxBufferedBytes }),
    );
  },
});
