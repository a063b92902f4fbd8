/**
 * The dev server's readiness probe (core/temporal/frontend-probe.ts) against the tests' real Temporal
 * dev server, a closed port, and a TCP server that never answers.
 */
import net from "node:net";
import { afterAll, describe, expect, inject, it } from "vitest";
import { freePort } from "../../test/setup/global";
import { frontendServes } from "./frontend-probe";

describe("frontendServes", () => {
  const accepted = new Set<net.Socket>();
  const silent = net.createServer((socket) => accepted.add(socket)); // accepts, then says nothing
  afterAll(() => {
    for (const socket of accepted) socket.destroy();
    return new Promise<void>((resolve) => silent.close(() => resolve()));
  });

  it("resolves for a frontend that serves the namespace", async () => {
    await expect(frontendServes(inject("temporalAddress"), "default")).resolves.toBeUndefined();
  });

  it("rejects with the gRPC status when the namespace is unknown", async () => {
    await expect(frontendServes(inject("temporalAddress"), "no-such-namespace-here")).rejects.toThrow(/^DescribeNamespace: gRPC status 5 \(.*no-such-namespace-here.*\)/);
  });

  it("rejects when nothing listens", async () => {
    await expect(frontendServes(`127.0.0.1:${await freePort()}`, "default")).rejects.toThrow(/ECONNREFUSED/);
  });

  it("rejects after timeoutMs when the peer never answers", async () => {
    const port = await freePort();
    await new Promise<void>((resolve) => silent.listen(port, "127.0.0.1", resolve));
    const began = Date.now();
    await expect(frontendServes(`127.0.0.1:${port}`, "default", 300)).rejects.toThrow(`no answer from 127.0.0.1:${port} within 300 ms`);
    expect(Date.now() - began).toBeGreaterThanOrEqual(290);
  });
});
