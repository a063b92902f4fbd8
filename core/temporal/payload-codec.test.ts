/**
 * The payload codec that keeps download URLs' secrets out of Temporal's histories (./payload-codec.ts):
 * what it encrypts, what it leaves, and the keys it reads with (their files: ./payload-keys.test.ts). The history end to end: test/workflows-results.test.ts.
 */
import { describe, expect, it } from "vitest";
import { tempDir } from "../../test/helpers-fs";
import { DownloadUrlCodec, withoutSecretsInError } from "./payload-codec";
import { openPayloadKey, openPayloadKeys, payloadKeyId, rotatePayloadKey } from "./payload-keys";

const json = (value: unknown) => ({ metadata: { encoding: new TextEncoder().encode("json/plain") }, data: new TextEncoder().encode(JSON.stringify(value)) });
const URL_VALUE = { url: "https://files.example.com/api/download/AbCdEfGhIjKlMnOpQrStUvWxYz0123456789-_abcde", id: "dl_1" };

describe("DownloadUrlCodec", () => {
  const codec = new DownloadUrlCodec(openPayloadKey(tempDir("svc-codec-")));

  it("encrypts a payload holding a download URL, and decodes it to the same payload", async () => {
    const [encoded] = await codec.encode([json(URL_VALUE)]);
    const stored = Buffer.from(encoded!.data!);
    expect(stored.includes("/api/download/")).toBe(false);
    expect(new TextDecoder().decode(encoded!.metadata!.encoding!)).toBe("binary/encrypted");
    expect(new TextDecoder().decode(encoded!.metadata!["encryption-key-id"]!)).toBe(codec.keyId);
    const [decoded] = await codec.decode([encoded!]);
    expect(JSON.parse(new TextDecoder().decode(decoded!.data!))).toEqual(URL_VALUE);
    expect(new TextDecoder().decode(decoded!.metadata!.encoding!)).toBe("json/plain");
    // a fresh IV each time: the same value never encodes to the same bytes
    const [again] = await codec.encode([json(URL_VALUE)]);
    expect(Buffer.from(again!.data!).equals(stored)).toBe(false);
  });

  it("encrypts a URL percent-encoded inside another URL's query too", async () => {
    const [encoded] = await codec.encode([json({ link: `https://mail.example.com/send?u=${encodeURIComponent(URL_VALUE.url)}` })]);
    expect(new TextDecoder().decode(encoded!.metadata!.encoding!)).toBe("binary/encrypted");
  });

  it("keeps its keys out of a JSON dump of it", () => {
    const retired = openPayloadKey(tempDir("svc-codec-"));
    const withRetired = new DownloadUrlCodec(openPayloadKey(tempDir("svc-codec-")), [retired]);
    expect(JSON.stringify(withRetired)).toBe(JSON.stringify({ keyId: withRetired.keyId, retiredKeyIds: [payloadKeyId(retired)] }));
  });

  it("leaves every other payload as it is, both ways", async () => {
    // an empty payload's data comes as a plain array from the worker
    const plain = [json({ invoiceId: "inv_1" }), { metadata: { encoding: new TextEncoder().encode("binary/null") } }, { metadata: { encoding: new TextEncoder().encode("binary/null") }, data: [] as unknown as Uint8Array }];
    expect(await codec.encode(plain)).toEqual(plain);
    expect(await codec.decode(plain)).toEqual(plain);
  });

  it("refuses a payload of another key, naming both keys, and one that was altered", async () => {
    const other = new DownloadUrlCodec(openPayloadKey(tempDir("svc-codec-")));
    const [foreign] = await other.encode([json(URL_VALUE)]);
    await expect(codec.decode([foreign!])).rejects.toThrow(new RegExp(`encrypted with key ${other.keyId}, not this data directory's temporal-payload\\.key \\(${codec.keyId}\\) nor a retired key in its temporal-payload-keys/, none$`));
    const [mine] = await codec.encode([json(URL_VALUE)]);
    const altered = Buffer.from(mine!.data!);
    altered[20]! ^= 1;
    await expect(codec.decode([{ ...mine!, data: altered }])).rejects.toThrow(/authenticate/);
  });
});

describe("withoutSecretsInError", () => {
  it("takes download URLs' secrets out of an error's message and stack and its causes', in place, keeping which link it was", () => {
    const cause = new Error(`upstream refused ${URL_VALUE.url}`);
    const err = new Error(`could not mail ${URL_VALUE.url} (${encodeURIComponent(URL_VALUE.url)})`, { cause });
    expect(withoutSecretsInError(err)).toBe(err);
    expect(err.message).toBe("could not mail https://files.example.com/api/download/[secret] (https%3A%2F%2Ffiles.example.com%2Fapi%2Fdownload%2F[secret])");
    expect(err.stack).not.toContain("AbCdEf");
    expect(cause.message).toBe("upstream refused https://files.example.com/api/download/[secret]");
    // not an Error, or no URL: as it was
    expect(withoutSecretsInError("plain")).toBe("plain");
    expect((withoutSecretsInError(new Error("no link here")) as Error).message).toBe("no link here");
  });
});

describe("DownloadUrlCodec after a key rotation", () => {
  it("encrypts with the new key and still decrypts what the retired one encrypted; without the retired key that fails, naming the keys it holds", async () => {
    const dir = tempDir("svc-codec-");
    const before = new DownloadUrlCodec(openPayloadKey(dir));
    const [old] = await before.encode([json(URL_VALUE)]);
    const { retired, current } = rotatePayloadKey(dir);
    expect(retired).toBe(before.keyId);
    const keys = openPayloadKeys(dir);
    const after = new DownloadUrlCodec(keys.current, keys.retired.map((r) => r.key));
    expect([after.keyId, after.retiredKeyIds]).toEqual([current, [retired]]);
    const [fresh] = await after.encode([json(URL_VALUE)]);
    expect(new TextDecoder().decode(fresh!.metadata!["encryption-key-id"]!)).toBe(current);
    for (const encoded of [old!, fresh!]) expect(JSON.parse(new TextDecoder().decode((await after.decode([encoded]))[0]!.data!))).toEqual(URL_VALUE);
    // the new key alone cannot read the old payload; the message says which keys it looked for
    const currentOnly = new DownloadUrlCodec(keys.current);
    await expect(currentOnly.decode([old!])).rejects.toThrow(`encrypted with key ${retired}, not this data directory's temporal-payload.key (${current}) nor a retired key in its temporal-payload-keys/, none`);
    const otherRetired = new DownloadUrlCodec(keys.current, [openPayloadKey(tempDir("svc-codec-"))]);
    await expect(otherRetired.decode([old!])).rejects.toThrow(new RegExp(`nor a retired key in its temporal-payload-keys/: ${otherRetired.retiredKeyIds[0]}$`));
  });

  it("refuses a retired key that is not 32 bytes", () => {
    expect(() => new DownloadUrlCodec(openPayloadKey(tempDir("svc-codec-")), [Buffer.alloc(16)])).toThrow("a payload key must be 32 bytes");
  });
});
