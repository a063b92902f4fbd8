import * as v from "valibot";
import { toJsonSchema } from "@valibot/to-json-schema";
import { defineWebSocketHandler, getQuery, type H3, type H3Event } from "h3";
import type { Hooks as WebSocketHooks } from "crossws";
import { ApiError, errorResponse, isApiError } from "../errors";
import type { Logger } from "../logger";
import type { Principal } from "../auth/permissions";
import type { Lifecycle } from "../lifecycle";
import { readJsonBody } from "./body";
import { parseOrThrow } from "./validation";

type Schema = v.GenericSchema<unknown, any>;
type ObjectSchema = v.ObjectSchema<any, any> | v.LooseObjectSchema<any, any> | v.StrictObjectSchema<any, any>;
type Out<S> = S extends Schema ? v.InferOutput<S> : undefined;

export type HttpMethod = "GET" | "POST" | "PUT" | "PATCH" | "DELETE";

/**
 * How a route authenticates (spec 5): `bearer` routes accept `Authorization: Bearer <API_TOKEN>` or a
 * browser session; `session` routes accept only a browser session (and refuse bearer tokens); `none`
 * routes are public or verify requests themselves (webhooks).
 */
export type AuthMode = "bearer" | "session" | "none";

/**
 * A route: method, path (h3 syntax, `:name` parameters), auth, valibot schemas for params, query and
 * JSON body (validated before the handler runs, and the same schemas generate the OpenAPI document),
 * documented responses, and the handler. A handler answers a JSON-serializable value (200), a
 * `Response`, or throws an {@link ApiError}.
 */
export interface RouteDefinition<PS extends ObjectSchema | undefined = undefined, QS extends ObjectSchema | undefined = undefined, BS extends Schema | undefined = undefined> {
  method: HttpMethod;
  path: string;
  summary: string;
  description?: string;
  tags: string[];
  auth: AuthMode;
  params?: PS;
  query?: QS;
  body?: BS;
  /** `raw`: the handler reads the body itself (documented with `rawBodyDoc`). */
  bodyMode?: "json" | "raw";
  rawBodyDoc?: { contentType: string; description: string };
  responses: Record<number, { description: string; schema?: Schema }>;
  handler(ctx: { event: H3Event; principal: Principal | undefined; params: Out<PS>; query: Out<QS>; body: Out<BS> }): unknown;
}

/** Resolves the caller of a request for a route's auth mode, or throws `unauthorized` / 403. */
export type Authenticator = (req: Request, mode: "bearer" | "session") => Promise<Principal>;

const ErrorBodySchema = v.object({
  error: v.object({ code: v.string(), message: v.string(), details: v.optional(v.unknown()) }),
});

/**
 * Collects routes from plugins, mounts them on h3 and generates OpenAPI 3.1 from the same schemas
 * that validate. Routes must all be added before {@link RouteRegistry.mount}; h3 freezes its router at
 * `serve()`.
 */
export class RouteRegistry {
  private readonly routes: RouteDefinition<any, any, any>[] = [];
  private readonly sockets: Array<{ path: string; summary: string; description: string; hooks: Partial<WebSocketHooks> }> = [];
  private mounted = false;

  constructor(
    private readonly authenticate: Authenticator,
    private readonly lifecycle: Lifecycle,
    private readonly log: Pick<Logger, "error">,
  ) {}

  /**
   * Adds a route.
   * @throws Error after mount, or when the method and path are taken
   */
  add<PS extends ObjectSchema | undefined = undefined, QS extends ObjectSchema | undefined = undefined, BS extends Schema | undefined = undefined>(def: RouteDefinition<PS, QS, BS>): void {
    if (this.mounted) throw new Error(`Route ${def.method} ${def.path} added after the server started`);
    if (this.routes.some((r) => r.method === def.method && r.path === def.path)) throw new Error(`Route ${def.method} ${def.path} is registered twice`);
    this.routes.push(def);
  }

  /**
   * Adds a WebSocket endpoint (crossws hooks). Its `upgrade` hook authenticates; it is documented in
   * OpenAPI as a GET answering 101 with `x-svc-websocket: true`.
   */
  ws(path: string, doc: { summary: string; description: string }, hooks: Partial<WebSocketHooks>): void {
    if (this.mounted) throw new Error(`WebSocket ${path} added after the server started`);
    this.sockets.push({ path, ...doc, hooks });
  }

  /** Registers every route on the h3 app. */
  mount(app: H3): void {
    this.mounted = true;
    for (const socket of this.sockets) app.get(socket.path, defineWebSocketHandler(socket.hooks));
    const methods = new Map<string, string[]>();
    for (const def of this.routes) {
      app.on(def.method, def.path, (event) => this.dispatch(def, event));
      methods.set(def.path, [...(methods.get(def.path) ?? []), def.method]);
    }
    // Any other method on a known path: 405 with Allow (method-specific routes match first).
    for (const [path, allowed] of methods) {
      const allow = allowed.join(", ");
      app.all(path, (event) => errorResponse(new ApiError("method_not_allowed", `${event.req.method} is not allowed on ${path}; use ${allow}`, { allow: allowed }, { allow })));
    }
  }

