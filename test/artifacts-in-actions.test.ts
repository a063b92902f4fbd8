/**
 * `ctx.artifacts` inside a request (spec 4.3: "Only the artifact's owner can open it. Server code running
 * as the system, outside any user request, reaches every artifact"): an action run's handler acts as its
 * requester. The sandbox plus a connector whose actions publish, revise and resolve artifacts; real HTTP,
 * real SQLite.
 */
import * as v from "valibot";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { client, startApp, tokenFor } from "./helpers";
import { can, defineAction, defineConnector, defineProject } from "../core/sdk";
import { sandboxProject } from "../sandbox/project";
import type { App } from "../core/app";

const notes = defineConnector({
  id: "notes",
  actions: {
    "notes.publish": defineAction({
      params: v.object({ title: v.string(), text: v.string(), owner: v.optional(v.string()) }),
      async run(ctx) {
        const file = await ctx.artifacts.upload(`# ${ctx.params.title}\n\n${ctx.params.text}\n`, { name: "document.md", contentType: "text/markdown" });
        const { artifact } = await ctx.artifacts.publish({ kind: "document", title: ctx.params.title, files: [{ path: "document.md", file }], owner: ctx.params.owner });
        return { artifactId: artifact.id };
      },
    }),
    "notes.revise": defineAction({
      params: v.object({ artifactId: v.string(), text: v.string() }),
      async run(ctx) {
        const file = await ctx.artifacts.upload(`# Revised\n\n${ctx.params.text}\n`, { name: "document.md", contentType: "text/markdown" });
        return { version: (await ctx.artifacts.publishVersion(ctx.params.artifactId, { files: [{ path: "document.md", file }] })).version };
      },
    }),
    "notes.publish-file": defineAction({
      // a file id as plain text (not a { id } file value, which the action's params check would refuse first)
      params: v.object({ fileId: v.string() }),
      async run(ctx) {
        const { artifact } = await ctx.artifacts.publish({ kind: "file", title: "A file", files: [{ path: "a.txt", file: { id: ctx.params.fileId } }] });
        return { artifactId: artifact.id };
      },
    }),
    "notes.read": defineAction({
      params: v.object({ address: v.string() }),
      async run(ctx) {
        const resolved = await ctx.artifacts.resolve(ctx.params.address);
        return { artifactId: resolved.artifact.id, version: resolved.version };
      },
    }),
  },
});
const NOTES = ["notes.publish", "notes.revise", "notes.read", "notes.publish-file"].map((id) => can.runAction(id));
const alice = sandboxProject.identities!.alice!;
const project = defineProject({
  ...sandboxProject,
  connectors: [...sandboxProject.connectors, notes],
  identities: { ...sandboxProject.identities, alice: { ...alice, permissions: [...(alice.permissions as readonly string[]), ...NOTES] } },
});

let app: App;
let dev: ReturnType<typeof client>;
let asAlice: ReturnType<typeof client>;
beforeAll(async () => {
  app = await startApp({ project });
  dev = client(app);
  asAlice = client(app, await tokenFor(app, "alice"));
}, 120_000);
afterAll(() => app?.close());

const run = (as: ReturnType<typeof client>, actionId: string, params: Record<string, unknown>) => as.post(`/api/actions/${actionId}`, { params }).then((r) => r.body);

describe("ctx.artifacts in an action run acts as its requester (spec 4.3)", () => {
  it("publishes an artifact the requester owns, from files the handler uploaded, and revises and resolves only the requester's", async () => {
    const published = await run(dev, "notes.publish", { title: "Dev's note", text: "Mine." });
    expect(published).toMatchObject({ status: "succeeded", result: { artifactId: expect.stringMatching(/^art_/) } });
    const id = published.result.artifactId as string;
    expect((await dev.get(`/api/artifacts/${id}`)).body).toMatchObject({ owner: "dev", latestVersion: 1 });
    // its owner's runs reach it
    expect(await run(dev, "notes.revise", { artifactId: id, text: "Again." })).toMatchObject({ status: "succeeded", result: { version: 2 } });
    expect(await run(dev, "notes.read", { address: `artifact:${id}` })).toMatchObject({ status: "succeeded", result: { artifactId: id, version: 2 } });

    // another user's runs do not: for them it does not exist, as over the API
    const read = await run(asAlice, "notes.read", { address: `artifact:${id}` });
    expect(read).toMatchObject({ status: "failed", error: { code: "not_found" } });
    const revise = await run(asAlice, "notes.revise", { artifactId: id, text: "Not yours." });
    expect(revise).toMatchObject({ status: "failed", error: { code: "not_found" } });
    expect((await dev.get(`/api/artifacts/${id}`)).body.latestVersion).toBe(2);

    // nor the files of dev's artifact, nor an address of it in a document of their own
    const devFile = (await dev.get(`/api/artifacts/${id}/versions/2`)).body.files[0].file.id as string;
    const withDevsFile = await run(asAlice, "notes.publish-file", { fileId: devFile });
    expect(withDevsFile).toMatchObject({ status: "failed", error: { code: "artifact_invalid" } });
    const embedding = await run(asAlice, "notes.publish", { title: "Embeds dev's", text: `![dev's note](artifact:${id})` });
    expect(embedding).toMatchObject({ status: "failed", error: { code: "artifact_invalid" } });
    // dev's own file is dev's to use
    expect((await run(dev, "notes.publish-file", { fileId: devFile })).status).toBe("succeeded");
  });

  it("refuses to publish for another owner inside a request, and publishes for the requester", async () => {
    const forOther = await run(asAlice, "notes.publish", { title: "For dev", text: "Planted.", owner: "dev" });
    expect(forOther).toMatchObject({ status: "failed", error: { code: "forbidden", message: expect.stringContaining('An action run requested by "alice" publishes artifacts "alice" owns') } });
    const own = await run(asAlice, "notes.publish", { title: "Alice's note", text: "Hers.", owner: "alice" });
    expect(own.status).toBe("succeeded");
    expect((await asAlice.get(`/api/artifacts/${own.result.artifactId}`)).body).toMatchObject({ owner: "alice" });
    expect((await dev.get("/api/artifacts?pageSize=200")).body.data.map((a: { title: string }) => a.title)).not.toContain("For dev");
  });
});
