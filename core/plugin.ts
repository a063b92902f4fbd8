import type { DependencyContainer } from "./di";
import type { Config } from "./config";
import type { Logger } from "./logger";
import type { RouteRegistry } from "./http/routes";
import type { Lifecycle } from "./lifecycle";
import type { ProjectRegistry } from "./runtime/registry";

/**
 * What a plugin's `setup` receives: the DI container (resolve core services by `TOKENS`), the route
 * registry, lifecycle hooks (`ready`, `shutdown`), a child logger, the config and the project.
 */
export interface PluginContext {
  container: DependencyContainer;
  routes: RouteRegistry;
  hooks: Pick<Lifecycle, "hook">;
  log: Logger;
  config: Config;
  project: ProjectRegistry;
}

/** A plugin: a name and a setup function, awaited in order before the server starts. */
export interface Plugin {
  name: string;
  setup(ctx: PluginContext): void | Promise<void>;
}

/**
 * Declares a plugin. A plugin builds only on core's hooks and never imports another plugin.
 * @example definePlugin({ name: "status", setup(ctx) { ctx.routes.add({ ... }) } })
 */
export function definePlugin(plugin: Plugin): Plugin {
  return plugin;
}
