import * as v from "valibot";
import { toJsonSchema, toJsonSchemaDefs, type ConversionConfig } from "@valibot/to-json-schema";
import type { Metrics } from "../metrics";
import { defineWebSocketHandler, getQuery, type H3, type H3Event } from "h3";
import type { Hooks as WebSocketHooks } from "crossws";
import { ApiError, ERROR_STATUS, isApiError, type ErrorCode } from "../errors";
import type { Logger } from "../logger";
import type { Principal } from "../auth/permissions";
import type { Lifecycle } from "../lifecycle";
import { emptyJsonBody, MAX_BODY_BYTES, readJsonBody } from "./body";
import { defaultsToEmptyObject, deprecated, documentedAs, documentedJsonSchema, pageQuery, queryCommaList, queryGroups, queryInteger, queryParameterGroups, queryParameterNames, type Deprecation } from "./schemas";
import { DEPRECATION_HEADER_DOCS, RouteDeprecations, deprecationHeaders } from "./deprecations";
import { decodePathParams, parseOrThrow } from "./validation";
import { errorResponse, jsonResponse, withHeaders } from "./response";
import type { Cors } from "./cors";

type Schema = v.GenericSchema<unknown, any>;
type ObjectSchema = v.ObjectSchema<any, any> | v.LooseObjectSchema<any, any> | v.StrictObjectSchema<any, any>;
type Out<S> = S extends Schema ? v.InferOutput<S> : undefined;

export type HttpMethod = "GET" | "HEAD" | "POST" | "PUT" | "PATCH" | "DELETE" | "OPTIONS";

/**
 * How a route authenticates (spec 5): `bearer` routes accept `Authorization: Bearer <API_TOKEN>` or a
 * browser session; `session` routes accept only a browser session (and refuse bearer tokens); `none`
 * routes are public or verify requests themselves (webhooks).
 */
export type AuthMode = "bearer" | "session" | "none";

/**
 * A documented response: what it means, and its body: `schema` for a JSON body (an error status
 * without one gets the structured error body), or `contentType` for a body of another type;
 * `headers` documents response headers the route may set (name → description; OpenAPI's
 * `responses.<status>.headers`, each a string, none required).
 */
export interface ResponseDoc {
  description: string;
  schema?: Schema;
  contentType?: string;
  headers?: Record<string, string>;
}

/**
 * A route: method, path (h3 syntax, `:name` parameters), auth, valibot schemas for params, query and
 * JSON body (validated before the handler runs, and the same schemas generate the OpenAPI document),
 * documented responses, and the handler. A handler answers a JSON-serializable value (200), a
 * `Response`, or throws an {@link ApiError}.
 *
 * `responses` lists the statuses the route answers beyond those its declaration implies, which the
 * OpenAPI generator adds itself (see {@link implicitErrorResponses}): 400, 401/403, 404, 413/415, 500.
 * `default` documents "any other status" (for example a webhook handler's own answer).
 */
export interface RouteDefinition<PS extends ObjectSchema | undefined = undefined, QS extends Schema | undefined = undefined, BS extends Schema | undefined = undefined> {
  method: HttpMethod;
  path: string;
  summary: string;
  description?: string;
  tags: string[];
  auth: AuthMode;
  params?: PS;
  query?: QS;
  /**
   * The operation takes query parameters it does not declare, and never refuses them (`/api/…` routes
   * otherwise do): a provider's on a webhook URL, a mail client's on a download URL. The handler finds
   * them in the request's URL.
   */
  anyQuery?: true;
  body?: BS;
  /**
   * Stricter bodies for some values of one path parameter (an action's params, a workflow's input):
   * when `params[param]` is a key of `bodies`, the body must also pass that schema (checked first; the
   * handler still gets `body`'s output), and OpenAPI documents it as an operation of its own on the
   * concrete path, the templated path being documented for the other values. Each should accept only
   * what `body` accepts.
   */
  bodyByParam?: { param: string; bodies: Record<string, Schema> };
  /** `raw`: the handler reads the body itself (documented with `rawBodyDoc`). */
  bodyMode?: "json" | "raw";
  /** How a `raw` body is documented; `schema` is the JSON Schema of its content (e.g. a multipart form's parts). */
  rawBodyDoc?: { contentType: string; description: string; schema?: Record<string, unknown> };
  responses: { [status: number]: ResponseDoc; default?: ResponseDoc };
  handler(ctx: { event: H3Event; principal: Principal | undefined; params: Out<PS>; query: Out<QS>; body: Out<BS> }): unknown;
}

