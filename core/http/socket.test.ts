/**
 * `sendFrames` over crossws's Node adapter, a real HTTP server and a real WebSocket client on loopback:
 * a batch of frames leaves the server in one socket write, in order.
 */
import http from "node:http";
import type { Socket } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import nodeAdapter from "crossws/adapters/node";
import NodeWebSocket from "crossws/websocket";
import type { Peer } from "crossws";
import { sendFrames } from "./socket";

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

/** A crossws server on a free port; resolves with its first peer, the TCP socket under it and a client receiving text frames. */
async function connect(): Promise<{ peer: Peer; socket: Socket; received: string[] }> {
  let opened: (peer: Peer) => void = () => {};
  const peerOpened = new Promise<Peer>((r) => (opened = r));
  const ws = nodeAdapter({ hooks: { open: (peer) => opened(peer) } });
  let socket: Socket | undefined;
  const server = http.createServer();
  server.on("upgrade", (req, s: Socket, head) => {
    socket = s;
    void ws.handleUpgrade(req, s, head);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  closers.push(() => new Promise<void>((r) => (ws.closeAll(), server.close(() => r()))));
  const { port } = server.address() as { port: number };
  const Ctor = NodeWebSocket as unknown as new (url: string) => { on(ev: string, f: (data: Buffer) => void): void; close(): void };
  const client = new Ctor(`ws://127.0.0.1:${port}/`);
  const received: string[] = [];
  client.on("message", (data) => received.push(String(data)));
  closers.unshift(async () => client.close());
  const peer = await peerOpened;
  return { peer, socket: socket!, received };
}

/** Counts the socket's writes to the kernel (one `_writev` or `_write` each). */
function countWrites(socket: Socket): { writes: number } {
  const counter = { writes: 0 };
  const internals = socket as unknown as { _writev(chunks: unknown, cb: unknown): void; _write(chunk: unknown, enc: unknown, cb: unknown): void };
  const writev = internals._writev.bind(socket);
  const write = internals._write.bind(socket);
  internals._writev = (chunks, cb) => (counter.writes++, writev(chunks, cb));
  internals._write = (chunk, enc, cb) => (counter.writes++, write(chunk, enc, cb));
  return counter;
}

async function waitFor(check: () => boolean): Promise<void> {
  const deadline = Date.now() + 5000;
  while (!check()) {
    if (Date.now() > deadline) throw new Error("condition not reached");
    await new Promise((r) => setTimeout(r, 5));
  }
}

describe("sendFrames", () => {
  it("sends a batch of frames in one socket write, in order", async () => {
    const { peer, socket, received } = await connect();
    const counter = countWrites(socket);
    const frames = ['{"type":"event","n":1}', '{"type":"event","n":2}', '{"type":"event","n":3}'];
    sendFrames(peer, frames);
    await waitFor(() => received.length === 3);
    expect(received).toEqual(frames);
    expect(counter.writes).toBe(1);
  });

  it("sends one frame as peer.send does, and nothing for an empty batch", async () => {
    const { peer, socket, received } = await connect();
    const counter = countWrites(socket);
    sendFrames(peer, []);
    sendFrames(peer, ["only"]);
    await waitFor(() => received.length === 1);
    expect(received).toEqual(["only"]);
    expect(counter.writes).toBe(1);
  });
});