  private async dispatch(def: RouteDefinition<any, any, any>, event: H3Event): Promise<Response> {
    const leave = this.lifecycle.enter();
    try {
      const principal = def.auth === "none" ? undefined : await this.authenticate(event.req, def.auth);
      const params = def.params ? parseOrThrow(def.params, event.context.params ?? {}, "path") : undefined;
      const query = def.query ? parseOrThrow(def.query, getQuery(event), "query") : undefined;
      const body = def.body ? parseOrThrow(def.body, await readJsonBody(event.req), "body") : undefined;
      const result = await def.handler({ event, principal, params, query, body });
      if (result instanceof Response) return result;
      return new Response(JSON.stringify(result), { status: 200, headers: { "content-type": "application/json; charset=utf-8" } });
    } catch (err) {
      // unexpected errors answer a generic 500; their details go to the log, never to the client
      if (!isApiError(err)) this.log.error({ err, method: def.method, route: def.path }, "request failed");
      return errorResponse(err);
    } finally {
      leave();
    }
  }

  /** The OpenAPI 3.1 document of every route (served at `/docs/openapi.json`). */
  openapi(info: { title: string; version: string; description?: string }): Record<string, unknown> {
    const json = (s: Schema) => {
      const { $schema: _ignored, ...rest } = toJsonSchema(s as never, { target: "draft-2020-12", typeMode: "input", errorMode: "ignore" }) as Record<string, unknown>;
      return rest;
    };
    const paths: Record<string, Record<string, unknown>> = {};
    for (const def of this.routes) {
      const path = def.path.replace(/:(\w+)/g, "{$1}");
      const parameters: unknown[] = [];
      for (const [where, schema] of [["path", def.params], ["query", def.query]] as const) {
        if (!schema) continue;
        const props = (json(schema).properties ?? {}) as Record<string, Record<string, unknown>>;
        const required = new Set(((json(schema).required as string[]) ?? []));
        for (const [name, s] of Object.entries(props)) {
          const { description, ...rest } = s;
          parameters.push({ name, in: where, required: where === "path" || required.has(name), schema: rest, ...(description ? { description } : {}) });
        }
      }
      const responses: Record<string, unknown> = {};
      for (const [status, r] of Object.entries(def.responses)) {
        responses[status] = { description: r.description, ...(r.schema ? { content: { "application/json": { schema: json(r.schema) } } } : {}) };
      }
      responses.default = { description: "Structured error `{ error: { code, message, details? } }` (spec 7)", content: { "application/json": { schema: { $ref: "#/components/schemas/Error" } } } };
      const operation: Record<string, unknown> = {
        operationId: `${def.method.toLowerCase()}${def.path.replace(/[/:{}-](\w)?/g, (_m, c: string | undefined) => (c ? c.toUpperCase() : ""))}`,
        summary: def.summary,
        ...(def.description ? { description: def.description } : {}),
        tags: def.tags,
        parameters,
        responses,
        security: def.auth === "bearer" ? [{ bearerAuth: [] }, { sessionCookie: [] }] : def.auth === "session" ? [{ sessionCookie: [] }] : [],
        "x-svc-bearer-auth": def.auth === "bearer",
      };
      if (def.body) operation.requestBody = { required: true, content: { "application/json": { schema: json(def.body) } } };
      else if (def.bodyMode === "raw" && def.rawBodyDoc) operation.requestBody = { required: true, description: def.rawBodyDoc.description, content: { [def.rawBodyDoc.contentType]: {} } };
      (paths[path] ??= {})[def.method.toLowerCase()] = operation;
    }
    for (const socket of this.sockets) {
      paths[socket.path] = {
        get: {
          operationId: `ws${socket.path.replace(/[/-](\w)/g, (_m, c: string) => c.toUpperCase())}`,
          summary: socket.summary,
          description: socket.description,
          tags: ["streams"],
          responses: { 101: { description: "Switching Protocols: the WebSocket is open" }, 401: { description: "No valid browser session, or a bearer token (refused)" }, 403: { description: "Origin not allowed" } },
          security: [{ sessionCookie: [] }],
          "x-svc-bearer-auth": false,
          "x-svc-websocket": true,
        },
      };
    }
    return {
      openapi: "3.1.0",
      info,
      paths,
      components: {
        securitySchemes: {
          bearerAuth: { type: "http", scheme: "bearer", description: "API token (`Authorization: Bearer <API_TOKEN>`); only on operations marked x-svc-bearer-auth" },
          sessionCookie: { type: "apiKey", in: "cookie", name: "svc_session", description: "Browser session from POST /api/auth/sign-in. Mutating requests also send `x-svc-csrf` and must come from an allowed Origin." },
        },
        schemas: { Error: json(ErrorBodySchema) },
      },
    };
  }

  /** The registered routes (for tests and the project endpoint). */
  list(): ReadonlyArray<Pick<RouteDefinition, "method" | "path" | "auth" | "summary">> {
    return this.routes;
  }
}
