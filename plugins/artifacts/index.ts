import * as v from "valibot";
import { ARTIFACT_KINDS, ArtifactSchema, ArtifactStore, ArtifactVersionSchema, FileStore, ResolutionSchema, SheetData, SheetRowsSchema, TitleSchema, VersionFilesSchema, definePlugin, serveFile, type Principal } from "../../core/plugin-api";

const ArtifactParams = v.object({ artifactId: v.pipe(v.string(), v.description("`art_…`")) });
const OWNER_ONLY = "Only the artifact's owner opens it: for everyone else it does not exist (404, spec 4.3).";
const reader = (principal: Principal | undefined) => ({ kind: "identity" as const, id: principal!.id });

/**
 * Artifacts (spec 2.7–2.11, 4.1, 4.3, 9): publish version 1 and the next versions (checked whole, then
 * written at once; 422 `artifact_invalid` lists every problem), list and read them, read a version's
 * file bytes, and resolve an address for the caller. Only the owner opens an artifact.
 */
export default definePlugin({
  name: "artifacts",
  deps: { artifacts: ArtifactStore, files: FileStore, sheets: SheetData },
  setup({ routes }, { artifacts, files, sheets }) {
    // the domain types these routes answer, named in the OpenAPI document (Artifact, ArtifactVersion, Resolution, SheetRows)
    routes.component("Artifact", ArtifactSchema);
    routes.component("ArtifactVersion", ArtifactVersionSchema);
    routes.component("Resolution", ResolutionSchema);
    routes.component("SheetRows", SheetRowsSchema);
    const VersionNumber = routes.schemas.queryInteger({ min: 1, max: 1_000_000_000, description: "Version number (1, 2, …)" });
    const PageSize = v.optional(routes.schemas.queryInteger({ min: 1, max: 200, description: "1 to 200, default 50" }));
    routes.add({
      method: "POST",
      path: "/api/artifacts",
      summary: "Publish a new artifact (version 1)",
      description: [
        "`kind` is document (`document.md`, images beside it), sheet (`workbook.json` and one CSV per sheet under `sheets/`), slides (`index.html` with `<section class=\"slide\">` per slide) or file (exactly one file). `files` are `{ path, file: { id } }` of files you uploaded (POST /api/files).",
        "The whole version is checked before anything is written: paths, the kind's layout, `theme.json`, every workbook cell against its column type (refusals name file, row and column), a document's images, a deck's references (its own files and jsDelivr, cdnjs, unpkg, Google Fonts only), and every artifact address against what you can read (refusals say what the target has instead). Refused: 422 `artifact_invalid` with `details.problems` (at most 100) and `details.totalProblems`.",
        "The caller owns the artifact.",
      ].join("\n\n"),
      tags: ["artifacts"],
      auth: "bearer",
      body: v.strictObject({ kind: v.picklist(ARTIFACT_KINDS), title: TitleSchema, files: VersionFilesSchema }),
      responses: { 200: { description: "The artifact and its first version (with any publish warnings)", schema: v.object({ artifact: ArtifactSchema, version: ArtifactVersionSchema }) }, 422: { description: "The version is invalid: every problem listed" } },
      handler: ({ principal, body }) => artifacts.publish({ kind: body.kind, title: body.title, files: body.files, author: reader(principal) }),
    });
    routes.add({
      method: "POST",
      path: "/api/artifacts/:artifactId/versions",
      summary: "Publish the next version of an artifact",
      description: `The version is checked as on creation; it is number n+1 and never changes once published. When it renames or removes a sheet, chart, section, slide or file another artifact shows (following the latest version), it publishes with a \`dependent_broken\` warning naming that artifact and address. ${OWNER_ONLY}`,
      tags: ["artifacts"],
      auth: "bearer",
      params: ArtifactParams,
      body: v.strictObject({
        kind: v.optional(v.pipe(v.picklist(ARTIFACT_KINDS), v.description("The artifact's kind (optional): a version is always of its artifact's kind, and another is refused (409 `conflict`)"))),
        files: VersionFilesSchema,
        title: v.optional(TitleSchema),
      }),
      responses: { 200: { description: "The new version (with its warnings)", schema: ArtifactVersionSchema }, 404: { description: "No such artifact (or not yours)" }, 409: { description: "`conflict`: another version was published while this one was being checked (publish again), or `kind` is not the artifact's" }, 422: { description: "The version is invalid: every problem listed" } },
      handler: async ({ principal, params, body }) => (await artifacts.publish({ artifactId: params.artifactId, kind: body.kind, title: body.title, files: body.files, author: reader(principal) })).version,
    });
    routes.add({
      method: "GET",
      path: "/api/artifacts",
      summary: "List your artifacts",
      description: "Artifacts you own, most recently updated first; `kind` filters; continue with `nextPageToken`. The order is by last update: an artifact updated while you page moves ahead of the pages you have read and is not on the later ones (read from the start again to see it).",
      tags: ["artifacts"],
      auth: "bearer",
      query: v.object({ kind: v.optional(v.picklist(ARTIFACT_KINDS)), pageSize: PageSize, nextPageToken: v.optional(v.string()) }),
      responses: {
        200: { description: "A page of artifacts; `nextPageToken` when more follow (absent on the last page)", schema: v.object({ data: v.array(ArtifactSchema), nextPageToken: v.optional(v.string()) }) },
        400: { description: "`invalid_request`: a `nextPageToken` this listing did not issue (another kind's, another caller's, or edited)" },
      },
      handler: ({ principal, query }) => artifacts.list(reader(principal), { kind: query.kind, pageSize: query.pageSize ?? 50, nextPageToken: query.nextPageToken }),
    });
    routes.add({
      method: "GET",
      path: "/api/artifacts/resolve",
      summary: "Resolve an artifact address",
      description: "What `artifact:<id>[@<version>][/<file>][#<part>]` points at for you: the artifact, the version (the latest when the address has none: it follows the latest; with `@n` it stays on n), the file, and the sheet, range, chart, section or slide. A malformed address is 400 with `details.position`; one that names nothing is 404 saying what the target has instead.",
      tags: ["artifacts"],
      auth: "bearer",
      query: v.object({ address: v.pipe(v.string(), v.regex(/^artifact:art_[0-9A-Za-z]+/, "must be an artifact address artifact:<id>[@<version>][/<file>][#<part>]"), v.description("An artifact address `artifact:<id>[@<version>][/<file>][#<part>]`")) }),
      responses: { 200: { description: "What the address points at", schema: ResolutionSchema }, 404: { description: "It names nothing you can open; the message says what the target has instead" } },
      handler: ({ principal, query }) => artifacts.resolve(reader(principal), query.address),
    });
    routes.add({
      method: "GET",
      path: "/api/artifacts/:artifactId",
      summary: "Read an artifact",
      description: OWNER_ONLY,
      tags: ["artifacts"],
      auth: "bearer",
      params: ArtifactParams,
      responses: { 200: { description: "The artifact", schema: ArtifactSchema }, 404: { description: "No such artifact (or not yours)" } },
      handler: ({ principal, params }) => artifacts.get(reader(principal), params.artifactId),
    });
    routes.add({
      method: "GET",
      path: "/api/artifacts/:artifactId/versions",
      summary: "List an artifact's versions",
      description: `Oldest first, withdrawn versions left out; continue with \`nextPageToken\`. ${OWNER_ONLY}`,
      tags: ["artifacts"],
      auth: "bearer",
      params: ArtifactParams,
      query: v.object(routes.schemas.pageQuery({ max: 200, defaultSize: 50 })),
      responses: {
        200: { description: "A page of versions; `nextPageToken` when more follow (absent on the last page)", schema: v.object({ data: v.array(ArtifactVersionSchema), nextPageToken: v.optional(v.string()) }) },
        400: { description: "`invalid_request`: a `nextPageToken` this listing did not issue (another artifact's, or edited)" },
        404: { description: "No such artifact (or not yours)" },
      },
      handler: ({ principal, params, query }) => artifacts.versions(reader(principal), params.artifactId, { pageSize: query.pageSize ?? 50, nextPageToken: query.nextPageToken }),
    });
    routes.add({
      method: "GET",
      path: "/api/artifacts/:artifactId/versions/:version",
      summary: "Read a version",
      description: `Its files, its outline (sections, sheets, charts, slides that addresses can name; \`themeMode\`: the colour mode its theme.json pins, null when none) and its publish warnings. A version that does not exist is 404 naming the latest. ${OWNER_ONLY}`,
      tags: ["artifacts"],
      auth: "bearer",
      params: v.object({ artifactId: v.string(), version: VersionNumber }),
      responses: { 200: { description: "The version", schema: ArtifactVersionSchema }, 404: { description: "No such artifact (or not yours), or no such version (the message names the latest)" } },
      handler: async ({ principal, params }) => {
        const { kind: _kind, latestVersion: _latest, artifactTitle: _title, ...version } = await artifacts.version(reader(principal), params.artifactId, params.version);
        return version;
      },
    });
    routes.add({
      method: "GET",
      path: "/api/artifacts/:artifactId/versions/:version/checks/:slide",
      summary: "Read a deck check's screenshot of a slide",
      description: `A PNG of slide \`slide\` as the deck check laid it out at 1280×720 (spec 4.3), beside its warnings in the version. 404 when the version was published unchecked. ${OWNER_ONLY}`,
      tags: ["artifacts"],
      auth: "bearer",
      params: v.object({ artifactId: v.string(), version: VersionNumber, slide: routes.schemas.queryInteger({ min: 1, max: 10_000, description: "Slide number (1, 2, …)" }) }),
      responses: { 200: { description: "The screenshot (image/png)" }, 304: { description: "Not modified (If-None-Match)" }, 404: { description: "No such artifact (or not yours), version, slide, or no deck check" } },
      handler: async ({ event, principal, params }) => serveFile(event.req, files, (await artifacts.screenshot(reader(principal), params.artifactId, params.version, params.slide)).id, "inline"),
    });
    routes.add({
      method: "GET",
      path: "/api/artifacts/:artifactId/versions/:version/sheets/:sheet/rows",
      summary: "Read a page of a sheet's rows",
      description: `Up to \`limit\` data rows (1 to 1000, default 200) of the sheet named \`sheet\`, from \`offset\` (0-based below the header row, default 0), as the raw CSV values (spec 2.8: the reader's locale formats them), with the columns and their types and \`total\`, the number of data rows. An offset past the end answers no rows. A sheet the version does not have is 404 listing its sheets. ${OWNER_ONLY}`,
      tags: ["artifacts"],
      auth: "bearer",
      params: v.object({ artifactId: v.string(), version: VersionNumber, sheet: v.pipe(v.string(), v.minLength(1), v.description("The sheet's name (URL-encoded)")) }),
      query: v.object({
        offset: v.optional(routes.schemas.queryInteger({ min: 0, max: 1_000_000_000, description: "First data row, 0-based (default 0)" })),
        limit: v.optional(routes.schemas.queryInteger({ min: 1, max: 1000, description: "1 to 1000, default 200" })),
      }),
      responses: { 200: { description: "A page of rows", schema: SheetRowsSchema }, 404: { description: "No such artifact (or not yours), version or sheet (the message lists the sheets), or the artifact is not a sheet" } },
      handler: ({ principal, params, query }) => sheets.rows(reader(principal), params.artifactId, params.version, params.sheet, query.offset ?? 0, query.limit ?? 200),
    });
    for (const method of ["GET", "HEAD"] as const) {
      routes.add({
        method,
        path: "/api/artifacts/:artifactId/versions/:version/files/**:path",
        summary: method === "GET" ? "Read a file of a version" : "Check a file of a version (headers only)",
        description: `The bytes of the file at \`path\` (may contain \`/\`), with Range, ETag and a safe Content-Disposition; HTML, SVG and scripts are attachments. ${OWNER_ONLY}`,
        tags: ["artifacts"],
        auth: "bearer",
        params: v.object({ artifactId: v.string(), version: VersionNumber, path: v.pipe(v.string(), v.minLength(1), v.description("The file's path inside the artifact")) }),
        query: v.object({ disposition: v.optional(v.picklist(["attachment", "inline"])) }),
        responses: { 200: { description: "The file's bytes" }, 206: { description: "The requested range" }, 304: { description: "Not modified (If-None-Match)" }, 404: { description: "No such artifact, version or file (the message lists the version's files)" }, 416: { description: "Range outside the file" } },
        handler: async ({ event, principal, params, query }) => {
          const file = await artifacts.file(reader(principal), params.artifactId, params.version, params.path);
          return serveFile(event.req, files, file.id, query.disposition);
        },
      });
    }
  },
});