/**
 * Resolves the caller of a request for a route's auth mode, or throws `unauthorized` / 403;
 * `renewedCookie` is a `Set-Cookie` value the response carries (a renewed session).
 */
export type Authenticator = (req: Request, mode: "bearer" | "session") => Promise<{ principal: Principal; renewedCookie?: string }>;

const ErrorBodySchema = v.object({
  error: v.object({
    code: v.pipe(v.picklist(Object.keys(ERROR_STATUS) as [ErrorCode, ...ErrorCode[]]), v.description("Stable: branch on it, never on `message` (spec 7); codes may be added, none renamed")),
    message: v.pipe(v.string(), v.description("For people: it may change")),
    details: v.optional(v.pipe(v.unknown(), v.description("The code's particulars, e.g. `problems` of `invalid_request` and `artifact_invalid`, `currentVersion` of a `conflict`, `retryAfterSeconds` of `too_many_requests`"))),
  }),
});

/**
 * The error statuses a route answers by the way it is declared, documented by the OpenAPI generator
 * beside the route's own `responses` (which take precedence): 400 when it validates a path, query or
 * body; 401 and 403 when it authenticates (on a session-only route, 403 only for a method other than
 * GET, HEAD and OPTIONS: the CSRF and Origin checks); 404 when its path names a resource; 413 when it
 * reads a body and 415 when that body is JSON; 500 always. Each carries the structured error body.
 *
 * @returns status → response doc (descriptions name the error codes)
 */
export function implicitErrorResponses(def: Pick<RouteDefinition<any, any, any>, "method" | "params" | "query" | "body" | "bodyMode" | "auth">): Record<number, ResponseDoc> {
  const out: Record<number, ResponseDoc> = {};
  const where = [def.params && "path", def.query && "query", def.body && "body"].filter(Boolean).join(", ");
  if (where) out[400] = { description: `\`invalid_request\`: the ${where} does not match this operation's schema${def.body ? ", or the body is not valid JSON" : ""} (\`details.issues\` says where)` };
  if (def.auth === "bearer") {
    out[401] = { description: "`unauthorized`: no API token (`Authorization: Bearer`) or browser session, or an unknown, revoked or expired one" };
    out[403] = { description: "`forbidden`: the identity lacks a permission this operation needs; with a browser session, a mutating request without the session's `x-svc-csrf` token (`csrf_token_invalid`) or from an Origin not allowed (`origin_not_allowed`)" };
  } else if (def.auth === "session") {
    out[401] = { description: "`unauthorized`: no browser session, or an expired one; bearer tokens are refused here" };
    if (!["GET", "HEAD", "OPTIONS"].includes(def.method)) out[403] = { description: "`csrf_token_invalid` / `origin_not_allowed`: a request without the session's `x-svc-csrf` token, or from an Origin not allowed" };
  }
  if (def.params) out[404] = { description: "`not_found`: nothing has the identifiers in the path" };
  if (def.body || def.bodyMode === "raw") out[413] = { description: `\`payload_too_large\`: the body exceeds ${MAX_BODY_BYTES} bytes (with or without Content-Length)` };
  if (def.body) out[415] = { description: "`unsupported_media_type`: a non-empty body whose Content-Type is not `application/json` (or `+json`)" };
  out[500] = { description: "`internal`: an unexpected error (details go to the server log only)" };
  return out;
}

