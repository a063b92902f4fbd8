import * as v from "valibot";
import { DatasetProjector, DatasetRowsPageSchema, DatasetSchema, DatasetStore, DatasetVersionSchema, can, definePlugin, jsonResponse, has, requirePermission, type Principal } from "../../core/plugin-api";
import { RowsBodySchema, TransactionTypeSchema, VersionBodySchema } from "./schemas";

const created = (body: unknown) => jsonResponse(body, 201);
const actorOf = (principal: Principal) => ({ type: principal.type, id: principal.id });

/**
 * Datasets (spec 1, 2.4 `dataset.version.committed`, 4.1 `GET /api/datasets`): list and read datasets,
 * their versions and the rows of a committed version (`view:dataset:<id>`); open a transaction, write
 * rows (JSON in the body, or a stored CSV / JSON Lines file), commit or abort it, or commit a version
 * in one request (`edit:dataset:<id>`). An unknown dataset is 404 before any permission check; a known
 * one the caller may not read or edit is 403. `GET /api/datasets` lists only the datasets the caller may view.
 */
export default definePlugin({
  name: "datasets",
  deps: { datasets: DatasetStore, projector: DatasetProjector },
  setup({ routes, project }, { datasets, projector }) {
    // the domain types these routes answer, named in the OpenAPI document (Dataset, DatasetVersion, DatasetRowsPage)
    routes.component("Dataset", DatasetSchema);
    routes.component("DatasetVersion", DatasetVersionSchema);
    routes.component("DatasetRowsPage", DatasetRowsPageSchema);
    const Id = v.object({ id: v.pipe(v.string(), v.description("The dataset id")) });
    const VersionNumber = routes.schemas.queryInteger({ min: 1, max: 1_000_000_000, description: "Version number (1, 2, …)" });
    const IdVersion = v.object({ id: v.string(), version: VersionNumber });
    const Page = (max: number, fallback: number) => v.object({ pageSize: v.optional(routes.schemas.queryInteger({ min: 1, max, description: `1 to ${max}, default ${fallback}` })), nextPageToken: v.optional(v.pipe(v.string(), v.description("From the previous page"))) });
    /** The dataset (404 when unknown), then the permission (403). */
    const allowed = (principal: Principal | undefined, id: string, permission: (id: string) => string) => {
      const dataset = project.dataset(id);
      requirePermission(principal!, permission(id));
      return dataset;
    };
    const describe = async (id: string) => {
      const projection = await projector.state(project.dataset(id));
      return { ...(await datasets.summary(id)), ...(projection ? { projection } : {}) };
    };
    const viewDoc = "Needs `view:dataset:<id>`.";
    const editDoc = "Needs `edit:dataset:<id>`.";
    const notFound = { description: "`not_found`: no such dataset" };
    const versionNotFound = { description: "`not_found`: no such dataset, or no such version" };
    const notOpen = { description: "`conflict`: the version is committed or aborted, not open" };
    const rowsRefused = {
      description:
        "`invalid_request`: the path or body does not match this operation's schema (`details.issues`); or a row is refused: its message and `details` name the row (1-based, as in `rows` or the file's records), the file `line` and the `column` (`details.problems` lists up to 100); or two rows share a primary key; or the file is not valid CSV / JSON Lines, or its header names an unknown column. Nothing is stored.",
    };
    const fileProblems = { 403: { description: "`forbidden`: lacks `edit:dataset:<id>`, or the file was not uploaded by this identity" }, 413: { description: "`payload_too_large`: the body exceeds 1 MiB, or the file is over 256 MiB" } };

    routes.add({
      method: "GET",
      path: "/api/datasets",
      summary: "List datasets",
      description: "The datasets the caller may view (`view:dataset:<id>`), in declaration order: columns, primary key, latest committed version, its row count, the open transaction, and the projection state.",
      tags: ["datasets"],
      auth: "bearer",
      responses: { 200: { description: "Datasets", schema: v.object({ data: v.array(DatasetSchema) }) } },
      handler: async ({ principal }) => ({ data: await Promise.all(project.datasets().filter((d) => has(principal!, can.viewDataset(d.id))).map((d) => describe(d.id))) }),
    });
    routes.add({
      method: "GET",
      path: "/api/datasets/:id",
      summary: "Read a dataset",
      description: `Its columns, primary key, latest committed version and row count, open transaction, and projection (\`projectedVersion\`, \`status\` idle or projecting, \`pendingRows\`). ${viewDoc}`,
      tags: ["datasets"],
      auth: "bearer",
      params: Id,
      responses: { 200: { description: "The dataset", schema: DatasetSchema }, 404: notFound },
      handler: ({ principal, params }) => describe(allowed(principal, params.id, can.viewDataset).id),
    });
    routes.add({
      method: "GET",
      path: "/api/datasets/:id/versions",
      summary: "List a dataset's versions",
      description: `Newest first: open, committed and aborted, each with its status, transaction type and counts. Continue with \`nextPageToken\`. ${viewDoc}`,
      tags: ["datasets"],
      auth: "bearer",
      params: Id,
      query: Page(200, 50),
      responses: { 200: { description: "A page of versions", schema: v.object({ data: v.array(DatasetVersionSchema), nextPageToken: v.optional(v.string()) }) }, 404: notFound },
      handler: ({ principal, params, query }) => datasets.versions(allowed(principal, params.id, can.viewDataset).id, { pageSize: query.pageSize ?? 50, nextPageToken: query.nextPageToken }),
    });
    routes.add({
      method: "GET",
      path: "/api/datasets/:id/versions/:version",
      summary: "Read a dataset version",
      description: viewDoc,
      tags: ["datasets"],
      auth: "bearer",
      params: IdVersion,
      responses: { 200: { description: "The version", schema: DatasetVersionSchema }, 404: versionNotFound },
      handler: ({ principal, params }) => datasets.version(allowed(principal, params.id, can.viewDataset).id, params.version),
    });
    routes.add({
      method: "GET",
      path: "/api/datasets/:id/versions/:version/rows",
      summary: "Read the rows of a committed version",
      description: `The rows as of that version, in primary-key order (the row key's text order; several key columns are joined with \`/\`), \`pageSize\` per page (default 100); continue with \`nextPageToken\`. Every committed version stays readable. ${viewDoc}`,
      tags: ["datasets"],
      auth: "bearer",
      params: IdVersion,
      query: Page(1000, 100),
      responses: { 200: { description: "A page of rows", schema: DatasetRowsPageSchema }, 404: { description: "`not_found`: no such dataset, or no committed version of that number (open and aborted versions have no rows to read)" } },
      handler: ({ principal, params, query }) => datasets.rows(allowed(principal, params.id, can.viewDataset).id, params.version, { pageSize: query.pageSize ?? 100, nextPageToken: query.nextPageToken }),
    });

    routes.add({
      method: "POST",
      path: "/api/datasets/:id/transactions",
      summary: "Open a transaction",
      description: `Opens the next version (its number is the highest so far + 1; an aborted number is not reused): \`snapshot\` (the version's content is exactly the rows written to it) or \`append\` (rows added, replacing rows of the same key). At most one transaction per dataset is open; one that receives no rows for \`SVC_DATASET_TRANSACTION_IDLE_MS\` (1 h) is aborted. Write rows with \`POST …/transactions/{version}/rows\`, then commit or abort. ${editDoc}`,
      tags: ["datasets"],
      auth: "bearer",
      params: Id,
      body: v.union(
        [v.strictObject({ transaction: TransactionTypeSchema }), v.strictObject({ type: v.pipe(TransactionTypeSchema, v.description("The older name of `transaction`, still taken; deprecated"), routes.schemas.deprecated({ since: "2026-11-29", use: "transaction" })) })],
        "give transaction: snapshot or append (type is its older name; not both)",
      ),
      responses: { 201: { description: "The open version", schema: DatasetVersionSchema }, 404: notFound, 409: { description: "`conflict`: a transaction is open (`details.openVersion` names it, `details.expiresAt` from when it may be aborted as idle; one idle past `SVC_DATASET_TRANSACTION_IDLE_MS` is aborted instead and this request goes on)" } },
      handler: async ({ principal, params, body }) => created(await datasets.open(allowed(principal, params.id, can.editDataset).id, "transaction" in body ? body.transaction : body.type, { kind: "http" }, actorOf(principal!))),
    });
    routes.add({
      method: "POST",
      path: "/api/datasets/:id/transactions/:version/rows",
      summary: "Write rows to an open transaction",
      description: `\`{ rows: [...] }\` (at most 1 MiB of JSON), or \`{ file: { id }, format? }\`: a file you uploaded (\`POST /api/files\` or an upload session) in CSV (header row = column names; cells converted to the column types; an empty cell is absent) or JSON Lines (one object per line). Every row is validated before anything is stored; a primary key may appear once per transaction (across calls too). May be called several times before the commit. ${editDoc}`,
      tags: ["datasets"],
      auth: "bearer",
      params: IdVersion,
      body: RowsBodySchema,
      responses: { 200: { description: "The open version with its row count", schema: DatasetVersionSchema }, 400: rowsRefused, ...fileProblems, 404: { description: "`not_found`: no such dataset, version or file" }, 409: notOpen },
      handler: async ({ principal, params, body }) => {
        const id = allowed(principal, params.id, can.editDataset).id;
        if ("rows" in body) return datasets.writeRows(id, params.version, datasets.checkRows(id, body.rows));
        return datasets.writeRows(id, params.version, await datasets.rowsFromFile(id, body.file.id, body.format, principal!.id), body.file.id);
      },
    });
    routes.add({
      method: "POST",
      path: "/api/datasets/:id/transactions/:version/commit",
      summary: "Commit a transaction",
      description: `Applies the version's rows in one transaction (a snapshot also removes the rows whose key it does not have; identical rows are not rewritten), sets its counts and appends \`dataset.version.committed\` (actor = you). A dataset with a projection then projects the difference into its objects. Committing a committed version again (a retry whose answer was lost) answers it as it is, writing nothing; an aborted one is 409. ${editDoc}`,
      tags: ["datasets"],
      auth: "bearer",
      params: IdVersion,
      responses: { 200: { description: "The committed version", schema: DatasetVersionSchema }, 404: versionNotFound, 409: { description: "`conflict`: the version was aborted" } },
      handler: ({ principal, params }) => datasets.commit(allowed(principal, params.id, can.editDataset).id, params.version, actorOf(principal!)),
    });
    routes.add({
      method: "POST",
      path: "/api/datasets/:id/transactions/:version/abort",
      summary: "Abort a transaction",
      description: `Drops the rows written to it; the version is \`aborted\` and its number is not reused. An aborted version (by a request, or idle) answers as it is; a committed one is 409. ${editDoc}`,
      tags: ["datasets"],
      auth: "bearer",
      params: IdVersion,
      responses: { 200: { description: "The aborted version", schema: DatasetVersionSchema }, 404: versionNotFound, 409: { description: "`conflict`: the version was committed" } },
      handler: ({ principal, params }) => datasets.abort(allowed(principal, params.id, can.editDataset).id, params.version),
    });
    routes.add({
      method: "POST",
      path: "/api/datasets/:id/versions",
      summary: "Commit a version in one request",
      description: `Opens, writes and commits one version at once (one SQLite transaction): \`{ transaction, rows }\` or \`{ transaction, file: { id }, format? }\` (see \`POST …/transactions/{version}/rows\`). ${editDoc}`,
      tags: ["datasets"],
      auth: "bearer",
      params: Id,
      body: VersionBodySchema,
      responses: { 201: { description: "The committed version", schema: DatasetVersionSchema }, 400: rowsRefused, ...fileProblems, 404: { description: "`not_found`: no such dataset or file" }, 409: { description: "`conflict`: a transaction is open (`details.openVersion` names it, `details.expiresAt` from when it may be aborted as idle; one idle past `SVC_DATASET_TRANSACTION_IDLE_MS` is aborted instead and this request goes on)" } },
      handler: async ({ principal, params, body }) => {
        const id = allowed(principal, params.id, can.editDataset).id;
        const rows = "rows" in body ? datasets.checkRows(id, body.rows) : await datasets.rowsFromFile(id, body.file.id, body.format, principal!.id);
        const source = "rows" in body ? { kind: "http" } : { kind: "upload", fileId: body.file.id };
        return created(await datasets.commitVersion(id, { transaction: body.transaction, rows, source, actor: actorOf(principal!) }));
      },
    });
  },
});
