import { own, propertyDef, type ProjectDefinition, type PropertyType } from "../sdk/project";
import { compileDataset, type CompiledDataset, type DatasetColumn, type DatasetDefinition } from "../sdk/datasets";

/** A dataset with the connector that declares it and its compiled row validator. */
export interface RegisteredDataset {
  id: string;
  connectorId: string;
  definition: DatasetDefinition;
  compiled: CompiledDataset;
}

/** Whether values of a column type may be written to a property type as they are. */
function fits(column: DatasetColumn["type"], property: PropertyType): boolean {
  if (property === "json" || column === "json" || column === property) return true;
  if (column === "integer" && property === "number") return true;
  return (column === "date" || column === "datetime") && property === "string";
}

/**
 * Indexes the connectors' datasets and checks every projection against the project (spec 2.3
 * `projection` origin): the object type exists and is projected by one dataset only; each mapped
 * property exists, is not a `file` property, and a column mapped to it exists with a type that fits;
 * every required property is mapped (from a required column when mapped from a column); each link's
 * type goes from the projected type to `targetTypeId`, and its `targetId` column exists.
 *
 * @throws Error naming the dataset and the first unknown or mismatched object type, property, column or link
 */
export function registerDatasets(project: ProjectDefinition): Map<string, RegisteredDataset> {
  const out = new Map<string, RegisteredDataset>();
  const owners = new Map<string, string>();
  for (const connector of project.connectors ?? []) {
    for (const [id, definition] of Object.entries(connector.datasets ?? {})) {
      let compiled: CompiledDataset;
      try {
        compiled = compileDataset(definition);
      } catch (err) {
        throw new Error(`Dataset "${id}" of connector "${connector.id}": ${err instanceof Error ? err.message : String(err)}`);
      }
      const fail = (message: string): never => {
        throw new Error(`Dataset "${id}" of connector "${connector.id}": ${message}`);
      };
      const projection = definition.projection;
      if (projection) {
        const type = own(project.objectTypes, projection.objectTypeId);
        if (!type) fail(`its projection names unknown object type "${projection.objectTypeId}"`);
        const other = owners.get(projection.objectTypeId);
        if (other) fail(`object type "${projection.objectTypeId}" is already projected from dataset "${other}"`);
        owners.set(projection.objectTypeId, id);
        const columns = new Map(compiled.columns.map((c) => [c.name, c]));
        for (const [property, source] of Object.entries(projection.properties)) {
          const declared = own(type!.properties, property);
          if (!declared) fail(`its projection maps unknown property "${property}" of object type "${projection.objectTypeId}"`);
          const decl = propertyDef(declared!);
          if (decl.type === "file") fail(`its projection maps "${property}", a file property: files cannot be projected`);
          if (typeof source === "function") continue;
          const column = columns.get(source);
          if (!column) fail(`its projection maps property "${property}" from unknown column "${source}" (columns: ${[...columns.keys()].join(", ")})`);
          if (!fits(column!.type, decl.type)) fail(`its projection maps column "${source}" (${column!.type}) to property "${property}" (${decl.type})`);
        }
        for (const [property, declared] of Object.entries(type!.properties)) {
          if (!propertyDef(declared).required) continue;
          const source = projection.properties[property];
          if (source === undefined) fail(`its projection does not map property "${property}", which object type "${projection.objectTypeId}" requires`);
          if (typeof source === "string" && !columns.get(source)!.required) fail(`its projection maps required property "${property}" from column "${source}", which rows may leave out`);
        }
        for (const link of projection.links ?? []) {
          const linkType = own(project.linkTypes, link.linkId);
          if (!linkType) fail(`its projection names unknown link type "${link.linkId}"`);
          if (linkType!.source !== projection.objectTypeId || linkType!.target !== link.targetTypeId) fail(`link "${link.linkId}" goes from ${linkType!.source} to ${linkType!.target}, not from ${projection.objectTypeId} to ${link.targetTypeId}`);
          if (!columns.has(link.targetId)) fail(`its projection's link "${link.linkId}" takes targetId from unknown column "${link.targetId}"`);
        }
      }
      out.set(id, { id, connectorId: connector.id, definition, compiled });
    }
  }
  return out;
}