/**
 * Collects routes from plugins, mounts them on h3 and generates OpenAPI 3.1 from the same schemas
 * that validate. Routes must all be added before {@link RouteRegistry.mount}; h3 freezes its router at
 * `serve()`.
 */
export class RouteRegistry {
  private readonly routes: RouteDefinition<any, any, any>[] = [];
  private readonly sockets: Array<{ path: string; summary: string; description: string; hooks: Partial<WebSocketHooks> }> = [];
  /** The OpenAPI document's named schemas ({@link RouteRegistry.component}), by name. */
  private readonly components = new Map<string, Schema>();
  /** The deprecated query parameters and body properties of the routes ({@link deprecated}), and their uses. */
  private readonly deprecations: RouteDeprecations;
  private mounted = false;
  /**
   * The schema helpers of core/http/schemas.ts, whose JSON Schema the OpenAPI generator understands,
   * for plugins' route declarations (plugins import only core/plugin-api).
   */
  readonly schemas = { queryInteger, queryCommaList, queryGroups, defaultsToEmptyObject, documentedAs, deprecated, pageQuery };

  constructor(
    private readonly authenticate: Authenticator,
    private readonly lifecycle: Lifecycle,
    private readonly log: Pick<Logger, "error" | "warn">,
    /** Where each answered request is recorded (`svc_http_…`, core/metrics.ts); none in tests that need no metrics. */
    private readonly metrics?: Pick<Metrics, "observeRequest" | "openSockets">,
    /**
     * The public origin the answers' links are made absolute with (`SVC_API_PUBLIC_ORIGIN`, which may
     * carry a proxy's path prefix), read per answer: with PORT=0 it is known only once the server
     * listens. Undefined: links are root-relative (`</docs>`), resolved against the request's URL.
     */
    private readonly publicOrigin?: () => string | undefined,
    /** The allowed origins' CORS (spec 5), applied to every answer and to preflights; none in tests that need none. */
    private readonly cors?: Cors,
  ) {
    this.deprecations = new RouteDeprecations(log);
  }

  /**
   * Adds a route.
   * @throws Error after mount, or when the method and path are taken
   */
  add<PS extends ObjectSchema | undefined = undefined, QS extends Schema | undefined = undefined, BS extends Schema | undefined = undefined>(def: RouteDefinition<PS, QS, BS>): void {
    if (this.mounted) throw new Error(`Route ${def.method} ${def.path} added after the server started`);
    if (this.routes.some((r) => r.method === def.method && r.path === def.path)) throw new Error(`Route ${def.method} ${def.path} is registered twice`);
    this.routes.push(def);
    this.deprecations.add(def);
  }

  /**
   * Adds a WebSocket endpoint (crossws hooks). Its `upgrade` hook authenticates (throwing or answering
   * a `Response` refuses). A plain HTTP GET (no `Upgrade: websocket`) is authenticated the same way and
   * then answered 426 `upgrade_required` with the structured error body. It is documented in OpenAPI as
   * a GET answering 101, 401, 403, 426 and 500, with `x-svc-websocket: true`.
   */
  ws(path: string, doc: { summary: string; description: string }, hooks: Partial<WebSocketHooks>): void {
    if (this.mounted) throw new Error(`WebSocket ${path} added after the server started`);
    this.sockets.push({ path, ...doc, hooks });
  }

