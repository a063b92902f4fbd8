import http from "node:http";
import { H3, serve } from "h3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ApiError } from "../errors";
import { errorResponse, jsonResponse, jsonText } from "./response";

/** One raw HTTP/1.1 GET over loopback: status, headers as Node parsed them, body text. */
function get(url: string): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }> {
  return new Promise((resolve, reject) => {
    http.get(url, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks).toString("utf8") }));
    }).on("error", reject);
  });
}

describe("JSON answers", () => {
  it("carry one Content-Type: the JSON default, or the caller's in any letter case", async () => {
    expect(jsonText("{}").headers.get("content-type")).toBe("application/json; charset=utf-8");
    const own = jsonText("{}", 200, { "Content-Type": "application/offset+octet-stream", "x-a": "1" });
    expect(own.headers.get("content-type")).toBe("application/offset+octet-stream");
    expect(own.headers.get("x-a")).toBe("1");
    expect(await jsonResponse({ a: [1, "é"] }, 201).json()).toEqual({ a: [1, "é"] });
    expect(jsonResponse({}, 201).status).toBe(201);
  });

  it("errorResponse answers an ApiError's code, status and headers, anything else as a bare internal error", async () => {
    const refused = errorResponse(new ApiError("unauthorized", "no token", undefined, { "www-authenticate": "Bearer" }));
    expect(refused.status).toBe(401);
    expect(refused.headers.get("www-authenticate")).toBe("Bearer");
    expect(await refused.json()).toEqual({ error: { code: "unauthorized", message: "no token" } });
    const internal = errorResponse(new Error("SELECT secret FROM t"));
    expect(internal.status).toBe(500);
    expect(JSON.stringify(await internal.json())).not.toContain("secret");
  });

  describe("over HTTP", () => {
    let server: ReturnType<typeof serve>;
    let url: string;
    beforeAll(async () => {
      const app = new H3()
        .get("/json", () => jsonResponse({ text: "héllo €", list: [1, 2, 3] }))
        .get("/error", () => errorResponse(new ApiError("not_found", "No thing \"ü\"")));
      server = serve(app, { port: 0, hostname: "127.0.0.1", silent: true, gracefulShutdown: false });
      await server.ready();
      url = server.url!.replace(/\/$/, "");
    });
    afterAll(() => server.close(true));

    // a Response of undici's class is sent by reading its body stream: chunked, no Content-Length
    it("go out in one piece with their Content-Length in bytes, not chunked", async () => {
      for (const [path, status] of [["/json", 200], ["/error", 404]] as const) {
        const res = await get(`${url}${path}`);
        expect(res.status).toBe(status);
        expect(res.headers["transfer-encoding"]).toBeUndefined();
        expect(Number(res.headers["content-length"])).toBe(Buffer.byteLength(res.body));
        expect(res.headers["content-type"]).toBe("application/json; charset=utf-8");
        JSON.parse(res.body);
      }
      expect(JSON.parse((await get(`${url}/json`)).body)).toEqual({ text: "héllo €", list: [1, 2, 3] });
    });
  });
});
