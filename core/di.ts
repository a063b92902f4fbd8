/**
 * tsyringe, loaded after its reflect polyfill. Import DI helpers from here, never from "tsyringe"
 * directly, so the polyfill is always in place first whatever the entry point.
 */
import "reflect-metadata";
export { inject, injectable, container } from "tsyringe";
export type { DependencyContainer, InjectionToken } from "tsyringe";
