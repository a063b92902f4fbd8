import * as v from "valibot";
import { ApiError, DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE, ObjectRecordSchema, QUERY_OPERATORS, OntologyStore, QUERY_WORDING, can, containsApplies, definePlugin, operandKind, own, propertyDef, requirePermission, type ObjectTypeDefinition, type OperandKind, type Principal, type PropertyType } from "../../core/plugin-api";

const PageSchema = v.object({ data: v.array(ObjectRecordSchema), nextPageToken: v.optional(v.string()) });

const pageSize = v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(MAX_PAGE_SIZE));
const scalar = v.union([v.string(), v.number(), v.boolean(), v.null()]);
const OPERATORS = `(${QUERY_OPERATORS.join(", ")})`;
const NO_OPERATOR = QUERY_WORDING.noOperator;
/** Names the unknown operators of a condition object, if any. */
const unknownOperators = (input: unknown) =>
  input !== null && typeof input === "object" && !Array.isArray(input) ? Object.keys(input).filter((k) => !QUERY_OPERATORS.includes(k)) : [];
const unknownMessage = (unknown: string[]) => `unknown operator ${unknown.map((k) => JSON.stringify(k)).join(", ")} (use ${QUERY_OPERATORS.join(", ")})`;
/**
 * A `where` condition of an object type this project does not have (the query answers 404): a bare
 * value (equality) or an object of operators. When neither fits, the message names the unknown
 * operators, if any (valibot's own union message only lists the shapes it expected).
 */
const ConditionSchema = v.union(
  [
    scalar,
    v.pipe(
      v.strictObject(
        {
          eq: v.optional(scalar), ne: v.optional(scalar), gt: v.optional(scalar), gte: v.optional(scalar), lt: v.optional(scalar), lte: v.optional(scalar),
          in: v.optional(v.pipe(v.array(scalar), v.minLength(1), v.maxLength(500))), contains: v.optional(v.string()), exists: v.optional(v.boolean()),
        },
        ({ input }) => unknownMessage([String(input)]),
      ),
      v.minEntries(1, NO_OPERATOR),
    ),
  ],
  ({ input }) => {
    const unknown = unknownOperators(input);
    return unknown.length ? unknownMessage(unknown) : `a condition is a string, number, boolean or null (equality) or an object of operators ${OPERATORS}, each with a value of its type`;
  },
);

const OPERANDS: Record<Exclude<OperandKind, "none">, v.GenericSchema> = { string: v.string(), number: v.number(), boolean: v.boolean(), any: v.union([v.string(), v.number(), v.boolean()]) };

/**
 * The `where` condition of one property, typed as {@link compileObjectQuery} checks it (spec 4.3):
 * values of the property's {@link operandKind}, `null` only in `eq`/`ne`, `contains` only where it
 * applies, at least one operator. Its messages name the property's type.
 */
function conditionFor(property: string, type: PropertyType | "primaryId") {
  const kind = operandKind(type);
  if (kind === "none") {
    // a file reference: present or absent is all a filter can say about it
    const refusedFile = (input: unknown) => {
      const unknown = unknownOperators(input);
      return unknown.length ? unknownMessage(unknown) : QUERY_WORDING.fileProperty(property);
    };
    const operators = { eq: v.optional(v.null()), ne: v.optional(v.null()), exists: v.optional(v.boolean()) };
    return v.union([v.null(), v.pipe(v.strictObject(operators, ({ input }) => refusedFile({ [String(input)]: true })), v.minEntries(1, NO_OPERATOR))], ({ input }) => refusedFile(input));
  }
  const value = OPERANDS[kind];
  const orNull = v.union([value, v.null()]);
  const contains = containsApplies(type);
  const what = QUERY_WORDING.property(type);
  const kindName = QUERY_WORDING.kindNames[kind];
  const refused = (input: unknown) => {
    const unknown = unknownOperators(input);
    if (unknown.length) return unknownMessage(unknown);
    if (!contains && input !== null && typeof input === "object" && "contains" in input) return QUERY_WORDING.containsNotText(property, type);
    return `a condition on ${property} (${what}) is ${kindName} or null (equality) or an object of operators ${OPERATORS} with ${kindName} as each value (null only in eq and ne; in takes a list of 1 to 500)`;
  };
  const operators: v.ObjectEntries = {
    eq: v.optional(orNull), ne: v.optional(orNull), gt: v.optional(value), gte: v.optional(value), lt: v.optional(value), lte: v.optional(value),
    in: v.optional(v.pipe(v.array(value), v.minLength(1), v.maxLength(500))),
    ...(contains ? { contains: v.optional(v.string()) } : {}),
    exists: v.optional(v.boolean()),
  };
  return v.union(
    [orNull, v.pipe(v.strictObject(operators, ({ input }) => refused({ [String(input)]: true })), v.minEntries(1, NO_OPERATOR))],
    ({ input }) => refused(input),
  );
}

