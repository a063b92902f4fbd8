/**
 * The GitHub connector as a unit: `verify`, `idempotencyKey` and `handle` called directly, with
 * requests signed by the provider's own library and a fake handler context.
 */
import { sign as githubSign } from "@octokit/webhooks-methods";
import { describe, expect, it } from "vitest";
import { request, runHandler, verificationReason } from "../../test/fixtures/connector-context";
import { githubConnector } from "./index";

describe("githubConnector", () => {
  const secret = "gh-webhook-secret";
  const connector = githubConnector({ secret });
  const hook = connector.webhooks.events;
  const payload = JSON.stringify({ action: "opened", repository: { id: 1, full_name: "octo-org/hello-world" }, sender: { login: "octocat" } });
  const headers = (signature: string) => ({
    "content-type": "application/json",
    "x-github-event": "issues",
    "x-github-delivery": "72d3162e-cc78-11e3-81ab-4c9367dc0958",
    "x-hub-signature-256": signature,
  });

  it("declares connector github, webhook events, json", () => {
    expect(connector.id).toBe("github");
    expect(Object.keys(connector.webhooks)).toEqual(["events"]);
    expect(hook.format).toBe("json");
    expect(() => githubConnector({ secret: "" })).toThrow(/GITHUB_WEBHOOK_SECRET/);
  });

  it("verifies X-Hub-Signature-256 signed by @octokit/webhooks-methods, with rotation", async () => {
    const signature = await githubSign(secret, payload);
    expect(() => hook.verify!(request(headers(signature), payload))).not.toThrow();
    expect(verificationReason(() => hook.verify!(request(headers(`sha256=${"0".repeat(64)}`), payload)))).toBe("bad_signature");
    const rotated = githubConnector({ secret: ["new-secret", secret] }).webhooks.events;
    expect(() => rotated.verify!(request(headers(signature), payload))).not.toThrow();
  });

  it("keys deliveries by X-GitHub-Delivery, none without it", () => {
    expect(hook.idempotencyKey!(request(headers("x"), payload), JSON.parse(payload))).toBe("72d3162e-cc78-11e3-81ab-4c9367dc0958");
    expect(hook.idempotencyKey!(request({}, payload), JSON.parse(payload))).toBeNull();
  });

  it("logs the event, its action and the repository, writes nothing, answers nothing (202)", async () => {
    const { response, upserts, links, logs } = await runHandler(hook, JSON.parse(payload), request(headers("x"), payload));
    expect(response).toBeUndefined();
    expect(upserts).toEqual([]);
    expect(links).toEqual([]);
    expect(logs).toEqual([{ level: "info", obj: { event: "issues", action: "opened", repository: "octo-org/hello-world", delivery: "72d3162e-cc78-11e3-81ab-4c9367dc0958" }, msg: "github event" }]);
  });

  it("handles a payload without a repository (organization events, ping of an app)", async () => {
    const { logs } = await runHandler(hook, { zen: "Keep it logically awesome.", hook_id: 1 }, request({ "x-github-event": "ping" }, "{}"));
    expect(logs[0]!.obj).toMatchObject({ event: "ping", repository: undefined });
  });
});
