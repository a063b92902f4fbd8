/**
 * What a deck check reports (spec 4.3; `DeckChecker`, ./deck-check.ts): the in-page findings
 * (`deck-check.page.js`) and axe-core's color-contrast results, each turned into a {@link DeckWarning}
 * with a sentence for people (and the agent).
 */
import type { Page } from "playwright-core";

/** The smallest text a slide may have, in CSS pixels as rendered at 1280x720 (spec 4.3). */
export const MIN_TEXT_PX = 18;

/** One finding on one slide: a stable `code`, a sentence for people (and the agent), and where. */
export interface DeckWarning {
  /** `overflow`, `footer_overlap`, `text_overlap`, `text_cut_off`, `small_text`, `contrast`, `contrast_review`, `broken_image`. */
  code: string;
  message: string;
  /** A short CSS selector of the (first) element concerned, inside its slide. */
  element?: string;
}

/** One layout finding of `deck-check.page.js` on a slide: the first element, how many, and details. */
export interface Finding {
  code: string;
  element: string;
  text?: string;
  count: number;
  detail: Record<string, string | number>;
}

/** One element axe-core's color-contrast rule failed or could not decide, on slide `slide`. */
export interface AxeNode {
  slide: number;
  key?: string;
  overlapped?: boolean;
  element: string;
  text: string;
  message: string;
  ratio?: number;
  expected?: string;
  fg?: string;
  bg?: string;
}

/** axe-core's reasons for "cannot decide" that come from one element lying over another. */
const OVERLAP_KEYS = new Set(["bgOverlap", "elmPartiallyObscured", "elmPartiallyObscuring"]);

/** axe-core's color-contrast rule over every slide, in the page's current color scheme. */
export async function runAxe(page: Page): Promise<{ violations: AxeNode[]; incomplete: AxeNode[] }> {
  const found = (await page.evaluate(`(async () => {
    const r = await axe.run({ include: [["section.slide"]], exclude: [["[data-kit]"]] }, {
      runOnly: { type: "rule", values: ["color-contrast"] }, resultTypes: ["violations", "incomplete"], elementRef: true,
    });
    const slides = Array.from(document.querySelectorAll("section.slide"));
    const nodes = (results) => results.flatMap((rule) => rule.nodes.map((n) => {
      const el = n.element;
      const slide = el && el.closest("section.slide");
      const check = n.any[0] || n.all[0] || n.none[0] || {};
      const d = check.data || {};
      let selector = el ? el.localName : "";
      if (el && slide) {
        const parts = [];
        for (let x = el; x && x !== slide && parts.length < 3; x = x.parentElement) parts.unshift(x.localName + (x.classList.length ? "." + Array.from(x.classList).slice(0, 2).join(".") : ""));
        selector = parts.join(" > ");
      }
      return { slide: slides.indexOf(slide) + 1, element: selector, text: (el ? el.textContent : "").replace(/\\s+/g, " ").trim().slice(0, 48),
        message: check.message || n.failureSummary || "", key: d.messageKey, overlapped: !!(el && el.closest("[data-svc-overlap]")), ratio: d.contrastRatio, expected: d.expectedContrastRatio, fg: d.fgColor, bg: d.bgColor };
    }));
    return { violations: nodes(r.violations), incomplete: nodes(r.incomplete) };
  })()`)) as { violations: AxeNode[]; incomplete: AxeNode[] };
  // overlapped text is already reported as text_overlap or footer_overlap; axe's "cannot decide" for it says nothing more
  return { violations: found.violations, incomplete: found.incomplete.filter((n) => !(n.overlapped && OVERLAP_KEYS.has(n.key ?? ""))) };
}

const SIDES: Record<string, string> = { left: "left", right: "right", top: "top", bottom: "bottom" };

function quote(text: string | undefined): string {
  return text ? ` "${text}"` : "";
}

function more(n: number, what: string): string {
  return n > 1 ? ` (and ${n - 1} more ${what}${n > 2 ? "s" : ""})` : "";
}

/** A sentence for one layout finding of a slide. */
export function layoutWarning(f: Finding): DeckWarning {
  const d = f.detail;
  const at = `${f.element}${quote(f.text)}`;
  switch (f.code) {
    case "overflow":
      return { code: f.code, element: f.element, message: `Content runs past the slide's ${SIDES[String(d.side)] ?? "edge"} edge by ${d.px}px: ${at}${more(f.count, "element")}` };
    case "footer_overlap":
      return { code: f.code, element: f.element, message: `Content overlaps the footer (${d.footer}): ${at}${more(f.count, "element")}` };
    case "text_overlap":
      return { code: f.code, element: f.element, message: `Text overlaps other text: ${at} over ${d.other}${quote(String(d.otherText ?? ""))}${more(f.count, "pair")}` };
    case "text_cut_off":
      return { code: f.code, element: f.element, message: `Text is cut off by ${d.by}, which clips ${d.px}px of it: ${at}${more(f.count, "text")}` };
    case "small_text":
      return { code: f.code, element: f.element, message: `Text under ${MIN_TEXT_PX}px: ${at} is ${d.px}px${more(f.count, "element")}` };
    case "broken_image":
      return { code: f.code, element: f.element, message: `Image does not load: ${d.src}${more(f.count, "image")}` };
    default:
      return { code: f.code, element: f.element, message: `${f.code}: ${at}` };
  }
}

/** A sentence for a slide's contrast failures (or undecidable cases) in one mode. */
export function contrastWarning(code: "contrast" | "contrast_review", mode: string, nodes: AxeNode[]): DeckWarning {
  const n = nodes[0]!;
  const at = `${n.element}${quote(n.text)}`;
  if (code === "contrast") {
    const ratio = n.ratio !== undefined ? `${n.ratio}:1` : "too low";
    return { code, element: n.element, message: `Text below WCAG AA contrast in ${mode} mode: ${at} has ${ratio}, needs ${n.expected ?? "4.5:1"}${n.fg && n.bg ? ` (${n.fg} on ${n.bg})` : ""}${more(nodes.length, "element")}` };
  }
  return { code, element: n.element, message: `Contrast needs review in ${mode} mode (axe could not decide): ${at}: ${n.message}${more(nodes.length, "element")}` };
}
