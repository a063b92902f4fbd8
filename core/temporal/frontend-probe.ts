/**
 * Whether a Temporal frontend answers and serves a namespace, asked with node's own HTTP/2 client: two
 * unary gRPC calls of the WorkflowService (`GetSystemInfo`, then `DescribeNamespace`) whose requests are
 * written by hand (an empty message, and one string field). The dev server's readiness is polled with
 * it while the service's modules load; the SDK's client would add its packages' loading (about half a
 * second of main-thread time, see `./sdk.ts`) to every start's critical path (issue 15).
 */
import http2 from "node:http2";

const SERVICE = "/temporal.api.workflowservice.v1.WorkflowService/";

/** A gRPC message frame: uncompressed flag, 4-byte big-endian length, the protobuf bytes. */
function grpcFrame(message: Buffer): Buffer {
  const frame = Buffer.alloc(5 + message.length);
  frame.writeUInt32BE(message.length, 1);
  message.copy(frame, 5);
  return frame;
}

/** A protobuf message holding one string in field 1 (`DescribeNamespaceRequest.namespace`). */
function stringField1(value: string): Buffer {
  const bytes = Buffer.from(value, "utf8");
  const length: number[] = [];
  let n = bytes.length;
  do {
    length.push((n & 0x7f) | (n > 0x7f ? 0x80 : 0));
    n >>>= 7;
  } while (n > 0);
  return Buffer.concat([Buffer.from([0x0a, ...length]), bytes]);
}

/** One unary call; resolves on `grpc-status: 0`, rejects with the status and message otherwise. */
function unary(session: http2.ClientHttp2Session, method: string, message: Buffer): Promise<void> {
  return new Promise((resolve, reject) => {
    const req = session.request({ ":method": "POST", ":path": SERVICE + method, "content-type": "application/grpc", te: "trailers" });
    let status: string | undefined;
    let detail = "";
    const take = (headers: http2.IncomingHttpHeaders) => {
      if (headers["grpc-status"] !== undefined) status = String(headers["grpc-status"]);
      if (headers["grpc-message"] !== undefined) detail = decodeURIComponent(String(headers["grpc-message"]));
    };
    req.on("response", (headers) => {
      if (headers[":status"] !== 200) status ??= `HTTP ${headers[":status"]}`;
      take(headers); // a trailers-only answer (an error) carries its status here
    });
    req.on("trailers", take);
    req.on("data", () => undefined);
    req.on("end", () => (status === "0" ? resolve() : reject(new Error(`${method}: gRPC status ${status ?? "missing"}${detail ? ` (${detail})` : ""}`))));
    req.on("error", reject);
    req.end(grpcFrame(message));
  });
}

/**
 * Resolves when the frontend at `address` answers `GetSystemInfo` and knows `namespace`.
 * @param address `host:port` of the frontend (plain-text HTTP/2, as the dev server serves it)
 * @param timeoutMs how long both calls may take together (ms)
 * @throws Error when the port refuses, the time runs out, or a call answers a gRPC status other than
 *   OK (e.g. `5` NOT_FOUND for an unknown namespace); the message names the call
 */
export async function frontendServes(address: string, namespace: string, timeoutMs = 1000): Promise<void> {
  const session = http2.connect(`http://${address}`);
  const failed = new Promise<never>((_, reject) => {
    session.once("error", reject);
    const timer = setTimeout(() => reject(new Error(`no answer from ${address} within ${timeoutMs} ms`)), timeoutMs);
    session.once("close", () => clearTimeout(timer));
  });
  try {
    await Promise.race([failed, (async () => {
      await unary(session, "GetSystemInfo", Buffer.alloc(0));
      await unary(session, "DescribeNamespace", stringField1(namespace));
    })()]);
  } finally {
    session.destroy();
  }
}
