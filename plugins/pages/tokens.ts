import { html, raw, tokenState, type RawHtml, type TokenInfo } from "../../core/plugin-api";
import { shell, type ShellUser } from "./shell";

/** The lifetimes the page offers for a new token (days); the API takes any from an hour to a year. */
export const TOKEN_PAGE_LIFETIMES_DAYS = [7, 30, 90, 365] as const;

/**
 * The API tokens page (`/tokens`, spec 5 personal tokens): the signed-in user's tokens (name, created,
 * expires, last used, state) with a revoke button for each working one, and a form that makes one
 * (`POST /api/tokens` from pages.js, which shows the secret once). Times are shown in the reader's
 * locale, in UTC, each with its ISO 8601 `datetime`.
 * @param opts.base the service's path prefix (`Config.basePath`)
 * @param opts.tokens the user's tokens, newest first (`TokenService.listFor`)
 */
export function tokensPage(opts: { base: string; user: ShellUser; tokens: TokenInfo[]; locale: string; now?: number }): string {
  const now = opts.now ?? Date.now();
  const format = new Intl.DateTimeFormat(opts.locale, { dateStyle: "medium", timeStyle: "short", timeZone: "UTC" });
  const when = (iso: string | undefined, none: string): RawHtml => (iso ? html`<time datetime="${iso}">${format.format(new Date(iso))} UTC</time>` : html`<span class="meta">${none}</span>`);
  const WORDS = { active: "Active", expired: "Expired", revoked: "Revoked" } as const;
  const rows = opts.tokens.map((t) => {
    const state = tokenState(t, now);
    return html`<tr data-token-id="${t.id}">
  <th scope="row">${t.name}<span class="token-id">${t.id}</span></th>
  <td>${when(t.createdAt, "")}</td>
  <td>${when(t.expiresAt, "never")}</td>
  <td>${when(t.lastUsedAt, "never")}</td>
  <td><span class="token-state" data-state="${state}">${WORDS[state]}</span></td>
  <td class="token-actions">${state === "active" ? html`<button type="button" class="button button-quiet" data-token-revoke="${t.id}" data-token-name="${t.name}">Revoke</button>` : ""}</td>
</tr>`;
  });
  const table = opts.tokens.length
    ? html`<table class="tokens-table"><caption class="sr-only">Your API tokens, newest first</caption>
<thead><tr><th scope="col">Name</th><th scope="col">Created</th><th scope="col">Expires</th><th scope="col">Last used (to the hour)</th><th scope="col">State</th><th scope="col"><span class="sr-only">Actions</span></th></tr></thead>
<tbody data-token-rows>${rows}</tbody></table>`
    : html`<p class="tokens-empty" data-tokens-empty>You have no API tokens yet.</p><table class="tokens-table" hidden><caption class="sr-only">Your API tokens, newest first</caption>
<thead><tr><th scope="col">Name</th><th scope="col">Created</th><th scope="col">Expires</th><th scope="col">Last used (to the hour)</th><th scope="col">State</th><th scope="col"><span class="sr-only">Actions</span></th></tr></thead><tbody data-token-rows></tbody></table>`;
  const body = html`<section class="tokens">
<div class="list-head"><h1>API tokens</h1></div>
<p class="tokens-lede">A token lets a script call the API as you (<strong>${opts.user.name}</strong>), with your permissions: send it as <code>Authorization: Bearer &lt;token&gt;</code>. Revoke one you no longer use.</p>
<form class="token-form" data-token-create novalidate>
  <div class="field"><label for="token-name">Name</label><input id="token-name" name="name" required maxlength="100" placeholder="What it is for, e.g. nightly export" autocomplete="off"></div>
  <div class="field"><label for="token-lifetime">Expires</label><select id="token-lifetime" name="lifetimeDays">${TOKEN_PAGE_LIFETIMES_DAYS.map((d) => html`<option value="${String(d)}" ${raw(d === 90 ? "selected" : "")}>${d === 365 ? "in a year" : `in ${d} days`}</option>`)}</select></div>
  <button type="submit" class="button">Create token</button>
  <p class="form-error" data-error role="alert"></p>
</form>
<noscript><p class="banner">Creating and revoking tokens needs JavaScript; without it, ask an operator (npm run svc -- tokens).</p></noscript>
<div class="token-secret" data-token-secret hidden role="status" tabindex="-1">
  <p><strong>Your new token <span data-secret-name></span></strong> is shown only now: copy it to where your script keeps its secrets.</p>
  <div class="token-secret-value"><code data-secret></code><button type="button" class="button button-quiet" data-copy>Copy</button></div>
</div>
${table}
</section>`;
  return shell({ base: opts.base, title: "API tokens", user: opts.user, body, bodyClass: "tokens-page", current: "tokens" });
}
