/**
 * The banner `npm start` prints once the sandbox is up (sandbox/main.ts): where the API, the docs, the
 * pages and the Temporal UI are, and the development token with a first `curl`. A revoked or disabled
 * token is said to be so, with how to make one.
 */
import type { App } from "../core";
import { SANDBOX_DATA_DIR } from "./defaults";

/** What the banner shows of a running app. */
export type BannerApp = Pick<App, "url" | "config" | "devTokenStatus"> & { temporal: Pick<App["temporal"], "uiUrl" | "address"> };

/**
 * The sandbox's start banner, as printed (lines, a blank one first and last).
 * @param opts.seconds how long the start took
 * @param opts.devIdentity the identity a new development token is made for (`npm run svc -- tokens create`)
 */
export function sandboxBanner(app: BannerApp, opts: { seconds: number; devIdentity: string }): string {
  const lines = [
    "",
    `  svc sandbox is up (${opts.seconds.toFixed(1)} s)`,
    `  API          ${app.url}`,
    `  Docs         ${app.url}/docs`,
    `  Artifacts    ${app.url}/artifacts (sign in as dev / dev-sandbox-password)`,
    `  Agent        npm run chat -- "Write a report titled Q4 outlook"`,
    `  Temporal UI  ${app.temporal.uiUrl ?? `(not served; cluster ${app.temporal.address})`}`,
    `  Public URL   ${app.config.apiPublicOrigin} (SVC_API_PUBLIC_ORIGIN, used in download URLs; local addresses are unreachable for external services)`,
    ...devTokenLines(app, opts.devIdentity).map((line) => `  ${line}`),
    "",
  ];
  return lines.join("\n") + "\n";
}

/** The banner's development token lines: the token (or what it is) and a first request. */
function devTokenLines(app: BannerApp, devIdentity: string): string[] {
  const status = `${app.url}/api/status`;
  const dataDir = app.config.dataDir === SANDBOX_DATA_DIR ? "" : `SVC_DATA_DIR=${shellWord(app.config.dataDir)} `;
  const create = `New token    ${dataDir}npm run svc -- tokens create --identity ${devIdentity}`;
  const withToken = `Try          curl -H "Authorization: Bearer <token>" ${status}`;
  switch (app.devTokenStatus) {
    case "active":
      return [`Dev token    ${app.config.devToken}`, `Try          curl -H "Authorization: Bearer ${app.config.devToken}" ${status}`];
    case "revoked":
      return [
        "Dev token    revoked (a revocation sticks): requests with it are refused",
        `${create} (or set SVC_DEV_TOKEN to a new value of 16+ characters)`,
        withToken,
      ];
    case "disabled":
      return ["Dev token    none (SVC_DEV_TOKEN=none)", create, withToken];
    case "none":
      return ["Dev token    none", create, withToken];
  }
}

/** `s` as one shell word (single-quoted when it holds anything but plain path characters). */
function shellWord(s: string): string {
  return /^[\w@%+=:,./-]+$/.test(s) ? s : `'${s.replaceAll("'", `'\\''`)}'`;
}
