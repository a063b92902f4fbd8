import * as v from "valibot";
import { inject, injectable } from "../di";
import { Database } from "../store/db";
import { FileStore } from "../files/file-store";
import { FILE_UPLOAD_MAX_BYTES } from "../files/limits";
import { CONFIG, type Config } from "../config";
import { ProjectRegistry } from "../project/registry";
import { DeckCheckProcess } from "./deck-check-process";
import { Readable } from "node:stream";
import { buffer as readBuffer } from "node:stream/consumers";
import { ApiError, isApiError } from "../errors";
import { newId, nowIso } from "../ids";
import { decodeListingToken, isPositiveInteger, isTextPair, keysetPage } from "../http/listing-token";
import type { FileReference } from "../sdk/context";
import { formatAddress, parseAddress, type ArtifactAddress } from "./address";
import { AddressError, toApiError } from "./address-error";
import { checkLayout, type Theme, classifyReference, normalizeArtifactPath, readTheme, type ArtifactKind, type ContentProblem } from "./content";
import { checkContent, invalid } from "./publish-checks";
import { resolveWithin, type Resolution, type ResolvableVersion, type VersionOutline } from "./resolve";
import type { Artifact, ArtifactVersion, PublishWarningSchema } from "./schemas";

/** Who reads or publishes: an identity (it opens only what it owns, spec 4.3) or system code (everything). */
export type ArtifactReader = { kind: "identity"; id: string } | { kind: "system" };

interface ArtifactRow {
  id: string;
  kind: ArtifactKind;
  title: string;
  owner: string;
  latest_version: number;
  created_at: string;
  updated_at: string;
}
interface VersionRow {
  artifact_id: string;
  version: number;
  title: string;
  files: string;
  outline: string;
  warnings: string;
  published_at: string;
  published_by: string | null;
  withdrawn_at?: string | null;
}

const toArtifact = (r: ArtifactRow): Artifact => ({ id: r.id, kind: r.kind, title: r.title, owner: r.owner, latestVersion: r.latest_version, createdAt: r.created_at, updatedAt: r.updated_at });
const toVersion = (r: VersionRow): ArtifactVersion => ({
  artifactId: r.artifact_id,
  version: r.version,
  title: r.title,
  files: JSON.parse(r.files),
  outline: JSON.parse(r.outline),
  warnings: JSON.parse(r.warnings),
  publishedAt: r.published_at,
  ...(r.published_by ? { publishedBy: r.published_by } : {}),
});

/**
 * Artifacts and their immutable versions (spec 2.7–2.11, 4.1, 4.3, 9): publishing checks the whole
 * version first and writes it in one transaction or not at all; reads are owner-only (404 for every
 * other identity: an artifact's existence is not disclosed); system code reaches every artifact.
 */
@injectable()
export class ArtifactStore {
  constructor(
    @inject(Database) private readonly db: Database,
    @inject(FileStore) private readonly files: FileStore,
    @inject(DeckCheckProcess) private readonly decks: DeckCheckProcess,
    @inject(CONFIG) private readonly config: Config,
    @inject(ProjectRegistry) private readonly project: ProjectRegistry,
  ) {}