  /**
   * Names `schema` in the OpenAPI document (components.schemas, OpenAPI 3.1 4.8.7): each place an
   * operation uses this very schema object reads `{ "$ref": "#/components/schemas/<name>" }`, and the
   * schema is written once under its name, so a generated client has one named type (`Artifact`,
   * `WorkflowRunState`) instead of an anonymous copy per operation. Validation is unchanged. A plugin
   * names the domain types its routes answer; naming the same schema again under the same name is allowed.
   * @param name the component's name (`^[A-Za-z0-9._-]+$`), the spec's name of the type
   * @returns `schema`, for declaring and naming in one expression
   * @throws Error after mount, for a name outside that pattern, one already given to another schema, or a
   *   schema already named otherwise
   */
  component<S extends Schema>(name: string, schema: S): S {
    if (this.mounted) throw new Error(`Component ${name} named after the server started`);
    if (!/^[A-Za-z0-9._-]+$/.test(name) || name === "Error") throw new Error(`Component name "${name}" is not allowed: use letters, digits, ".", "_" and "-" (Error is the error body's)`);
    const named = this.components.get(name);
    if (named && named !== schema) throw new Error(`Component ${name} is already another schema`);
    // the converter would reference the schema by one of its names only: the other would be written unused
    const other = [...this.components].find(([n, s]) => s === schema && n !== name)?.[0];
    if (other) throw new Error(`This schema is already component ${other}; it cannot also be ${name}`);
    this.components.set(name, schema);
    return schema;
  }

  /** Registers every route on the h3 app. */
  mount(app: H3): void {
    this.mounted = true;
    for (const socket of this.sockets) {
      app.get(
        socket.path,
        defineWebSocketHandler(this.counted(socket.path, socket.hooks), async (event) => {
          const answer = await this.plainGet(socket.path, socket.hooks, event);
          this.metrics?.observeRequest("GET", socket.path, answer.status);
          return answer;
        }),
      );
    }
    const methods = new Map<string, string[]>(this.sockets.map((socket) => [socket.path, ["GET"]]));
    for (const def of this.routes) {
      app.on(def.method, def.path, (event) => this.dispatch(def, event));
      methods.set(def.path, [...(methods.get(def.path) ?? []), def.method]);
    }
    // HEAD wherever GET is (RFC 9110 9.3.2): the GET's answer without its body (h3 drops it for HEAD)
    for (const def of this.routes) {
      if (def.method !== "GET" || methods.get(def.path)!.includes("HEAD")) continue;
      app.on("HEAD", def.path, (event) => this.dispatch(def, event));
      methods.set(def.path, [...methods.get(def.path)!, "HEAD"]);
    }
    // Any other method on a known path: 405 with Allow (method-specific routes match first). The message
    // names the path as requested (the template stays in `details.route`).
    for (const [path, allowed] of methods) {
      const allow = allowed.join(", ");
      app.all(path, (event) => {
        // a browser app of an allowed origin asks before it calls (spec 5)
        if (this.cors && event.req.method === "OPTIONS") {
          try {
            const preflight = this.cors.preflight(event, allowed);
            if (preflight) {
              this.metrics?.observeRequest("OPTIONS", path, 204);
              return preflight;
            }
          } catch (err) {
            this.metrics?.observeRequest("OPTIONS", path, 403);
            return errorResponse(err);
          }
        }
        this.metrics?.observeRequest(event.req.method, path, 405);
        return errorResponse(new ApiError("method_not_allowed", `${event.req.method} is not allowed on ${event.url.pathname}; use ${allow}`, { allow: allowed, route: path }, { allow }));
      });
    }
  }

  /** `hooks` with each open socket counted in the metrics (`svc_websocket_connections{path}`) from its `open` to its `close`. */
  private counted(path: string, hooks: Partial<WebSocketHooks>): Partial<WebSocketHooks> {
    const metrics = this.metrics;
    if (!metrics) return hooks;
    const open = new WeakSet<object>();
    return {
      ...hooks,
      open: (peer) => {
        open.add(peer);
        metrics.openSockets(path, 1);
        return hooks.open?.(peer);
      },
      close: (peer, details) => {
        if (open.delete(peer)) metrics.openSockets(path, -1);
        return hooks.close?.(peer, details);
      },
    };
  }

