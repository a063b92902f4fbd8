/**
 * Messages as a reader of the pages reads them (spec 4.3: "a reader who cannot open a target sees it as
 * unavailable"): artifacts named by their title where the reader may open them, in neutral words where
 * not, never by their id (`art_01…`). The API's errors, publish warnings and logs keep the ids: they are
 * for authors' code and operators.
 */
import { parseAddress } from "../address";
import { formatRange } from "../cell-range";

/** An artifact id as the store makes them (`art_` and a ULID), not inside an address (`artifact:art_…`) or a path (`/artifacts/art_…`); with a "the" or "artifact" before it, which the name replaces. */
const ARTIFACT_ID = /(?<![:\w/])((?:[Tt]he )?[Aa]rtifact )?(art_[0-9A-Za-z]+)\b/g;

/** The artifact ids `message` names (as {@link withoutArtifactIds} finds them), each once. */
export function artifactIdsIn(message: string): string[] {
  return [...new Set([...message.matchAll(ARTIFACT_ID)].map((m) => m[2]!))];
}

/**
 * `message` (an API error's or the resolver's, e.g. `artifact art_01… version 3 has no chart "Gone"; its
 * charts are: Trend`) with every artifact id, and the word "artifact" before it, replaced by `name(id)`:
 * a title in quotes for one the reader may open, neutral words ("this artifact", "another artifact") for
 * the rest. At the start of the message the name's first letter is capitalised (unless `opts.midSentence`:
 * the message goes after a colon).
 *
 * @param name what to call the artifact `id` in front of this reader
 */
export function withoutArtifactIds(message: string, name: (id: string) => string, opts: { midSentence?: boolean } = {}): string {
  return message.replace(ARTIFACT_ID, (_whole, _word: string | undefined, id: string, at: number) => {
    const said = name(id);
    return at === 0 && !opts.midSentence ? said.charAt(0).toUpperCase() + said.slice(1) : said;
  });
}

/** A title as the pages quote it in a sentence: “Revenue 2026”. */
export const quoted = (title: string) => `“${title}”`;

/**
 * What an address shows, in words, without its artifact (`chart “Margin”`, `section “revenue”`,
 * `range Revenue!A1:B4`, `file “logo.svg”`, `version 2`; `the whole artifact` for a bare address).
 * An address that does not parse is `something`.
 */
export function describeAddressPart(address: string): string {
  try {
    const a = parseAddress(address);
    const part = a.part;
    const what =
      part?.kind === "chart" ? `chart ${quoted(part.chart)}`
      : part?.kind === "range" ? `range ${part.sheet}!${formatRange(part.range)}`
      : part?.kind === "name" ? quoted(part.name)
      : a.file !== undefined ? `file ${quoted(a.file)}`
      : "the whole artifact";
    return a.version !== undefined && (part || a.file !== undefined) ? `${what} of version ${a.version}` : a.version !== undefined ? `version ${a.version}` : what;
  } catch {
    return "something";
  }
}