  /**
   * Lays a deck out in headless Chromium (spec 4.3) and answers its per-slide warnings and screenshots
   * (stored as files), or why it was not checked: the deck then publishes unchecked, and says so.
   */
  private async checkDeck(entries: Array<{ path: string; file: FileReference }>): Promise<{ warnings: Array<v.InferOutput<typeof PublishWarningSchema>>; checks: NonNullable<VersionOutline["checks"]> }> {
    if (!this.config.deckChecks) {
      const reason = "deck checks are off (SVC_DECK_CHECKS=false)";
      return { warnings: [{ code: "deck_unchecked", message: `The deck was published unchecked: ${reason}` }], checks: { checked: false, reason } };
    }
    const files = new Map<string, Buffer>();
    for (const e of entries) files.set(e.path, await readBuffer((await this.files.open(e.file.id)).stream));
    const result = await this.decks.check({ files });
    if (!result.checked) return { warnings: [{ code: "deck_unchecked", message: `The deck was published unchecked: ${result.reason}` }], checks: { checked: false, reason: result.reason } };
    const warnings: Array<v.InferOutput<typeof PublishWarningSchema>> = [];
    const slides: Array<{ number: number; screenshot: FileReference }> = [];
    for (const slide of result.slides) {
      for (const w of slide.warnings) warnings.push({ code: w.code, message: `Slide ${slide.number}: ${w.message}`, slide: slide.number, ...(w.element ? { element: w.element } : {}) });
      const screenshot = await this.files.upload(Readable.from([slide.screenshot]), { name: `slide-${slide.number}.png`, declaredContentType: "image/png", maxBytes: FILE_UPLOAD_MAX_BYTES });
      slides.push({ number: slide.number, screenshot });
    }
    return { warnings, checks: { checked: true, slides } };
  }

  private async row(reader: ArtifactReader, id: string): Promise<ArtifactRow> {
    const row = await this.db.get<ArtifactRow>("SELECT * FROM artifacts WHERE id = ?", [id]);
    if (!row || (reader.kind === "identity" && row.owner !== reader.id)) throw new ApiError("not_found", `No artifact "${id}"`);
    // latest_version 0: every version was withdrawn (the reply that published them failed and was retried)
    if (row.latest_version === 0) throw new ApiError("not_found", `Artifact ${id} was withdrawn: the reply that published it failed and was retried`, { withdrawn: true });
    return row;
  }

  /** An artifact the reader may open. @throws {ApiError} not_found (also for another owner's) */
  async get(reader: ArtifactReader, id: string): Promise<Artifact> {
    return toArtifact(await this.row(reader, id));
  }

  /**
   * The reader's artifacts, most recently updated first (`kind` filters), a page at a time; pass
   * `nextPageToken` from the previous page.
   * @throws {ApiError} invalid_request for a token of another listing
   */
  async list(reader: ArtifactReader, q: { kind?: ArtifactKind; pageSize: number; nextPageToken?: string }): Promise<{ data: Artifact[]; nextPageToken?: string }> {
    const where: string[] = [];
    const params: Array<string | number> = [];
    where.push("latest_version > 0");
    if (reader.kind === "identity") where.push("owner = ?"), params.push(reader.id);
    if (q.kind) where.push("kind = ?"), params.push(q.kind);
    // a token is bound to the caller and the kind filter: another's is refused, not read as a position
    const filters = JSON.stringify({ owner: reader.kind === "identity" ? reader.id : null, kind: q.kind ?? null });
    // an empty token reads as none, as it always did here
    if (q.nextPageToken) {
      const after = decodeListingToken(q.nextPageToken, filters, isTextPair, { refusal: "nextPageToken belongs to this listing with another kind, or to another caller: send the same kind, and a token your own listing answered" });
      where.push("(updated_at < ? OR (updated_at = ? AND id < ?))");
      params.push(after[0], after[0], after[1]);
    }
    const rows = await this.db.all<ArtifactRow>(`SELECT * FROM artifacts ${where.length ? `WHERE ${where.join(" AND ")}` : ""} ORDER BY updated_at DESC, id DESC LIMIT ?`, [...params, q.pageSize + 1]);
    return keysetPage(rows, q.pageSize, filters, toArtifact, (a) => [a.updatedAt, a.id]);
  }

