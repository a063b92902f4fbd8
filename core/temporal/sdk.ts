/**
 * The Temporal SDK's packages, loaded on first use instead of with the service's modules (issue 15).
 * `@temporalio/client` (with `@temporalio/proto`'s protobufjs reflection and grpc-js) and
 * `@temporalio/common` are about half a second of module loading on a 2-core machine, all of it on the
 * main thread. Nothing calls Temporal before `TemporalHost.connect`, so they load there, after the
 * service's own modules and while the store opens (the worker's package, `@temporalio/worker`, is
 * imported by the host itself). The entry point polls the dev server meanwhile without them
 * (`./frontend-probe.ts`).
 *
 * Each getter loads its package the first time it is called (synchronously: they are CommonJS) and
 * answers the same module from then on. Import types from the packages as usual (`import type`);
 * values only through these getters, or the package is back in every start's static imports
 * (`test/build.test.ts` walks them).
 */
import { createRequire } from "node:module";

const requirePackage = createRequire(import.meta.url);

/** A getter that `require`s `name` on its first call. */
function onFirstUse<T>(name: string): () => T {
  let loaded: T | undefined;
  return () => (loaded ??= requirePackage(name) as T);
}

/** `@temporalio/client`: `Client`, the workflow and schedule errors, `isGrpcServiceError`. */
export const temporalClient = onFirstUse<typeof import("@temporalio/client")>("@temporalio/client");
/** `@temporalio/common`: `ApplicationFailure`, `WorkflowIdReusePolicy`. */
export const temporalCommon = onFirstUse<typeof import("@temporalio/common")>("@temporalio/common");
/** `@temporalio/activity`: `Context` (only inside an activity). */
export const temporalActivity = onFirstUse<typeof import("@temporalio/activity")>("@temporalio/activity");
/** `@temporalio/proto`: the API's message classes (e.g. `temporal.api.history.v1.History`). */
export const temporalProto = onFirstUse<typeof import("@temporalio/proto")>("@temporalio/proto");
