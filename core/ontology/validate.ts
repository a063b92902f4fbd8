import { ApiError } from "../errors";
import { own, propertyDef, type PropertyDefinition, type PropertyType, type ProjectDefinition } from "../sdk/project";
import type { OntologyChange } from "../sdk/context";
import { isCalendarDate, isTimestamp, TIMESTAMP_WORDS } from "../sdk/time";


function typeMatches(type: PropertyType, value: unknown): boolean {
  switch (type) {
    case "string":
      return typeof value === "string";
    case "number":
      return typeof value === "number" && Number.isFinite(value);
    case "integer":
      return Number.isSafeInteger(value);
    case "boolean":
      return typeof value === "boolean";
    case "date":
      return typeof value === "string" && isCalendarDate(value);
    case "datetime":
      return typeof value === "string" && isTimestamp(value);
    case "json":
      return true;
    case "file":
      return isFileValue(value);
  }
}

/** A file property's written value: an object whose `id` names an uploaded file (`file_…`). */
export function isFileValue(value: unknown): value is { id: string } {
  return typeof value === "object" && value !== null && !Array.isArray(value) && typeof (value as { id?: unknown }).id === "string" && /^file_[0-9A-Za-z]+$/.test((value as { id: string }).id);
}

/**
 * Every file reference value `{ id: "file_…" }` inside a JSON value, with its JSON pointer under `base`
 * (e.g. `/params/file`, `/result/attachments/0`); at most 8 levels deep.
 */
export function findFileValues(value: unknown, base: string, depth = 0): Array<{ path: string; id: string }> {
  if (isFileValue(value)) return [{ path: base, id: value.id }];
  if (depth >= 8 || typeof value !== "object" || value === null) return [];
  return Object.entries(value).flatMap(([key, child]) => findFileValues(child, `${base}/${key.replace(/~/g, "~0").replace(/\//g, "~1")}`, depth + 1));
}

/** The names of an object type's `file` properties (empty for most types). */
export function fileProperties(declared: Record<string, PropertyType | PropertyDefinition>): string[] {
  return Object.entries(declared).filter(([, d]) => propertyDef(d).type === "file").map(([name]) => name);
}

/**
 * Checks properties against their declarations. `null` clears a property (not allowed for required
 * ones on create). A name the type does not declare is refused, also one named like an
 * `Object.prototype` member (`constructor`, `toString`): only the declaration's own entries count.
 *
 * @param of what declares them, for the messages: the object type's id, or `link <linkId>`
 * @returns a list of problems, empty when valid
 */
export function checkProperties(declared: Record<string, PropertyType | PropertyDefinition>, properties: Record<string, unknown>, path: string, creating: boolean, of: string): string[] {
  const problems: string[] = [];
  if (typeof properties !== "object" || properties === null || Array.isArray(properties)) return [`${path} must be an object`];
  for (const [name, value] of Object.entries(properties)) {
    const decl = own(declared, name);
    if (!decl) problems.push(`${path}.${name} is not a property of ${of}`);
    else if (value !== null && !typeMatches(propertyDef(decl).type, value)) problems.push(propertyDef(decl).type === "file" ? `${path}.${name} must be a file reference { id: "file_…" }` : `${path}.${name} must be of type ${propertyDef(decl).type}`);
  }
  if (creating) {
    for (const [name, decl] of Object.entries(declared)) {
      if (propertyDef(decl).required && (properties[name] === undefined || properties[name] === null)) problems.push(`${path}.${name} is required`);
    }
  }
  return problems;
}

/**
 * Validates every change against the project's ontology before anything is written.
 * (Required properties are checked at apply time, when it is known whether the object exists.)
 *
 * @throws {ApiError} invalid_request listing every problem in `details.problems`
 */
export function validateChanges(project: ProjectDefinition, changes: readonly OntologyChange[]): void {
  const problems: string[] = [];
  changes.forEach((c, i) => {
    const at = `changes[${i}]`;
    switch (c.op) {
      case "object.upsert":
      case "object.update":
      case "object.delete": {
        const type = own(project.objectTypes, c.objectTypeId);
        if (!type) problems.push(`${at}: unknown object type "${c.objectTypeId}"`);
        else if (c.op !== "object.delete") problems.push(...checkProperties(type.properties, c.properties, `${at}.properties`, false, c.objectTypeId));
        if (typeof c.primaryId !== "string" || c.primaryId === "") problems.push(`${at}.primaryId must be a non-empty string`);
        break;
      }
      case "link.upsert":
      case "link.delete": {
        const link = own(project.linkTypes, c.linkId);
        if (!link) problems.push(`${at}: unknown link type "${c.linkId}"`);
        else if (link.source !== c.sourceTypeId || link.target !== c.targetTypeId) problems.push(`${at}: link "${c.linkId}" goes from ${link.source} to ${link.target}`);
        else if (c.op === "link.upsert" && c.properties) problems.push(...checkProperties(link.properties ?? {}, c.properties, `${at}.properties`, false, `link ${c.linkId}`));
        if (link && fileProperties(link.properties ?? {}).length) problems.push(`${at}: link "${c.linkId}" declares file properties; files are held by objects only`);
        break;
      }
      case "telemetry.append": {
        const t = own(project.telemetry, c.propertyId);
        if (!t || t.objectTypeId !== c.objectTypeId) problems.push(`${at}: "${c.propertyId}" is not a telemetry property of ${c.objectTypeId}`);
        if (typeof c.value !== "number" || !Number.isFinite(c.value)) problems.push(`${at}.value must be a finite number`);
        if (c.at !== undefined && !isTimestamp(c.at)) problems.push(`${at}.at must be ${TIMESTAMP_WORDS}`);
        break;
      }
      default:
        problems.push(`${at}: unknown op "${(c as { op: string }).op}"`);
    }
  });
  if (problems.length) throw new ApiError("invalid_request", `Invalid ontology write: ${problems[0]}`, { problems });
}
