/**
 * What publishing checks in a version's files (spec 2.8–2.11, 4.3, 7): the theme and, by kind, a
 * document's images, a deck's slides and everything it loads, a workbook and every cell of its CSVs;
 * and the 422 refusal that lists every problem. The readers are in ./content.ts and ./workbook.ts; the
 * publisher (ArtifactStore.publish, ./store.ts) checks paths and files before, and resolves the artifact
 * addresses found and lays decks out after.
 */
import { ApiError, isApiError } from "../errors";
import type { FileStore } from "../files/file-store";
import type { FileReference } from "../sdk/context";
import { isArtifactAddress } from "./address";
import { ALLOWED_CDN_HOSTS, classifyReference, cssUrls, isImagePath, readDeck, readDocument, readTheme, resolveRelative, type ArtifactKind, type ContentProblem, type ContentReference } from "./content";
import type { VersionOutline } from "./resolve";
import { validateWorkbook } from "./workbook";

/** Something about a version that publishes, but its author should know (a publish warning with its file). */
export interface ContentWarning {
  code: string;
  file: string;
  message: string;
}

/** The `document_empty` warning's sentence. */
export const DOCUMENT_EMPTY_MESSAGE = "document.md shows nothing: it has no text, image or embed (blank, or only empty blocks), so readers see an empty document. Write its content in Markdown: a # title, then paragraphs";

/** The most problems one refusal lists (the total is always given). */
const MAX_PROBLEMS = 100;
/** The largest text file (document.md, index.html, CSS, JSON) read for checks, in bytes. */
const MAX_TEXT_BYTES = 5 * 1024 * 1024;

/**
 * Checks the content of a version whose paths, files and layout are valid (spec 2.8–2.11, 4.3): its
 * theme and, by kind, a document's images, a deck's slides and what it loads (its own files and
 * {@link ALLOWED_CDN_HOSTS} only), or the workbook and its CSVs.
 *
 * @param files where the version's files are read
 * @returns the version's outline (sections, slides, or sheets and charts), every reference its content
 *   makes (the artifact addresses among them are for the publisher to resolve), what is wrong with it,
 *   and what publishes but the author should know (`warnings`: a document that shows nothing)
 * @throws {ApiError} artifact_invalid for a text file larger than MAX_TEXT_BYTES, a workbook.json that
 *   is not JSON, or more workbook problems than MAX_PROBLEMS (with the total)
 */
