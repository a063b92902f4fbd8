/**
 * Who may answer an intervention (spec 4.3; `InterventionAssignees`: `{ identities?: string[],
 * permission?: string }`): the rule the API applies to each caller, and the check that an intervention
 * can be answered by someone at all before it opens.
 */
import { has, type Principal } from "../auth/permissions";
import type { ProjectRegistry } from "../project/registry";
import type { InterventionAssignees } from "../sdk/activities-types";

/** True when the principal may answer: a listed identity, or a holder of the named permission. */
export function mayAnswer(principal: Principal, assignees: InterventionAssignees): boolean {
  return (assignees.identities?.includes(principal.id) ?? false) || (assignees.permission !== undefined && has(principal, assignees.permission));
}

/**
 * Why nobody could answer an intervention assigned to `assignees` (spec 4.3), or undefined when an
 * identity of the project could ({@link mayAnswer}, asked of each). The message says what was wrong (no
 * one named, an identity the project does not define, a permission no identity holds) and lists the
 * project's identities. A run whose intervention nobody could answer would wait, silently, until it expires.
 */
export function assigneesProblem(project: ProjectRegistry, assignees: unknown): string | undefined {
  const known = project.identityIds();
  const theirs = `the project's identities are: ${known.join(", ") || "(none)"}`;
  const { identities, permission } = (typeof assignees === "object" && assignees !== null ? assignees : {}) as { identities?: unknown; permission?: unknown };
  if ((identities !== undefined && !(Array.isArray(identities) && identities.every((i) => typeof i === "string"))) || (permission !== undefined && typeof permission !== "string")) {
    return `its assignees must be { identities?: string[], permission?: string }, not ${JSON.stringify(assignees) ?? String(assignees)}`;
  }
  const named = (identities ?? []) as string[];
  if (named.length === 0 && !permission) return `its assignees name nobody: give identities ({ identities: ["${known[0] ?? "alice"}"] }) or a permission ({ permission: "approve:invoice" }); ${theirs}`;
  const checked = { ...(identities ? { identities: named } : {}), ...(permission ? { permission: permission as string } : {}) };
  if (known.some((id) => mayAnswer({ type: "user", id, permissions: project.identityPermissions(id)! }, checked))) return undefined;
  const why = [
    ...(named.length ? [`${named.length === 1 ? "no identity" : "no identities"} ${named.map((id) => `"${id}"`).join(", ")} in this project`] : []),
    ...(permission ? [`no identity holds the permission "${permission}"`] : []),
  ];
  return `nobody could answer it (${why.join("; ")}); ${theirs}`;
}
