/** Status, project information and the OpenAPI reference (spec 1, 4.1), in-process and over HTTP. */
import { expect, it } from "vitest";
import { DEV_TOKEN, client, describeMatrix, sandboxSuite } from "./helpers";

const suite = sandboxSuite();

describeMatrix("status, project, docs", (transport) => {
  const dev = client(() => suite.app, DEV_TOKEN, transport);

  it("reports health with its parts", async () => {
    const res = await dev.get("/api/status");
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: "ok", parts: { store: { status: "ok" }, temporal: { status: "ok", embedded: false }, outbox: { status: "ok", backlog: expect.any(Number) } } });
  });

  it("describes the project", async () => {
    const res = await dev.get("/api/project");
    expect(res.body).toMatchObject({ id: "sandbox", name: "Sandbox billing" });
    expect(res.body.objectTypes.map((t: any) => t.id)).toEqual(["customer", "invoice", "product"]);
    expect(res.body.actions.map((a: any) => a.id)).toEqual(expect.arrayContaining(["invoice.approve", "diagnostics.sleep", "diagnostics.fail"]));
    expect(res.body.workflows).toEqual([{ id: "invoice-review", title: "Review an invoice" }]);
    expect(res.body.linkTypes).toEqual([{ id: "billedTo", source: "invoice", target: "customer" }]);
    const billing = res.body.connectors.find((c: any) => c.id === "billing");
    expect(billing).toMatchObject({ actions: ["invoice.attach-pdf", "invoice.approve"], webhooks: [], syncs: ["price-list-sync", "customer-sync"], pipelines: ["monthly-statement"], agents: ["assistant"], rules: ["invoice-overdue"], datasets: ["price-list"] });
    expect(billing.schedules).toContain("overdue-scan");
    expect(res.body.rules).toEqual([
      { id: "invoice-overdue", connectorId: "billing", title: "Invoice overdue", description: expect.stringContaining("overdue scan"), objectTypeId: "invoice", where: { status: "overdue" } },
    ]);
  });

  it("serves the OpenAPI reference without a CDN, covering every route and marking bearer auth", async () => {
    const page = await client(suite.app, null, transport).get("/docs");
    expect(page.status).toBe(200);
    expect(page.text).not.toMatch(/https?:\/\//);
    // no other site may frame it (clickjacking), nor the live viewer with its buttons
    for (const framed of [page, await client(suite.app, null, transport).get("/viewer")]) {
      expect([framed.headers.get("content-security-policy"), framed.headers.get("x-frame-options")]).toEqual(["frame-ancestors 'self'", "SAMEORIGIN"]);
    }
    const asset = await fetch(`${suite.app.url}/docs/assets/swagger-ui-bundle.js`);
    expect(asset.status).toBe(200);
    const doc = (await client(suite.app, null, transport).get("/docs/openapi.json")).body;
    expect(doc.openapi).toBe("3.1.0");
    // generated clients see every envelope field of an event, the catalog's types, and the stable error codes
    // the domain types are named once (components.schemas) and referenced where operations use them
    expect(doc.paths["/api/events"].get.responses["200"].content["application/json"].schema.properties.events.items).toEqual({ $ref: "#/components/schemas/Event" });
    const event = doc.components.schemas.Event;
    expect(doc.paths["/api/artifacts/{artifactId}/versions"].get.responses["200"].content["application/json"].schema.properties.data.items).toEqual({ $ref: "#/components/schemas/ArtifactVersion" });
    expect(doc.paths["/api/artifacts/{artifactId}/versions/{version}"].get.responses["200"].content["application/json"].schema).toEqual({ $ref: "#/components/schemas/ArtifactVersion" });
    expect(doc.components.schemas.ArtifactVersion.properties.warnings.type).toBe("array");
    const text = JSON.stringify(doc);
    expect(text).not.toContain('"$defs"');
    for (const [, name] of text.matchAll(/"#\/components\/schemas\/([^"]+)"/g)) expect(doc.components.schemas, `$ref ${name}`).toHaveProperty(name!);
    for (const field of ["correlationId", "causationId", "idempotencyKey", "actor", "metadata", "origin", "commitId", "commitOrdinal", "cursor"]) expect(event.properties, field).toHaveProperty(field);
    expect(event.properties.type.enum).toContain("workflow.intervention.submitted");
    expect(doc.components.schemas.Error.properties.error.properties.code.enum).toEqual(expect.arrayContaining(["invalid_request", "cursor_expired", "too_many_requests"]));
    for (const [path, method] of [["/api/status", "get"], ["/api/project", "get"], ["/api/objects", "get"], ["/api/objects/query", "post"], ["/api/actions/{actionId}", "post"], ["/api/events", "get"], ["/api/workflows/{id}/runs", "post"], ["/api/workflow-runs/{runId}", "get"]] as const) {
      expect(doc.paths[path]?.[method], `${method} ${path}`).toBeDefined();
      expect(doc.paths[path][method]["x-svc-bearer-auth"]).toBe(true);
      expect(doc.paths[path][method].security).toContainEqual({ bearerAuth: [] });
    }
    expect(doc.paths["/api/objects/query"].post.requestBody.content["application/json"].schema.properties.objectTypeId.type).toBe("string");
    expect(doc.paths["/docs"].get["x-svc-bearer-auth"]).toBe(false);
    // a documented response header (ResponseDoc.headers)
    expect(doc.paths["/api/events"].get.responses["200"].headers.Link).toMatchObject({ schema: { type: "string" }, description: expect.stringContaining('rel="next"') });
  });

  it("answers unknown routes with a structured 404", async () => {
    const res = await dev.get("/api/nothing-here");
    expect(res).toMatchObject({ status: 404, body: { error: { code: "not_found" } } });
  });
});