  /**
   * An artifact's versions, oldest first, a page at a time (`GET /api/artifacts/:id/versions`, spec
   * 4.3): keyset on `version` along the table's key, withdrawn versions left out. A page holds at most
   * `pageSize` versions, and `nextPageToken` when more follow (bound to this artifact).
   * @param page.pageSize 1 to 200; `page.nextPageToken` from the page before
   * @throws {ApiError} not_found for an artifact the reader may not open; invalid_request for a token
   *   this listing did not issue (another artifact's included)
   */
  async versions(reader: ArtifactReader, id: string, page: { pageSize: number; nextPageToken?: string }): Promise<{ data: ArtifactVersion[]; nextPageToken?: string }> {
    await this.row(reader, id);
    const filters = JSON.stringify({ artifactId: id });
    const after = page.nextPageToken === undefined ? 0 : decodeListingToken(page.nextPageToken, filters, isPositiveInteger, { refusal: "nextPageToken belongs to another artifact's versions: send one this artifact's listing answered" });
    const rows = await this.db.all<VersionRow>("SELECT * FROM artifact_versions WHERE artifact_id = ? AND version > ? AND withdrawn_at IS NULL ORDER BY version LIMIT ?", [id, after, page.pageSize + 1]);
    return keysetPage(rows, page.pageSize, filters, toVersion, (v) => v.version);
  }

  /** The numbers of an artifact's versions, oldest first, withdrawn ones left out (the page's version picker). @throws {ApiError} not_found */
  async versionNumbers(reader: ArtifactReader, id: string): Promise<number[]> {
    await this.row(reader, id);
    return (await this.db.all<{ version: number }>("SELECT version FROM artifact_versions WHERE artifact_id = ? AND withdrawn_at IS NULL ORDER BY version", [id])).map((r) => r.version);
  }

  /**
   * One version (the latest when `version` is undefined).
   * @throws {ApiError} not_found for another owner's artifact, or a version that does not exist (naming the latest)
   */
  async version(reader: ArtifactReader, id: string, version?: number): Promise<ArtifactVersion & { kind: ArtifactKind; latestVersion: number; artifactTitle: string }> {
    const artifact = await this.row(reader, id);
    const n = version ?? artifact.latest_version;
    const row = await this.db.get<VersionRow>("SELECT * FROM artifact_versions WHERE artifact_id = ? AND version = ?", [id, n]);
    if (!row) throw new ApiError("not_found", `Artifact ${id} has no version ${n}; latest is ${artifact.latest_version}`, { latestVersion: artifact.latest_version });
    if (row.withdrawn_at) throw new ApiError("not_found", `Version ${n} of artifact ${id} was withdrawn (the reply that published it failed and was retried); latest is ${artifact.latest_version}`, { latestVersion: artifact.latest_version, withdrawn: true });
    return { ...toVersion(row), kind: artifact.kind, latestVersion: artifact.latest_version, artifactTitle: artifact.title };
  }

  /**
   * A version's theme (spec 2.11): its valid `theme.json`, or undefined when it has none (in a `file`
   * artifact a `theme.json` is just the file). Versions were checked at publish time, so a theme that
   * does not read is treated as none.
   */
  async theme(version: { kind: ArtifactKind; files: ReadonlyArray<{ path: string; file: FileReference }> }): Promise<Theme | undefined> {
    const entry = version.kind === "file" ? undefined : version.files.find((f) => f.path === "theme.json");
    if (!entry) return undefined;
    const read = readTheme(await this.files.text(entry.file.id));
    return "theme" in read ? read.theme : undefined;
  }

  /**
   * The screenshot of slide `slide` of a checked deck version (spec 4.3: stored with the version).
   * @throws {ApiError} not_found when the version was not checked or has no such slide
   */
  async screenshot(reader: ArtifactReader, id: string, version: number, slide: number): Promise<FileReference> {
    const ver = await this.version(reader, id, version);
    const checks = (ver.outline as VersionOutline).checks;
    const shot = checks?.checked ? checks.slides.find((s) => s.number === slide) : undefined;
    if (!shot) throw new ApiError("not_found", checks?.checked ? `Version ${version} of ${id} has no slide ${slide}; it has ${checks.slides.length}` : `Version ${version} of ${id} has no deck check screenshots${checks ? `: ${checks.reason}` : ""}`);
    return shot.screenshot;
  }

