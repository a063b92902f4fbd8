/**
 * Talk to an agent from a terminal, the way a browser app does (spec 5, 6.5): sign in for a browser
 * session, post a message (or start a conversation), then follow the reply on /ws/agents, printing the
 * text as it streams, the tool calls, and the artifacts it publishes, until the run ends.
 *
 *   npm run chat -- "Write a report titled Q4 outlook"
 *   npm run chat -- --conversation conv_… "Change it: add the risks"
 *
 * Options: --url (default http://localhost:3002), --agent (default assistant), --identity / --password
 * (default the sandbox's dev / dev-sandbox-password), --conversation (continue one).
 */
import { parseArgs } from "node:util";
import NodeWebSocket from "crossws/websocket";

const { values, positionals } = parseArgs({
  args: process.argv.slice(2),
  allowPositionals: true,
  options: {
    url: { type: "string", default: process.env.SVC_URL ?? "http://localhost:3002" },
    agent: { type: "string", default: "assistant" },
    identity: { type: "string", default: "dev" },
    password: { type: "string", default: "dev-sandbox-password" },
    conversation: { type: "string" },
    help: { type: "boolean", short: "h" },
  },
});
const message = positionals.join(" ").trim();
if (values.help || !message) {
  console.log('usage: npm run chat -- [--conversation <id>] [--agent assistant] [--url http://localhost:3002] "<message>"');
  process.exit(values.help ? 0 : 2);
}
const base = values.url!.replace(/\/$/, "");
const origin = new URL(base).origin;

async function call(path: string, init: { method?: string; body?: unknown; headers?: Record<string, string> } = {}): Promise<any> {
  const res = await fetch(`${base}${path}`, {
    method: init.method ?? "GET",
    headers: { origin, ...(init.body !== undefined ? { "content-type": "application/json" } : {}), ...init.headers },
    ...(init.body !== undefined ? { body: JSON.stringify(init.body) } : {}),
  });
  const body: any = await res.json().catch(() => ({}));
  if (!res.ok) throw new Error(`${init.method ?? "GET"} ${path}: ${res.status} ${body?.error?.message ?? ""}`);
  return Object.assign(body, { setCookie: res.headers.get("set-cookie") });
}

const session = await call("/api/auth/sign-in", { method: "POST", body: { identity: values.identity, password: values.password } });
const cookie = String(session.setCookie ?? "").split(";")[0]!;
const auth = { cookie, "x-svc-csrf": session.csrfToken as string };
const queued = values.conversation
  ? await call(`/api/conversations/${encodeURIComponent(values.conversation)}/messages`, { method: "POST", body: { text: message }, headers: auth })
  : await call(`/api/agents/${encodeURIComponent(values.agent!)}/conversations`, { method: "POST", body: { message }, headers: auth });
const conversationId = queued.conversationId ?? queued.conversation.id;
const runId: string = queued.runId;
console.error(`conversation ${conversationId}, reply run ${runId}`);

const Ctor = NodeWebSocket as unknown as new (url: string, protocols: string[], opts: { headers: Record<string, string> }) => WebSocket;
const socket = new Ctor(`${base.replace(/^http/, "ws")}/ws/agents`, [], { headers: { cookie, origin } });
socket.addEventListener("open", () => socket.send(JSON.stringify({ type: "subscribe", runId })));
socket.addEventListener("message", (e) => {
  const frame = JSON.parse(String(e.data));
  if (frame.type === "error") {
    console.error(`\nerror: ${frame.message}`);
    process.exitCode = 1;
    socket.close();
  } else if (frame.type === "record") {
    const { kind, data } = frame.record;
    if (kind === "text") process.stdout.write(data.delta);
    else if (kind === "text.reset") process.stdout.write("\n[the model call was retried]\n");
    else if (kind === "tool.call") console.log(`\n[tool] ${data.name} ${JSON.stringify(data.input).slice(0, 120)}…`);
    else if (kind === "artifact.published") console.log(`[published] ${data.title}: ${data.address}  (${base}/artifacts/${data.artifactId}?v=${data.version})`);
    else if (kind === "error") console.log(`\n[error] ${data.message}`);
  } else if (frame.type === "run.snapshot" && !["queued", "running"].includes(frame.run.status)) {
    console.log(`\n[${frame.run.status}] ${frame.run.usage.modelCalls} model calls, ${frame.run.usage.outputTokens} output tokens. Continue with --conversation ${conversationId}`);
    if (frame.run.status !== "completed") process.exitCode = 1;
    socket.close();
  }
});
socket.addEventListener("close", () => process.exit());
