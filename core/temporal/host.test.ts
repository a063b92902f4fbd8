import pino from "pino";
import { describe, expect, it } from "vitest";
import { temporalLogFunction } from "./host";

/** A pino logger whose lines (parsed) land in `lines`. */
function capturing(): { log: pino.Logger; lines: Record<string, any>[] } {
  const lines: Record<string, any>[] = [];
  return { lines, log: pino({ level: "trace" }, { write: (line: string) => void lines.push(JSON.parse(line)) }) };
}

describe("the Temporal SDK's log lines (the worker's runtime logger)", () => {
  it("keep an activity's error at err, with its type, message and stack (it was logged as error: {}), and never its task token", () => {
    const { log, lines } = capturing();
    const error = new Error("the invoice store is closed");
    const meta = { isLocal: false, attempt: 3, namespace: "default", taskToken: "CiQ0ZjY0…secret", activityId: "7", activityType: "runAction", taskQueue: "svc", workflowId: "run_1", error, durationMs: 12 };
    temporalLogFunction(log)({ level: "WARN", message: "Activity failed", meta });
    expect(lines).toHaveLength(1);
    const [line] = lines;
    expect(line).toMatchObject({ level: 40, msg: "Activity failed", err: { type: "Error", message: "the invoice store is closed", stack: expect.stringContaining("the invoice store is closed") } });
    expect(line!.temporal).toEqual({ isLocal: false, attempt: 3, namespace: "default", activityId: "7", activityType: "runAction", taskQueue: "svc", workflowId: "run_1", durationMs: 12 });
    expect(JSON.stringify(line)).not.toContain("secret");
  });

  it("drop task tokens at any depth, log ERROR lines at error, and lines without metadata as they are", () => {
    const { log, lines } = capturing();
    const logged = temporalLogFunction(log);
    logged({ level: "ERROR", message: "Worker failed", meta: { activity: { base64TaskToken: "secret", id: "1" }, err: new TypeError("bad") } });
    logged({ level: "WARN", message: "Shutting down" });
    expect(lines[0]).toMatchObject({ level: 50, msg: "Worker failed", temporal: { activity: { id: "1" } }, err: { type: "TypeError", message: "bad" } });
    expect(JSON.stringify(lines[0])).not.toContain("secret");
    expect(lines[1]).toMatchObject({ level: 40, msg: "Shutting down" });
    expect(lines[1]).not.toHaveProperty("temporal");
  });
});