  /**
   * The file at `path` in a version, for serving its bytes.
   * @throws {ApiError} not_found naming the version's files when there is none at that path
   */
  async file(reader: ArtifactReader, id: string, version: number, path: string): Promise<FileReference> {
    const ver = await this.version(reader, id, version);
    const entry = ver.files.find((f) => f.path === path);
    if (!entry) throw new ApiError("not_found", `Version ${version} of ${id} has no file "${path}"; its files are: ${ver.files.map((f) => f.path).join(", ")}`, { has: ver.files.map((f) => f.path) });
    return entry.file;
  }

  /**
   * What an address points at for this reader (spec 2.7, 9): the artifact, the version (latest when the
   * address has none), and the file or part it names.
   * @throws {ApiError} invalid_request for a malformed address (with the position); not_found when it
   *   names nothing the reader can open, saying what the target has instead
   */
  async resolve(reader: ArtifactReader, address: string | ArtifactAddress): Promise<Resolution> {
    const parsed = typeof address === "string" ? parseAddressOrThrow(address) : address;
    const target = await this.resolvable(reader, parsed.artifactId, parsed.version);
    return resolveWithin(parsed, target);
  }

  private async resolvable(reader: ArtifactReader, id: string, version: number | undefined): Promise<ResolvableVersion> {
    const ver = await this.version(reader, id, version);
    return { artifactId: id, kind: ver.kind, title: ver.artifactTitle, version: ver.version, latestVersion: ver.latestVersion, files: ver.files, outline: ver.outline as VersionOutline };
  }

  /**
   * Refuses an owner that system code names for a new artifact when it is no user identity of the
   * project (the SDK's `ctx.artifacts.publish` documents `owner` as a user identity id).
   * @throws {ApiError} invalid_request naming the owner
   */
  private checkOwner(owner: unknown): void {
    const type = typeof owner === "string" ? this.project.identityType(owner) : undefined;
    if (type === "user") return;
    const named = typeof owner === "string" ? `"${owner}"` : String(owner);
    const users = Object.entries(this.project.definition.identities).filter(([, i]) => i.type === "user").map(([id]) => id);
    const why = type === "serviceAccount" ? "is a service account" : "is no identity of the project";
    throw new ApiError("invalid_request", `The artifact's owner ${named} ${why}: an owner is a user identity id (users: ${users.join(", ") || "none"})`, { owner });
  }

