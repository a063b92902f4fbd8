/**
 * Deck frames open from a short-lived link (spec 2.10): `FrameLinks` signs a grant of one reader, one
 * version of one deck, until its expiry; the frame route answers 410 once it expired and 404 for a link
 * this process did not make. Unit checks with a given clock, then the real app over HTTP.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SANDBOX_DEV_TOKEN } from "../sandbox/project";
import { FrameLinks } from "../plugins/pages/frames";
import { startApp } from "./helpers";
import type { App } from "../core/app";

const grant = { artifactId: "art_1", version: 2, reader: "dev" };

describe("FrameLinks (spec 2.10: a short-lived link)", () => {
  it("grants its reader the one version until the link's time is up, then answers expired", () => {
    const links = new FrameLinks(60_000);
    const t0 = Date.parse("2026-11-30T10:00:00Z");
    const token = links.mint(grant, t0);
    expect(links.verify(token, t0 + 59_999)).toEqual({ ...grant, expiresAt: t0 + 60_000 });
    expect(links.verify(token, t0 + 60_000)).toBe("expired");
  });

  it("refuses a link it did not make: another process's key, an altered grant or signature, a malformed token", () => {
    const links = new FrameLinks(60_000);
    const token = links.mint(grant);
    const [payload, signature] = token.split(".") as [string, string];
    // a restarted process has a new key: every earlier link ends
    expect(new FrameLinks(60_000).verify(token)).toBeUndefined();
    // another reader or a later expiry, with the old signature
    const forged = (reader: string, expiresAt: number) => `${Buffer.from(JSON.stringify(["art_1", 2, reader, expiresAt])).toString("base64url")}.${signature}`;
    expect(links.verify(forged("alice", Date.now() + 60_000))).toBeUndefined();
    expect(links.verify(forged("dev", Date.now() + 86_400_000))).toBeUndefined();
    const flipped = signature.slice(0, -1) + (signature.endsWith("A") ? "B" : "A");
    expect(links.verify(`${payload}.${flipped}`)).toBeUndefined();
    for (const bad of [payload, `${payload}.${signature}.x`, "", "."]) expect(links.verify(bad), bad).toBeUndefined();
    expect(links.verify(token)).toMatchObject(grant);
  });
});

describe("the deck frame route", () => {
  let app: App;
  beforeAll(async () => {
    app = await startApp({ env: { SVC_FRAME_LINK_TTL_MS: "10000" } });
  }, 120_000);
  afterAll(() => app?.close());

  it("serves the deck under its link, 404 for an altered link, 410 once the link expired (and a reload of the page makes a new one)", { timeout: 40_000 }, async () => {
    const signedIn = await fetch(`${app.url}/api/auth/sign-in`, { method: "POST", headers: { "content-type": "application/json", origin: app.url }, body: JSON.stringify({ identity: "dev", password: "dev-sandbox-password" }) });
    const cookie = signedIn.headers.get("set-cookie")!.split(";")[0]!;
    const decks = (await (await fetch(`${app.url}/api/artifacts?kind=slides`, { headers: { authorization: `Bearer ${SANDBOX_DEV_TOKEN}` } })).json()) as { data: Array<{ id: string }> };
    const frameOf = async () => /\/artifact-frames\/[^/"?]+\//.exec(await (await fetch(`${app.url}/artifacts/${decks.data[0]!.id}`, { headers: { cookie } })).text())?.[0];
    const frame = await frameOf();
    expect(frame, "the deck page names its frame").toBeDefined();
    const index = await fetch(`${app.url}${frame}index.html`);
    expect(index.status).toBe(200);
    expect(await index.text()).toContain('class="slide');
    const altered = frame!.replace(/(.)\/$/, (_, c: string) => `${c === "A" ? "B" : "A"}/`);
    expect((await fetch(`${app.url}${altered}index.html`)).status).toBe(404);
    await new Promise((r) => setTimeout(r, 10_500));
    const expired = await fetch(`${app.url}${frame}index.html`);
    expect(expired.status).toBe(410);
    expect(await expired.text()).toContain("This link to the slides has expired: reload the page that showed them.");
    const fresh = await frameOf();
    expect(fresh).not.toBe(frame);
    expect((await fetch(`${app.url}${fresh}index.html`)).status).toBe(200);
  });
});
