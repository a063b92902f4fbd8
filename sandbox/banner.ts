/**
 * The banner `npm start` prints once the sandbox is up (sandbox/main.ts): where the API, the docs, the
 * pages and the Temporal UI are, and the development token with a first `curl`. The token's value is
 * shown only when it is the sandbox's well-known default; one set by `SVC_DEV_TOKEN` is a secret of the
 * operator's, named but not printed. A revoked or disabled token is said to be so, with how to make one.
 */
import type { App } from "../core";
import { SANDBOX_DATA_DIR, SANDBOX_DEV_TOKEN } from "./defaults";

/** What the banner shows of a running app. */
export type BannerApp = Pick<App, "url" | "config" | "devTokenStatus"> & { temporal: Pick<App["temporal"], "uiUrl" | "address"> };

/**
 * The sandbox's start banner, as printed (lines, a blank one first and last).
 * @param opts.seconds how long the start took
 * @param opts.devIdentity the identity a new development token is made for (`npm run svc -- tokens create`)
 */
export function sandboxBanner(app: BannerApp, opts: { seconds: number; devIdentity: string }): string {
  // behind a proxy's path prefix, the pages and the reference work through the proxy only (their links
  // and the session cookie carry the prefix): shown at the public origin
  const browser = app.config.basePath ? app.config.apiPublicOrigin! : app.url;
  const lines = [
    "",
    `  svc sandbox is up (${opts.seconds.toFixed(1)} s)`,
    `  API          ${app.url}`,
    `  Docs         ${browser}/docs`,
    `  Artifacts    ${browser}/artifacts (sign in as dev / dev-sandbox-password)`,
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
  const wellKnown = app.config.devToken === SANDBOX_DEV_TOKEN;
  const dataDir = app.config.dataDir === SANDBOX_DATA_DIR ? "" : `SVC_DATA_DIR=${shellWord(app.config.dataDir)} `;
  const create = `New token    ${dataDir}npm run svc -- tokens create --identity ${devIdentity}`;
  const withToken = `Try          curl -H "Authorization: Bearer <token>" ${status}`;
  switch (app.devTokenStatus) {
    case "active":
      return wellKnown
        ? [`Dev token    ${SANDBOX_DEV_TOKEN}`, `Try          curl -H "Authorization: Bearer ${SANDBOX_DEV_TOKEN}" ${status}`]
        : ["Dev token    set by SVC_DEV_TOKEN (not shown)", `Try          curl -H "Authorization: Bearer $SVC_DEV_TOKEN" ${status}`];
    case "revoked":
      return [
        `Dev token    ${wellKnown ? SANDBOX_DEV_TOKEN : "the one set by SVC_DEV_TOKEN"} is revoked (a revocation sticks): requests with it are refused`,
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
