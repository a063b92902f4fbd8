import * as v from "valibot";
import { describe, expect, it } from "vitest";
import { ApiError } from "../errors";
import { formatIssues, parseOrThrow } from "./validation";

/** The ApiError `fn` throws. */
function apiError(fn: () => unknown): ApiError {
  try {
    fn();
  } catch (err) {
    if (err instanceof ApiError) return err;
    throw err;
  }
  throw new Error("expected an ApiError");
}

describe("request validation (parseOrThrow)", () => {
  const Query = v.object({ objectTypeId: v.string(), pageSize: v.optional(v.string()), where: v.optional(v.object({ status: v.string() })) });

  it("says a missing required key is required, naming its path (not valibot's 'Invalid key: Expected … but received undefined')", () => {
    const err = apiError(() => parseOrThrow(Query, { pageSize: "2" }, "query"));
    expect(err.code).toBe("invalid_request");
    expect(err.message).toBe("Invalid query: query.objectTypeId is required");
    expect(err.details).toEqual({ issues: [{ path: "query.objectTypeId", message: "is required" }] });
    // nested too
    expect(apiError(() => parseOrThrow(Query, { objectTypeId: "invoice", where: {} }, "body")).message).toBe("Invalid body: body.where.status is required");
  });

  it("says a field a strict object does not take is not a field here (not valibot's 'Invalid key: Expected never but received \"kind\"')", () => {
    const Body = v.strictObject({ files: v.array(v.string()), title: v.optional(v.string()) });
    const err = apiError(() => parseOrThrow(Body, { files: [], kind: "document" }, "body"));
    expect(err.message).toBe("Invalid body: body.kind is not a field here");
    expect(err.details).toEqual({ issues: [{ path: "body.kind", message: "is not a field here" }] });
  });

  it("keeps the schema's own message for a value that is there but wrong", () => {
    const Body = v.object({ n: v.pipe(v.number(), v.minValue(1, "must be at least 1")) });
    expect(apiError(() => parseOrThrow(Body, { n: 0 }, "body")).message).toBe("Invalid body: body.n must be at least 1");
    // a key that is there with a value of the wrong type, even undefined (an in-process caller), is no missing key
    for (const k of [1, undefined]) expect(formatIssues(v.safeParse(v.object({ k: v.string() }), { k }).issues!, "body")[0]!.message).toMatch(/^Invalid type/);
  });
});