  /**
   * Answers a WebSocket endpoint's plain HTTP GET: the `upgrade` hook's refusal (401, 403) when it
   * refuses, else 426 `upgrade_required` with `Upgrade: websocket`.
   */
  private async plainGet(path: string, hooks: Partial<WebSocketHooks>, event: H3Event): Promise<Response> {
    try {
      const answer = await hooks.upgrade?.(event.req as Parameters<NonNullable<WebSocketHooks["upgrade"]>>[0]);
      if (answer instanceof Response) return answer;
    } catch (err) {
      if (err instanceof Response) return err;
      if (!isApiError(err)) this.log.error({ err, method: "GET", route: path }, "request failed");
      return errorResponse(err);
    }
    const body = { error: { code: "upgrade_required", message: `${path} is a WebSocket endpoint: connect with a WebSocket client (Upgrade: websocket)` } };
    return jsonResponse(body, 426, { upgrade: "websocket", connection: "Upgrade" });
  }

  /** Answers a request of `def`'s route, and records it in the metrics (route template, status, seconds to the answer's headers). */
  private async dispatch(def: RouteDefinition<any, any, any>, event: H3Event): Promise<Response> {
    if (!this.metrics) return this.answer(def, event);
    const started = performance.now();
    const response = await this.answer(def, event);
    this.metrics.observeRequest(event.req.method, def.path, response.status, (performance.now() - started) / 1000);
    return response;
  }

  private async answer(def: RouteDefinition<any, any, any>, event: H3Event): Promise<Response> {
    const leave = this.lifecycle.enter();
    // a browser app of an allowed origin reads the answer, errors included (spec 5)
    const origin = this.cors?.allowedOrigin(event.req);
    /** The deprecated name the request sent, once its query and body were read: its answer says so, errors included. */
    let used: Deprecation | undefined;
    try {
      const caller = def.auth === "none" ? undefined : await this.authenticate(event.req, def.auth);
      const principal = caller?.principal;
      // for the access log (SVC_ACCESS_LOG), which reads it once the answer is out
      if (principal) event.context.identity = principal.id;
      // decoded once here (h3 leaves them percent-encoded): handlers get the text the client meant
      const params = def.params ? parseOrThrow(def.params, decodePathParams(event.context.params ?? {}), "path") : undefined;
      const rawQuery = def.query || event.url.search ? getQuery(event) : undefined;
      // known before the query is checked: a refusal of the deprecated parameter's value says it is deprecated too
      used = this.deprecations.used(def, rawQuery, undefined, principal);
      if (rawQuery && def.path.startsWith("/api/") && !def.anyQuery) refuseUnknownQueryParameters(def, rawQuery);
      const query = def.query ? parseOrThrow(def.query, rawQuery, "query") : undefined;
      const raw = def.body ? await readJsonBody(event.req) : undefined;
      // a body of its own for this path parameter's value refines `body`: checked first, the handler still gets `body`'s output
      const byParam = def.bodyByParam && params ? (params as Record<string, unknown>)[def.bodyByParam.param] : undefined;
      if (typeof byParam === "string" && Object.hasOwn(def.bodyByParam!.bodies, byParam)) parseOrThrow(def.bodyByParam!.bodies[byParam]!, raw, "body");
      if (raw !== undefined) used = this.deprecations.used(def, rawQuery, raw, principal);
      const body = def.body ? parseOrThrow(def.body, raw, "body") : undefined;
      const result = await def.handler({ event, principal, params, query, body });
      const response = result instanceof Response ? result : jsonResponse(result);
      // a renewed session's cookie, unless the route sets the cookie itself (sign-out clears it)
      const cookie = caller?.renewedCookie && !response.headers.has("set-cookie") ? caller.renewedCookie : undefined;
      return this.withAnswerHeaders(response, cookie, used, origin);
    } catch (err) {
      // unexpected errors answer a generic 500; their details go to the log, never to the client
      if (!isApiError(err)) this.log.error({ err, method: def.method, route: def.path }, "request failed");
      return this.withAnswerHeaders(errorResponse(err), undefined, used, origin);
    } finally {
      leave();
    }
  }