const QueryBody = v.strictObject({
  objectTypeId: v.pipe(v.string(), v.minLength(1), v.description("Object type to query")),
  where: v.optional(v.pipe(v.record(v.string(), ConditionSchema), v.description("Property filters, all of which must hold. A bare value means equality; operators: eq, ne, gt, gte, lt, lte, in, contains (case-insensitive substring), exists. `primaryId` filters the id. Values are of the property's type: a string for string, date, datetime properties and primaryId, a number for number and integer, a boolean for boolean, any string, number or boolean for json; a file property takes only exists (or eq/ne null); null only in eq and ne (absent); contains (text values only) on text and json properties."))),
  orderBy: v.optional(v.strictObject({ property: v.string(), direction: v.optional(v.picklist(["asc", "desc"])) })),
  pageSize: v.optional(v.pipe(pageSize, v.description(`Page size, 1 to ${MAX_PAGE_SIZE} (default ${DEFAULT_PAGE_SIZE})`))),
  nextPageToken: v.optional(v.pipe(v.string(), v.description("`nextPageToken` of the previous page of the same query (opaque; another value is 400)"))),
});
/**
 * The query body of a project: {@link QueryBody}, where for each object type the `where` keys and
 * `orderBy.property` are among its properties (or `primaryId`) and each condition is typed by its
 * property ({@link conditionFor}), as the query compiler requires. Any other `objectTypeId` is
 * well-formed and answered 404 (unknown type).
 */
const queryBodyFor = (objectTypes: Record<string, ObjectTypeDefinition>) => {
  const known = Object.keys(objectTypes);
  const refine = (objectTypeId: v.GenericSchema<string>, where: v.GenericSchema, property: v.GenericSchema<string>) => v.object({ objectTypeId, where: v.optional(where), orderBy: v.optional(v.object({ property })) });
  return v.intersect([
    QueryBody,
    v.variant("objectTypeId", [
      ...known.map((id) => {
        const properties: [string, PropertyType | "primaryId"][] = [["primaryId", "primaryId"], ...Object.entries(objectTypes[id]!.properties).map(([p, d]) => [p, propertyDef(d).type] as [string, PropertyType])];
        const names = [...new Set(properties.map(([p]) => p))];
        const notProperty = `must be primaryId or a property of ${id}`;
        const where = v.strictObject(Object.fromEntries(properties.map(([p, t]) => [p, v.optional(conditionFor(p, t))])), ({ input }) => `"${String(input)}" is not a property of ${id} (${names.join(", ")})`);
        return refine(v.literal(id), where, v.pipe(v.string(), v.values(names, notProperty)));
      }),
      refine(v.pipe(v.string(), v.notValues(known)), v.record(v.string(), v.unknown()), v.string()),
    ]),
  ]);
};

