import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import net from "node:net";
import { aptGetInstall } from "./apt";

/**
 * Answers the path of nats-server, installing Debian's package when it is missing (this machine kind
 * runs as root with Debian's registry reachable), printing what it does.
 * @throws Error saying what to install when it cannot
 */
export function ensureNatsServer(log: (line: string) => void = (l) => process.stderr.write(`${l}\n`)): string {
  const find = () => spawnSync("sh", ["-c", "command -v nats-server || ls /usr/sbin/nats-server 2>/dev/null"], { encoding: "utf8" }).stdout.trim().split("\n")[0];
  let found = find();
  if (found) return found;
  log("[test setup] nats-server is missing: installing Debian's nats-server package (apt-get)…");
  const why = aptGetInstall(["nats-server"]);
  found = find();
  if (!found) throw new Error(`nats-server is needed for the broker stream tests and could not be installed (${why}). Install it: apt-get install nats-server`);
  return found;
}

/** A nats-server with JetStream on loopback, storing in `dir`; resolves once its port accepts connections. */
export async function startNats(bin: string, port: number, dir: string): Promise<{ process: ChildProcess; stop(): Promise<void> }> {
  const child = spawn(bin, ["-js", "-a", "127.0.0.1", "-p", String(port), "-sd", dir], { stdio: "ignore" });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const deadline = Date.now() + 15_000;
  for (;;) {
    const ok = await new Promise<boolean>((resolve) => {
      const socket = net.connect(port, "127.0.0.1", () => (socket.destroy(), resolve(true)));
      socket.once("error", () => resolve(false));
    });
    if (ok) break;
    if (Date.now() > deadline || child.exitCode !== null) throw new Error(`nats-server did not start on port ${port}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    process: child,
    stop: async () => {
      if (child.exitCode === null) child.kill("SIGTERM");
      await exited;
    },
  };
}