  /**
   * Publishes a version (spec 2.7, 4.3, 7, 8): a new artifact at version 1 when `artifactId` is
   * absent, else the next version of it. The whole version is checked first — paths, files, the kind's
   * layout, the theme, the document's images, the deck's references, every workbook cell — and every
   * artifact address in it is resolved against what the author can read; then it is written in one
   * transaction, or nothing is. A version that renames or removes something another artifact shows
   * (following the latest) publishes with a warning naming that artifact.
   *
   * @param input.author who publishes: an identity may use only the files it uploaded or that are in its
   *   own artifacts, and reference only its own artifacts; the system may do anything
   * @param input.owner the owner of a new artifact (default: the author identity); system code publishes on behalf of a user this way
   * @throws {ApiError} artifact_invalid (422) listing every problem (file, row, column, what was
   *   expected), capped at 100 with the total count; not_found for an artifact the author cannot open;
   *   invalid_request for an `owner` that is no user identity of the project
   */
  async publish(input: { artifactId?: string; kind?: ArtifactKind; title?: string; files: Array<{ path: string; file: { id: string } }>; author: ArtifactReader; owner?: string; publishedBy?: string; publishKey?: string }): Promise<{ artifact: Artifact; version: ArtifactVersion }> {
    if (input.publishKey) {
      // published before under this key (a retried activity): answer that version, publish nothing
      const done = await this.db.get<{ artifact_id: string; version: number }>("SELECT artifact_id, version FROM artifact_versions WHERE publish_key = ?", [input.publishKey]);
      if (done) return this.published(done.artifact_id, done.version);
    }
    const existing = input.artifactId ? await this.row(input.author, input.artifactId) : undefined;
    // a version is of its artifact's kind: one may say it (spec 2.7's version input), not change it
    if (existing && input.kind !== undefined && input.kind !== existing.kind) {
      throw new ApiError("conflict", `Artifact "${existing.id}" is a ${existing.kind}: its versions are too (kind "${input.kind}" was sent); publish a new artifact for a ${input.kind}`, { kind: input.kind, artifactKind: existing.kind });
    }
    const kind = existing?.kind ?? input.kind;
    if (!kind) throw new ApiError("invalid_request", "A new artifact needs a kind: document, sheet, slides or file");
    const title = input.title ?? existing?.title;
    if (!title) throw new ApiError("invalid_request", "A new artifact needs a title");
    const owner = existing?.owner ?? input.owner ?? (input.author.kind === "identity" ? input.author.id : undefined);
    if (!owner) throw new ApiError("invalid_request", "System code publishing a new artifact names its owner");
    // an owner no one is: an artifact only its owner opens, which no token or session could ever read
    if (!existing && input.owner !== undefined) this.checkOwner(input.owner);
    const problems: ContentProblem[] = [];

    // paths and files
    const entries: Array<{ path: string; file: FileReference }> = [];
    const seen = new Set<string>();
    // the layout is checked against the paths as meant: a refused "/document.md" is reported once, as a path
    const meant = new Set<string>();
    for (const [i, entry] of input.files.entries()) {
      const normalized = normalizeArtifactPath(entry.path);
      if ("error" in normalized) {
        problems.push({ file: entry.path, message: `files[${i}].path "${entry.path}": ${normalized.error}` });
        meant.add(entry.path.replace(/^\/+/, ""));
        continue;
      }
      meant.add(normalized.path);
      if (seen.has(normalized.path)) {
        problems.push({ file: normalized.path, message: `files[${i}].path "${normalized.path}" appears twice` });
        continue;
      }
      seen.add(normalized.path);
      const file = await this.files.get(entry.file.id);
      if (!file || !(await this.mayUse(input.author, file.id))) problems.push({ file: normalized.path, message: `${normalized.path}: no file "${entry.file.id}" you can use (upload it with POST /api/files)` });
      else entries.push({ path: normalized.path, file });
    }
    entries.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
    problems.push(...checkLayout(kind, [...meant]));
    if (problems.length) throw invalid(problems);

    const { outline, references, problems: contentProblems, warnings: contentWarnings } = await checkContent(this.files, kind, entries);
    problems.push(...contentProblems);

    // every artifact address, resolved against what the author can read (spec 4.3)
    // numbers are never reused, not even those of withdrawn versions
    const nextVersion = (existing ? ((await this.db.get<{ n: number }>("SELECT MAX(version) AS n FROM artifact_versions WHERE artifact_id = ?", [existing.id]))?.n ?? 0) : 0) + 1;
    const selfId = existing?.id;
    const links = new Map<string, ArtifactAddress>();
    /** Each distinct address is resolved once (a sheet may repeat one in many link cells). */
    const verdicts = new Map<string, Promise<string | undefined>>();
    const verdict = (address: ArtifactAddress) => {
      const key = formatAddress(address);
      let pending = verdicts.get(key);
      if (!pending) {
        pending = (async () => {
          try {
            if (address.artifactId === selfId && (address.version === undefined || address.version === nextVersion)) {
              resolveWithin(address, { artifactId: selfId!, kind, title, version: nextVersion, latestVersion: nextVersion, files: entries, outline });
            } else await this.resolve(input.author, address);
            return undefined;
          } catch (err) {
            if (!isApiError(err)) throw err;
            return err.message;
          }
        })();
        verdicts.set(key, pending);
      }
      return pending;
    };
    for (const ref of references) {
      if (classifyReference(ref) !== "address") continue;
      const at = `${ref.file}${ref.line ? (ref.file.endsWith(".csv") ? ` row ${ref.line}` : ` line ${ref.line}`) : ""}`;
      let address: ArtifactAddress;
      try {
        address = parseAddress(ref.target);
      } catch (err) {
        problems.push({ file: ref.file, line: ref.line, message: `${at}: ${(err as Error).message}`, value: ref.target });
        continue;
      }
      const refused = await verdict(address);
      if (refused === undefined) links.set(formatAddress(address), address);
      else problems.push({ file: ref.file, line: ref.line, message: `${at}: ${ref.target} names nothing: ${refused}`, value: ref.target });
    }
    if (problems.length) throw invalid(problems);

    // dependents that follow the latest version and would no longer find what they show (spec 4.3)
    const warnings: Array<v.InferOutput<typeof PublishWarningSchema>> = [...contentWarnings];
    if (existing) {
      const dependents = await this.db.all<{ source_id: string; address: string }>(
        `SELECT l.source_id, l.address FROM artifact_links l JOIN artifacts a ON a.id = l.source_id AND a.latest_version = l.source_version
          WHERE l.target_id = ? AND l.target_version IS NULL AND l.source_id <> ?`,
        [existing.id, existing.id],
      );
      for (const d of dependents) {
        try {
          resolveWithin(parseAddress(d.address), { artifactId: existing.id, kind, title, version: nextVersion, latestVersion: nextVersion, files: entries, outline });
        } catch (err) {
          if (!isApiError(err)) throw err;
          warnings.push({ code: "dependent_broken", artifactId: d.source_id, address: d.address, reason: err.message, message: `Artifact ${d.source_id} shows ${d.address}, which this version no longer has: ${err.message}` });
        }
      }
    }

    // a CSV under sheets/ that no sheet of workbook.json names is kept with the version, but no tab shows it
    if (kind === "sheet") {
      const names = (outline.sheets ?? []).map((x) => x.name);
      const named = new Set(names.map((name) => `sheets/${name}.csv`));
      for (const { path } of entries) {
        if (!path.startsWith("sheets/") || !path.toLowerCase().endsWith(".csv") || named.has(path)) continue;
        warnings.push({ code: "sheet_file_unused", file: path, message: `${path} is not the file of any sheet in workbook.json (its sheets: ${names.length ? names.join(", ") : "none"}; the sheet named N reads sheets/N.csv): it is kept with the version, but no tab shows it` });
      }
    }

    // a deck is laid out in Chromium after every other check, outside the transaction (it takes seconds)
    if (kind === "slides") {
      const deck = await this.checkDeck(entries);
      warnings.push(...deck.warnings);
      outline.checks = deck.checks;
    }

    const now = nowIso();
    const id = existing?.id ?? newId("art");
    const written = await this.db.transaction(async (tx) => {
      const current = await tx.get<{ latest_version: number; max_version: number | null }>("SELECT latest_version, (SELECT MAX(version) FROM artifact_versions WHERE artifact_id = ?) AS max_version FROM artifacts WHERE id = ?", [id, id]);
      // the checks above were made for version nextVersion: another publish in between makes them stale
      if ((current?.max_version ?? 0) !== nextVersion - 1) throw new ApiError("conflict", `Artifact ${id} got version ${current?.max_version} while this one was being checked; publish again`, { latestVersion: current?.latest_version });
      const n = nextVersion;
      if (current) await tx.run("UPDATE artifacts SET title = ?, latest_version = ?, updated_at = ? WHERE id = ?", [title, n, now, id]);
      else await tx.run("INSERT INTO artifacts (id, kind, title, owner, latest_version, created_at, updated_at) VALUES (?, ?, ?, ?, 1, ?, ?)", [id, kind, title, owner, now, now]);
      await tx.run("INSERT INTO artifact_versions (artifact_id, version, title, files, outline, warnings, published_at, published_by, publish_key) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", [
        id, n, title, JSON.stringify(entries), JSON.stringify(outline), JSON.stringify(warnings), now, input.publishedBy ?? (input.author.kind === "identity" ? input.author.id : null), input.publishKey ?? null,
      ]);
      for (const e of entries) await this.files.addReference(tx, e.file.id, { kind: "artifact", id, path: `/versions/${n}/${e.path}` });
      if (outline.checks?.checked) for (const s of outline.checks.slides) await this.files.addReference(tx, s.screenshot.id, { kind: "artifact", id, path: `/versions/${n}/checks/slide-${s.number}.png` });
      for (const [text, address] of links) {
        await tx.run("INSERT INTO artifact_links (source_id, source_version, address, target_id, target_version) VALUES (?, ?, ?, ?, ?)", [id, n, text, address.artifactId, address.version ?? null]);
      }
      return n;
    });
    return this.published(id, written);
  }

