/** HTML text helpers for the server-rendered pages and embeds (no Node imports). */

const ENTITIES: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };

/** Escapes text for an HTML text node or a quoted attribute value (`& < > " '`). */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ENTITIES[c]!);
}

/** JSON for a `<script type="application/json">`: `<`, U+2028 and U+2029 escaped, so nothing can close the script or break it. */
export function scriptJson(value: unknown): string {
  return JSON.stringify(value).replace(/</g, "\\u003c").replace(/\u2028/g, "\\u2028").replace(/\u2029/g, "\\u2029");
}

/** A tagged template that escapes every interpolated value unless it is {@link RawHtml} (or an array of them). */
export function html(strings: TemplateStringsArray, ...values: unknown[]): RawHtml {
  let out = strings[0]!;
  values.forEach((value, i) => {
    out += render(value) + strings[i + 1]!;
  });
  return new RawHtml(out);
}

/** HTML that is already safe (built by {@link html} or by a sanitizer): inserted as is. */
export class RawHtml {
  constructor(readonly value: string) {}
  toString(): string {
    return this.value;
  }
}

/** Marks trusted HTML (sanitized or built here) so {@link html} inserts it unescaped. */
export function raw(value: string): RawHtml {
  return new RawHtml(value);
}

function render(value: unknown): string {
  if (value === undefined || value === null || value === false) return "";
  if (value instanceof RawHtml) return value.value;
  if (Array.isArray(value)) return value.map(render).join("");
  return escapeHtml(String(value));
}
