/**
 * Deprecated names at run time (README "API versioning and deprecation", spec 9): which query
 * parameters and body properties of each route are deprecated (`deprecated`, core/http/schemas.ts),
 * which of them a request sent, and the headers its answer carries (RFC 9745 `Deprecation` and its
 * `Link`). The route registry asks; the OpenAPI document declares the headers on those routes.
 */
import type { Logger } from "../logger";
import type { Principal } from "../auth/permissions";
import { deprecatedEntries, type Deprecation } from "./schemas";

/** How the headers of a request that sent a deprecated name are documented on its operation's answers. */
export const DEPRECATION_HEADER_DOCS = {
  Deprecation: "Sent when the request used a deprecated query parameter or body property (marked `deprecated` here): `@<unix seconds>`, the day it was deprecated (RFC 9745). It is about that name, not the operation",
  Link: 'With `Deprecation`: `<{SVC_API_PUBLIC_ORIGIN}/docs>; rel="deprecation"; type="text/html"` (root-relative, `</docs>`, when that is not set), where the name to send instead is documented',
};

/**
 * The answer's headers for a request that sent a deprecated name (RFC 9745): `Deprecation` with its
 * day, and a `Link` to the reference, under `publicOrigin` (`SVC_API_PUBLIC_ORIGIN`, without a
 * trailing slash; it may end in a proxy's path prefix) or root-relative without one.
 */
export function deprecationHeaders(used: Deprecation, publicOrigin = ""): Array<[string, string]> {
  return [
    ["deprecation", `@${Date.parse(`${used.since}T00:00:00Z`) / 1000}`],
    ["link", `<${publicOrigin}/docs>; rel="deprecation"; type="text/html"`],
  ];
}

/** A route as far as its deprecations go: its method, path and the schemas whose entries may be marked deprecated (core/http/schemas.ts `deprecated`). */
interface DeprecatingRoute {
  method: string;
  path: string;
  query?: unknown;
  body?: unknown;
}

/** The deprecated names of the routes that have any, and each use logged once per route, name and identity. */
export class RouteDeprecations {
  private readonly byRoute = new Map<DeprecatingRoute, { query: Map<string, Deprecation>; body: Map<string, Deprecation> }>();
  /** `method path name identity` of the uses logged so far. */
  private readonly logged = new Set<string>();

  constructor(private readonly log: Pick<Logger, "warn">) {}

  /**
   * Reads `route`'s deprecated names.
   * @throws Error when a union body's members disagree on whether a name is deprecated (see `deprecatedEntries`)
   */
  add(route: DeprecatingRoute): void {
    const query = deprecatedEntries(route.query);
    const body = deprecatedEntries(route.body);
    if (query.size || body.size) this.byRoute.set(route, { query, body });
  }

  /** Whether `route` has deprecated names (its answers may carry the headers). */
  has(route: DeprecatingRoute): boolean {
    return this.byRoute.has(route);
  }

  /**
   * The earliest deprecation among the deprecated query parameters and body properties this request
   * sent (undefined when it sent none); each use is logged once per process and identity, naming the
   * name to send instead.
   */
  used(route: DeprecatingRoute, query: Record<string, unknown> | undefined, body: unknown, principal: Principal | undefined): Deprecation | undefined {
    const names = this.byRoute.get(route);
    if (!names) return undefined;
    const sent: Array<[string, Deprecation]> = [];
    for (const [name, d] of names.query) if (query && Object.hasOwn(query, name)) sent.push([name, d]);
    for (const [name, d] of names.body) if (typeof body === "object" && body !== null && Object.hasOwn(body, name)) sent.push([name, d]);
    for (const [name, d] of sent) {
      const key = `${route.method} ${route.path} ${name} ${principal?.id ?? ""}`;
      if (this.logged.has(key)) continue;
      this.logged.add(key);
      this.log.warn({ method: route.method, route: route.path, name, use: d.use, since: d.since, identity: principal?.id }, `${name} is deprecated on ${route.method} ${route.path}: send ${d.use} instead`);
    }
    return sent.map(([, d]) => d).sort((a, b) => a.since.localeCompare(b.since))[0];
  }
}