  private async published(id: string, n: number): Promise<{ artifact: Artifact; version: ArtifactVersion }> {
    const artifact = await this.get({ kind: "system" }, id);
    const { kind: _kind, latestVersion: _latest, artifactTitle: _title, ...version } = await this.version({ kind: "system" }, id, n);
    return { artifact, version };
  }

  /**
   * Withdraws every version published under a key starting with `keyPrefix` (spec 4.3: retrying a
   * failed agent reply removes what it published). A withdrawn version is no longer readable (404 saying
   * so; addresses pinned to it show as unavailable), its number is never reused, and an artifact's latest
   * becomes its newest version still standing; an artifact with none left is gone from every read.
   * @returns the versions withdrawn now (none twice)
   */
  async withdraw(keyPrefix: string): Promise<Array<{ artifactId: string; version: number }>> {
    if (!keyPrefix) throw new Error("withdraw needs a key prefix");
    return this.db.transaction(async (tx) => {
      const rows = await tx.all<{ artifact_id: string; version: number }>("SELECT artifact_id, version FROM artifact_versions WHERE publish_key >= ? AND publish_key < ? AND withdrawn_at IS NULL", [keyPrefix, `${keyPrefix}\uffff`]);
      const now = nowIso();
      for (const r of rows) await tx.run("UPDATE artifact_versions SET withdrawn_at = ? WHERE artifact_id = ? AND version = ?", [now, r.artifact_id, r.version]);
      for (const id of new Set(rows.map((r) => r.artifact_id))) {
        await tx.run("UPDATE artifacts SET latest_version = COALESCE((SELECT MAX(version) FROM artifact_versions WHERE artifact_id = ? AND withdrawn_at IS NULL), 0), updated_at = ? WHERE id = ?", [id, now, id]);
      }
      return rows.map((r) => ({ artifactId: r.artifact_id, version: r.version }));
    });
  }

  /** An identity may put into a version the files it uploaded and the files of its own artifacts; system code any file. */
  private async mayUse(author: ArtifactReader, fileId: string): Promise<boolean> {
    if (author.kind === "system" || (await this.files.uploadedBy(fileId, author.id))) return true;
    const own = await this.db.get("SELECT 1 AS one FROM file_references r JOIN artifacts a ON a.id = r.owner_id WHERE r.owner_kind = 'artifact' AND r.file_id = ? AND a.owner = ? LIMIT 1", [fileId, author.id]);
    return own !== undefined;
  }
}

/** Parses an address for the API. @throws {ApiError} invalid_request with `details.position` */
export function parseAddressOrThrow(address: string): ArtifactAddress {
  try {
    return parseAddress(address);
  } catch (err) {
    throw err instanceof AddressError ? toApiError(err) : err;
  }
}
