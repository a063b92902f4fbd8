import * as v from "valibot";
import { ApiError } from "../errors";

/** One validation problem: where (dot path) and what. */
export interface IssueDetail {
  path: string;
  message: string;
}

/** Flattens valibot issues to `{ path, message }` (never echoes the input value). */
export function formatIssues(issues: readonly v.BaseIssue<unknown>[], root: string): IssueDetail[] {
  return issues.map((issue) => {
    const sub = v.getDotPath(issue);
    return { path: sub ? `${root}.${sub}` : root, message: issue.message };
  });
}

/**
 * Parses `input` with `schema`.
 * @throws {ApiError} invalid_request with `details.issues`
 */
export function parseOrThrow<S extends v.GenericSchema<unknown, any>>(schema: S, input: unknown, root: string): v.InferOutput<S> {
  const result = v.safeParse(schema, input);
  if (!result.success) {
    const issues = formatIssues(result.issues, root);
    throw new ApiError("invalid_request", `Invalid ${root}: ${issues[0]!.path} ${issues[0]!.message}`, { issues });
  }
  return result.output;
}