export async function checkContent(files: FileStore, kind: ArtifactKind, entries: ReadonlyArray<{ path: string; file: FileReference }>): Promise<{ outline: VersionOutline; references: ContentReference[]; problems: ContentProblem[]; warnings: ContentWarning[] }> {
  const problems: ContentProblem[] = [];
  const warnings: ContentWarning[] = [];
  const paths = new Set(entries.map((e) => e.path));
  const text = async (path: string) => {
    const entry = entries.find((e) => e.path === path)!;
    if (entry.file.size > MAX_TEXT_BYTES) throw invalid([{ file: path, message: `${path} is ${entry.file.size.toLocaleString("en-US")} bytes; the text files a version's checks read (document.md, index.html, CSS, JSON) are at most 5 MiB (${MAX_TEXT_BYTES.toLocaleString("en-US")} bytes)` }]);
    return files.text(entry.file.id);
  };
  const outline: VersionOutline = { themeMode: null };
  const references: ContentReference[] = [];
  if (kind !== "file" && paths.has("theme.json")) {
    const theme = readTheme(await text("theme.json"));
    problems.push(...theme.problems);
    if ("theme" in theme) outline.themeMode = theme.theme.mode ?? null;
  }
  if (kind === "document") {
    const doc = await readDocument(await text("document.md"));
    Object.assign(outline, { ...(doc.title ? { title: doc.title } : {}), ...(doc.lede ? { lede: doc.lede } : {}), sections: doc.sections });
    references.push(...doc.references);
    if (doc.empty) warnings.push({ code: "document_empty", file: "document.md", message: DOCUMENT_EMPTY_MESSAGE });
    for (const ref of doc.references) {
      if (ref.use !== "image") continue;
      const where = classifyReference(ref);
      const path = where === "file" ? (resolveRelative("document.md", ref.target) ?? "") : undefined;
      if (path !== undefined && !paths.has(path)) problems.push({ file: "document.md", line: ref.line, message: `document.md line ${ref.line}: image "${ref.target}" is not a file of this version`, value: ref.target });
      else if (path !== undefined && !isImagePath(path)) problems.push({ file: "document.md", line: ref.line, message: `document.md line ${ref.line}: image "${ref.target}" is not an image file (png, jpg, gif, webp, avif, svg, bmp or ico)`, value: ref.target });
      if (where === "external" || where === "data" || where === "anchor") problems.push({ file: "document.md", line: ref.line, message: `document.md line ${ref.line}: images must be files in this version or artifact addresses, not "${ref.target}"`, value: ref.target });
    }
  } else if (kind === "slides") {
    const deck = readDeck(await text("index.html"));
    if (deck.slides.length === 0) problems.push({ file: "index.html", message: 'index.html has no <section class="slide"> a reader sees (none outside <template> and <noscript>, without hidden)' });
    outline.slides = deck.slides;
    references.push(...deck.references);
    for (const css of [...paths].filter((p) => p.endsWith(".css"))) for (const url of cssUrls(await text(css))) references.push({ file: css, target: url.target, use: url.use, inCss: true });
    for (const ref of references) {
      const where = classifyReference(ref);
      // the frame rewrites addresses in the deck's HTML for its reader; CSS reaches only the deck's own files and the CDNs
      if (where === "address" && ref.inCss) problems.push({ file: ref.file, line: ref.line, message: `${ref.file}${ref.line ? ` line ${ref.line}` : ""}: CSS cannot load an artifact address ("${ref.target}"): show another artifact's image with <img src="artifact:…">, or add the image to this deck's files`, value: ref.target });
      if (where === "address" && ref.unrewritten) problems.push({ file: ref.file, line: ref.line, message: `${ref.file}${ref.line ? ` line ${ref.line}` : ""}: ${ref.unrewritten} cannot load an artifact address ("${ref.target}"): addresses work in <img src>, <a href> and <svc-embed src>; add the file to this deck instead`, value: ref.target });
      if (where === "file" && ref.use !== "link" && !paths.has(resolveRelative(ref.file, ref.target) ?? "")) problems.push({ file: ref.file, line: ref.line, message: `${ref.file}${ref.line ? ` line ${ref.line}` : ""}: "${ref.target}" is not a file of this version`, value: ref.target });
      if (where === "external" && ref.use !== "link") {
        let host = "";
        try {
          host = new URL(ref.target.startsWith("//") ? `https:${ref.target}` : ref.target).hostname;
        } catch {
          host = "";
        }
        if (!(ALLOWED_CDN_HOSTS as readonly string[]).includes(host)) problems.push({ file: ref.file, line: ref.line, message: `${ref.file}${ref.line ? ` line ${ref.line}` : ""}: a deck loads only its own files and ${ALLOWED_CDN_HOSTS.join(", ")}, not "${ref.target}"`, value: ref.target });
      }
    }
  } else if (kind === "sheet") {
    let workbookJson: unknown;
    try {
      workbookJson = JSON.parse(await text("workbook.json"));
    } catch (err) {
      if (isApiError(err)) throw err;
      throw invalid([{ file: "workbook.json", message: `workbook.json is not valid JSON: ${(err as Error).message}` }]);
    }
    const result = await validateWorkbook({
      workbookJson,
      openCsv: async (path) => (paths.has(path) ? (await files.open(entries.find((e) => e.path === path)!.file.id)).stream : null),
      hasImage: (path) => paths.has(path) && isImagePath(path),
      isArtifactAddress,
      maxProblems: MAX_PROBLEMS,
    });
    problems.push(...result.problems);
    if (result.totalProblems > result.problems.length) throw invalid(problems, result.totalProblems - result.problems.length);
    outline.sheets = result.sheets;
    outline.charts = result.charts;
    for (const link of result.links) references.push({ file: link.file, target: link.address, use: "link", line: link.row });
  }
  return { outline, references, problems, warnings };
}

/** The 422 refusal of a version: every problem (capped) with the total count. */
export function invalid(problems: ContentProblem[], more = 0): ApiError {
  const total = problems.length + more;
  const shown = problems.slice(0, MAX_PROBLEMS);
  return new ApiError("artifact_invalid", `The version was not published: ${shown[0]?.message ?? "it is invalid"}${total > 1 ? ` (and ${total - 1} more problem${total > 2 ? "s" : ""})` : ""}`, { problems: shown, totalProblems: total });
}
