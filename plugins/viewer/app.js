// The live event viewer: signs in for a browser session, then follows /ws/events (spec 6.5).
const $ = (id) => document.getElementById(id);
// the path prefix a proxy serves the service under ("" for none; the server writes it into <html data-base>)
const BASE = document.documentElement.dataset.base || "";
const TOPICS = ["objects", "links", "telemetry", "actions", "schedules", "rules", "syncs", "pipelines", "workflows", "datasets"];
let csrfToken = null;
let socket = null;
let lastCursor = null;

for (const t of TOPICS) $("topic").append(new Option(t, t));

function status(text) {
  $("status").textContent = text;
}

function row(event) {
  const tr = document.createElement("tr");
  const subject = event.subject ? `${event.subject.objectTypeId}/${event.subject.primaryId}` : "";
  for (const [text, cls] of [[new Date(event.occurredAt).toLocaleTimeString(), ""], [event.type, ""], [subject, ""], [JSON.stringify(event.payload), "payload"]]) {
    const td = document.createElement("td");
    td.textContent = text;
    if (cls) td.className = cls;
    tr.append(td);
  }
  $("events").prepend(tr);
  while ($("events").children.length > 500) $("events").lastChild.remove();
}

function subscribe() {
  const topic = $("topic").value || undefined;
  socket.send(JSON.stringify({ type: "subscribe", topic, ...(lastCursor ? { afterCursor: lastCursor } : {}) }));
}

function connect() {
  socket = new WebSocket(`${location.protocol === "https:" ? "wss" : "ws"}://${location.host}${BASE}/ws/events`);
  socket.onmessage = (message) => {
    const frame = JSON.parse(message.data);
    if (frame.type === "connected") subscribe();
    else if (frame.type === "subscribed") status(`live${frame.topic ? ` · ${frame.topic}` : ""}`);
    else if (frame.type === "event") {
      lastCursor = frame.event.cursor;
      row(frame.event);
    } else if (frame.type === "reset") {
      lastCursor = null;
      subscribe();
    } else if (frame.type === "error") status(`error: ${frame.message}`);
  };
  socket.onclose = (e) => {
    if (csrfToken) {
      status(`reconnecting (${e.code})…`);
      setTimeout(connect, 1000);
    }
  };
}

async function start(session) {
  csrfToken = session.csrfToken;
  $("sign-in").hidden = true;
  $("controls").hidden = false;
  status(`signed in as ${session.identity.id}`);
  connect();
}

$("sign-in").addEventListener("submit", async (e) => {
  e.preventDefault();
  const form = new FormData(e.target);
  const res = await fetch(`${BASE}/api/auth/sign-in`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ identity: form.get("identity"), password: form.get("password") }) });
  const body = await res.json();
  if (!res.ok) return ($("sign-in-error").textContent = body.error.message);
  start(body);
});

$("resubscribe").addEventListener("click", () => {
  lastCursor = null;
  $("events").replaceChildren();
  subscribe();
});

$("noop").addEventListener("click", () =>
  fetch(`${BASE}/api/actions/diagnostics.noop`, { method: "POST", headers: { "content-type": "application/json", "x-svc-csrf": csrfToken }, body: JSON.stringify({ params: {} }) }),
);

$("sign-out").addEventListener("click", async () => {
  await fetch(`${BASE}/api/auth/sign-out`, { method: "POST", headers: { "x-svc-csrf": csrfToken } });
  csrfToken = null;
  socket?.close();
  location.reload();
});

fetch(`${BASE}/api/auth/session`).then((res) => (res.ok ? res.json().then(start) : undefined));