/**
 * Objects (spec 4.1): `GET /api/objects`, `GET /api/objects/:objectTypeId/:primaryId`,
 * `POST /api/objects/query`. Results are scoped to what the caller may view: reading a type needs
 * `view:object:<type>` (403 otherwise).
 */
export default definePlugin({
  name: "objects",
  deps: { ontology: OntologyStore },
  setup({ routes, project }, { ontology }) {
    // the domain types these routes answer, named in the OpenAPI document (ObjectRecord)
    routes.component("ObjectRecord", ObjectRecordSchema);
    /** 404 for an unknown type, then 403 without view permission. */
    const canView = (principal: Principal, objectTypeId: string) => {
      if (!own(project.definition.objectTypes, objectTypeId)) throw new ApiError("not_found", `Unknown object type "${objectTypeId}"`);
      requirePermission(principal, can.view(objectTypeId));
    };
    routes.add({
      method: "GET",
      path: "/api/objects",
      summary: "List objects of a type",
      description: "Objects of one type ordered by primaryId, one page at a time. Pass `nextPageToken` from the previous page to continue. Needs view:object:<objectTypeId>.",
      tags: ["objects"],
      auth: "bearer",
      query: v.object({
        objectTypeId: v.pipe(v.string(), v.minLength(1), v.description("Object type to list")),
        pageSize: v.optional(routes.schemas.queryInteger({ min: 1, max: MAX_PAGE_SIZE, description: `1 to ${MAX_PAGE_SIZE}, default ${DEFAULT_PAGE_SIZE}` })),
        nextPageToken: v.optional(v.pipe(v.string(), v.description("From the previous page of the same objectTypeId (opaque; another value is 400)"))),
      }),
      responses: { 200: { description: "A page of objects", schema: PageSchema }, 400: { description: "`invalid_request`: the query does not match this operation's schema, or `nextPageToken` is not one of this listing's page tokens" }, 404: { description: "`not_found`: no such object type" } },
      handler: ({ principal, query }) => {
        canView(principal!, query.objectTypeId);
        return ontology.query({ objectTypeId: query.objectTypeId, pageSize: query.pageSize, nextPageToken: query.nextPageToken });
      },
    });
    routes.add({
      method: "GET",
      path: "/api/objects/:objectTypeId/:primaryId",
      summary: "Read one object",
      tags: ["objects"],
      auth: "bearer",
      description: "`primaryId` is percent-encoded (`encodeURIComponent`): an id holding `/` or `%`, such as a composite dataset key `a%2Fb/c`, is sent as `a%252Fb%2Fc`.",
      params: v.object({ objectTypeId: v.string(), primaryId: v.pipe(v.string(), v.description("The object's primary id, percent-encoded")) }),
      responses: { 200: { description: "The object", schema: ObjectRecordSchema } },
      handler: async ({ principal, params }) => {
        const { objectTypeId, primaryId } = params;
        canView(principal!, objectTypeId);
        const object = await ontology.getObject(objectTypeId, primaryId);
        if (!object) throw new ApiError("not_found", `No ${objectTypeId} "${primaryId}"`);
        return object;
      },
    });
    routes.add({
      method: "POST",
      path: "/api/objects/query",
      summary: "Query objects",
      description: "Filter on properties, sort by one property (nulls last, ties by primaryId), and page with keyset tokens: pages never skip or repeat objects. Needs view:object:<objectTypeId>.",
      tags: ["objects"],
      auth: "bearer",
      body: queryBodyFor(project.definition.objectTypes),
      responses: { 200: { description: "A result page with `nextPageToken` when more remain", schema: PageSchema }, 400: { description: "`invalid_request`: the body does not match this operation's schema or is not valid JSON, or `nextPageToken` is not a page token of this query" }, 404: { description: "`not_found`: no such object type" } },
      handler: ({ principal, body }) => {
        canView(principal!, body.objectTypeId);
        return ontology.query(body);
      },
    });
  },
});
