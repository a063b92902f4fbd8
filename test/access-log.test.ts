/** SVC_ACCESS_LOG: one log line per HTTP request, secrets in paths masked (an operator's request log). */
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEV_TOKEN, startApp } from "./helpers";
import type { App } from "../core/app";

let app: App;
const lines: Array<Record<string, unknown>> = [];
beforeAll(async () => {
  app = await startApp({ env: { SVC_ACCESS_LOG: "true" }, logger: pino({ level: "info" }, { write: (line: string) => void lines.push(JSON.parse(line)) }) });
});
afterAll(() => app?.close());

const requests = () => lines.filter((l) => l.msg === "request");

describe("the access log (SVC_ACCESS_LOG)", () => {
  it("logs each request once answered: method, path without query, status, ms, client address, identity; download-URL secrets and frame links masked", async () => {
    const before = requests().length;
    await fetch(`${app.url}/api/status?verbose`, { headers: { authorization: `Bearer ${DEV_TOKEN}` } });
    await fetch(`${app.url}/api/objects/customer/cus_acme`, { headers: { authorization: `Bearer ${DEV_TOKEN}` } });
    await fetch(`${app.url}/no/such/route`);
    await fetch(`${app.url}/api/download/dl_s3cr3t_value_that_must_not_be_logged`);
    await fetch(`${app.url}/artifact-frames/frame-token-s3cr3t/index.html`);
    const logged = await (async () => {
      for (let i = 0; i < 50 && requests().length < before + 5; i++) await new Promise((r) => setTimeout(r, 20));
      return requests().slice(before);
    })();
    expect(logged.map((l) => [l.method, l.path, l.status, l.identity])).toEqual([
      ["GET", "/api/status", 400, "dev"],
      ["GET", "/api/objects/customer/cus_acme", 200, "dev"],
      ["GET", "/no/such/route", 404, undefined],
      ["GET", "/api/download/…", expect.any(Number), undefined],
      ["GET", "/artifact-frames/…/index.html", expect.any(Number), undefined],
    ]);
    for (const line of logged) expect(line).toMatchObject({ level: 30, ms: expect.any(Number), clientAddress: expect.stringMatching(/127\.0\.0\.1/) });
    expect(JSON.stringify(lines)).not.toContain("s3cr3t");
  });
});