  /**
   * `response` with the headers the request earned beside the route's own: a renewed session's `cookie`,
   * RFC 9745's for a deprecated name it `used` (the earliest deprecation's day), CORS for an allowed
   * `origin`. Most answers need none: nothing is allocated for them.
   */
  private withAnswerHeaders(response: Response, cookie: string | undefined, used: Deprecation | undefined, origin: string | undefined): Response {
    if (!cookie && !used && !origin) return response;
    const extra: Array<[string, string]> = [];
    if (cookie) extra.push(["set-cookie", cookie]);
    if (used) extra.push(...deprecationHeaders(used, this.publicOrigin?.()));
    if (origin) extra.push(...this.cors!.answerHeaders(origin, response));
    return withHeaders(response, extra);
  }

  /**
   * The OpenAPI 3.1 document of every route (served at `/docs/openapi.json`).
   * @param basePath the path prefix a proxy serves the service under (`Config.basePath`): the document's
   *   one `servers` entry then (its paths are relative to it); none when it is empty (paths from `/`)
   */
  openapi(info: { title: string; version: string; description?: string }, basePath = ""): Record<string, unknown> {
    // the named schemas ({@link RouteRegistry.component}) become `$ref`s to components.schemas wherever
    // an operation's schema holds one of them
    const definitions = Object.fromEntries(this.components) as Record<string, never>;
    const config: ConversionConfig = {
      target: "draft-2020-12",
      typeMode: "input",
      errorMode: "ignore",
      // `overrideAction`: a pipe documents itself with `documentedAs` (core/http/schemas.ts) where the
      // converter cannot (it stops at the first transformation: `string → transform(Number) → minValue`)
      overrideAction: ({ valibotAction, jsonSchema }) => documentedJsonSchema(valibotAction, jsonSchema),
      definitions,
      overrideRef: ({ referenceId }) => `#/components/schemas/${referenceId}`,
    };
    // an intersection whose first member is an object (`v.intersect([v.object(…), refinement])`) keeps
    // that object's properties at the top: `{ …first, allOf: [refinement] }` is the same JSON Schema
    const flattened = (rest: Record<string, unknown>) => {
      const [first, ...others] = Array.isArray(rest.allOf) && Object.keys(rest).length === 1 ? (rest.allOf as Record<string, unknown>[]) : [];
      return first?.type === "object" && !("allOf" in first) ? { ...first, allOf: others } : rest;
    };
    const json = (s: Schema) => {
      // the named schemas are written once, under components.schemas: not in each operation's `$defs`
      const { $schema: _ignored, $defs: _defs, ...rest } = toJsonSchema(s as never, config) as Record<string, unknown>;
      return flattened(rest);
    };
    const named = Object.fromEntries(Object.entries(toJsonSchemaDefs(definitions, config)).map(([name, schema]) => [name, flattened(schema as Record<string, unknown>)]));
    const paths: Record<string, Record<string, unknown>> = {};
    /**
     * The operation of `def` with `body`; `fixed` names the path parameter that `bodyByParam` splits
     * on: its value on a concrete path (not a parameter there), or the values excluded from the
     * templated path.
     */
    const operationOf = (def: RouteDefinition<any, any, any>, body: Schema | undefined, fixed?: { name: string; value?: string; excluded?: string[] }) => {
      const parameters: unknown[] = [];
      for (const [where, schema] of [["path", def.params], ["query", def.query]] as const) {
        if (!schema) continue;
        const object = json(schema);
        const props = (object.properties ?? {}) as Record<string, Record<string, unknown>>;
        const required = new Set(((object.required as string[]) ?? []));
        // query parameters that go together: one `form`/`explode` object parameter (same wire format)
        const groups = where === "query" ? queryParameterGroups(object) : {};
        const grouped = new Set(Object.values(groups).flat());
        for (const [name, s] of Object.entries(props)) {
          if (grouped.has(name) || (where === "path" && fixed?.value !== undefined && name === fixed.name)) continue;
          // a deprecated parameter says so on the parameter itself (OpenAPI 3.1 4.8.12.2), where tools look
          const { description, deprecated: isDeprecated, ...rest } = s;
          const schemaOf = where === "path" && fixed?.excluded && name === fixed.name ? { ...rest, not: { enum: fixed.excluded } } : rest;
          parameters.push({ name, in: where, required: where === "path" || required.has(name), schema: schemaOf, ...(description ? { description } : {}), ...(isDeprecated ? { deprecated: true } : {}) });
        }
        for (const [group, members] of Object.entries(groups)) {
          const properties = Object.fromEntries(members.map((m) => [m, props[m] ?? {}]));
          const dependentRequired = Object.fromEntries(members.map((m) => [m, members.filter((o) => o !== m)]));
          parameters.push({ name: group, in: "query", style: "form", explode: true, required: false, description: `${members.map((m) => `\`${m}\``).join(", ")}: each its own query parameter; send all of them or none`, schema: { type: "object", properties, dependentRequired, additionalProperties: false } });
        }
      }
      const responses: Record<string, unknown> = {};
      const declared: Record<string, ResponseDoc> = { ...implicitErrorResponses(def), ...def.responses };
      for (const status of Object.keys(declared).sort()) {
        const r = declared[status]!;
        const content = r.schema
          ? { "application/json": { schema: json(r.schema) } }
          : r.contentType
            ? { [r.contentType]: {} }
            : Number(status) >= 400 || status === "default"
              ? { "application/json": { schema: { $ref: "#/components/schemas/Error" } } }
              : undefined;
        // an operation with deprecated names may answer Deprecation and its Link (RFC 9745), on any status
        const declaredHeaders = { ...r.headers, ...(this.deprecations.has(def) ? DEPRECATION_HEADER_DOCS : {}) };
        const headers = Object.keys(declaredHeaders).length ? Object.fromEntries(Object.entries(declaredHeaders).map(([name, description]) => [name, { description, schema: { type: "string" } }])) : undefined;
        responses[status] = { description: r.description, ...(headers ? { headers } : {}), ...(content ? { content } : {}) };
      }
      const operation: Record<string, unknown> = {
        operationId: `${def.method.toLowerCase()}${def.path.replace(/[/:{}-](\w)?/g, (_m, c: string | undefined) => (c ? c.toUpperCase() : ""))}${fixed?.value !== undefined ? `_${fixed.value.replace(/[^A-Za-z0-9]+/g, "_")}` : ""}`,
        summary: def.summary,
        ...(def.description ? { description: def.description } : {}),
        tags: def.tags,
        parameters,
        responses,
        security: def.auth === "bearer" ? [{ bearerAuth: [] }, { sessionCookie: [] }] : def.auth === "session" ? [{ sessionCookie: [] }] : [],
        "x-svc-bearer-auth": def.auth === "bearer",
      };
      // an empty body reads as `{}` (readJsonBody): the body is optional exactly when `{}` is valid
      const bodyOptional = body ? v.safeParse(body, emptyJsonBody()).success : false;
      if (body) operation.requestBody = { required: !bodyOptional, ...(bodyOptional ? { description: "Optional: an empty body reads as `{}`" } : {}), content: { "application/json": { schema: json(body) } } };
      else if (def.bodyMode === "raw" && def.rawBodyDoc) operation.requestBody = { required: true, description: def.rawBodyDoc.description, content: { [def.rawBodyDoc.contentType]: def.rawBodyDoc.schema ? { schema: def.rawBodyDoc.schema } : {} } };
      return operation;
    };
    const openApiPath = (path: string) => path.replace(/\*\*:(\w+)/g, "{$1}").replace(/:(\w+)/g, "{$1}");
    for (const def of this.routes) {
      const method = def.method.toLowerCase();
      const split = def.bodyByParam ? Object.entries(def.bodyByParam.bodies) : [];
      const name = def.bodyByParam?.param ?? "";
      (paths[openApiPath(def.path)] ??= {})[method] = operationOf(def, def.body, split.length ? { name, excluded: split.map(([value]) => value) } : undefined);
      for (const [value, body] of split) (paths[openApiPath(def.path.replace(`:${name}`, encodeURIComponent(value)))] ??= {})[method] = operationOf(def, body, { name, value });
    }
    const errorContent = { "application/json": { schema: { $ref: "#/components/schemas/Error" } } };
    for (const socket of this.sockets) {
      paths[socket.path] = {
        get: {
          operationId: `ws${socket.path.replace(/[/-](\w)/g, (_m, c: string) => c.toUpperCase())}`,
          summary: socket.summary,
          description: socket.description,
          tags: ["streams"],
          responses: {
            101: { description: "Switching Protocols: the WebSocket is open (a WebSocket upgrade request only)" },
            401: { description: "`unauthorized`: no valid browser session, or a bearer token (refused)", content: errorContent },
            403: { description: "`origin_not_allowed`: no Origin, or one not allowed; `forbidden`: the identity lacks a permission the stream needs", content: errorContent },
            426: { description: "`upgrade_required`: a plain HTTP GET from a caller who may connect; connect with a WebSocket client. Sent with `Upgrade: websocket`", content: errorContent },
            500: { description: "`internal`: an unexpected error (details go to the server log only)", content: errorContent },
          },
          security: [{ sessionCookie: [] }],
          "x-svc-bearer-auth": false,
          "x-svc-websocket": true,
        },
      };
    }
    return {
      openapi: "3.1.0",
      info,
      ...(basePath ? { servers: [{ url: basePath, description: "This service, under the path prefix its proxy serves it at" }] } : {}),
      paths,
      components: {
        securitySchemes: {
          bearerAuth: { type: "http", scheme: "bearer", description: "API token (`Authorization: Bearer <API_TOKEN>`); only on operations marked x-svc-bearer-auth" },
          sessionCookie: { type: "apiKey", in: "cookie", name: "svc_session", description: "Browser session from POST /api/auth/sign-in. Mutating requests also send `x-svc-csrf` and must come from an allowed Origin." },
        },
        schemas: { Error: json(ErrorBodySchema), ...named },
      },
    };
  }

  /** The registered routes (for tests and the project endpoint). */
  list(): ReadonlyArray<Pick<RouteDefinition, "method" | "path" | "auth" | "summary">> {
    return this.routes;
  }
}

/** What an operation without a query schema takes. */
const NO_PARAMETERS: ReadonlySet<string> = new Set();

/** Query parameter names by query schema, computed once. */
const knownQueryParameters = new WeakMap<object, ReadonlySet<string> | null>();

/**
 * Refuses a query parameter the operation does not declare (`pagesize` for `pageSize`, a filter of
 * another endpoint, the WebSocket's `types` on `GET /api/events`): it used to be dropped, and the
 * caller got an unfiltered answer it took for a filtered one. API routes only (`/api/…`), but for those
 * that take any (`RouteDefinition.anyQuery`: webhook deliveries, download URLs): pages take what
 * browsers and links add.
 * @throws {ApiError} invalid_request naming the parameter and the ones the operation takes
 */
function refuseUnknownQueryParameters(def: { method: string; path: string; query?: object }, query: Record<string, unknown>): void {
  let known: ReadonlySet<string> | null | undefined = NO_PARAMETERS;
  if (def.query) {
    known = knownQueryParameters.get(def.query);
    if (known === undefined) knownQueryParameters.set(def.query, (known = queryParameterNames(def.query) ?? null));
  }
  if (!known) return;
  for (const name of Object.keys(query)) {
    if (!known.has(name)) throw new ApiError("invalid_request", `Unknown query parameter ${JSON.stringify(name)}: ${def.method} ${def.path} takes ${[...known].join(", ") || "none"}`, { parameter: name });
  }
}

