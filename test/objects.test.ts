/** Objects and object queries (spec 4.1, 4.3), in-process and over HTTP. */
import { expect, it } from "vitest";
import { DEV_TOKEN, client, describeMatrix, sandboxSuite } from "./helpers";

const suite = sandboxSuite();

describeMatrix("objects and queries", (transport) => {
  const dev = client(() => suite.app, DEV_TOKEN, transport);

  it("says a missing required query parameter is required, naming it", async () => {
    const res = await dev.get("/api/objects?pageSize=2");
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ code: "invalid_request", message: "Invalid query: query.objectTypeId is required", details: { issues: [{ path: "query.objectTypeId", message: "is required" }] } });
  });

  it("lists objects of a type page by page without gaps or repeats", async () => {
    const ids: string[] = [];
    let token: string | undefined;
    do {
      const res = await dev.get(`/api/objects?objectTypeId=invoice&pageSize=4${token ? `&nextPageToken=${token}` : ""}`);
      expect(res.status).toBe(200);
      ids.push(...res.body.data.map((o: any) => o.primaryId));
      token = res.body.nextPageToken;
    } while (token);
    expect(ids).toEqual(["inv_1001", "inv_1002", "inv_1003", "inv_1004", "inv_1005", "inv_1006"]);
  });

  it("filters, sorts and pages a query with keyset tokens", async () => {
    const seen: any[] = [];
    let nextPageToken: string | undefined;
    do {
      const res = await dev.post("/api/objects/query", { objectTypeId: "invoice", where: { status: { ne: "void" } }, orderBy: { property: "amount", direction: "desc" }, pageSize: 2, nextPageToken });
      expect(res.status).toBe(200);
      expect(res.body.data.length).toBeLessThanOrEqual(2);
      seen.push(...res.body.data);
      nextPageToken = res.body.nextPageToken;
    } while (nextPageToken);
    const amounts = seen.map((o) => o.properties.amount);
    expect(amounts).toEqual([...amounts].sort((a, b) => b - a));
    expect(seen.map((o) => o.primaryId).sort()).toEqual(["inv_1001", "inv_1002", "inv_1003", "inv_1004", "inv_1006"]);
    const contains = await dev.post("/api/objects/query", { objectTypeId: "customer", where: { name: { contains: "acme" } } });
    expect(contains.body.data.map((o: any) => o.primaryId)).toEqual(["cus_acme"]);
  });

  it("refuses unknown properties, operators and foreign page tokens with 400", async () => {
    expect((await dev.post("/api/objects/query", { objectTypeId: "invoice", where: { colour: "red" } })).body.error.code).toBe("invalid_request");
    const operator = await dev.post("/api/objects/query", { objectTypeId: "invoice", where: { amount: { near: 3 } } });
    expect(operator.status).toBe(400);
    expect(operator.body.error.message).toMatch(/unknown operator "near" \(use eq, ne, gt, gte, lt, lte, in, contains, exists\)/);
    expect(operator.body.error.details.issues[0].path).toMatch(/where/);
    const shape = await dev.post("/api/objects/query", { objectTypeId: "invoice", where: { amount: { gt: [1] } } });
    expect(shape.body.error.message).toMatch(/an object of operators/);
    const unknown = await dev.post("/api/objects/query", { objectTypeId: "invoice", where: { colour: "red" } });
    expect(unknown.body.error.message).toMatch(/"colour" is not a property of invoice \(primaryId, .*amount/);
    const first = await dev.post("/api/objects/query", { objectTypeId: "invoice", pageSize: 1 });
    const other = await dev.post("/api/objects/query", { objectTypeId: "invoice", pageSize: 1, orderBy: { property: "amount" }, nextPageToken: first.body.nextPageToken });
    expect(other.body.error).toMatchObject({ code: "invalid_request", message: expect.stringMatching(/another query/) });
    expect((await dev.post("/api/objects/query", { objectTypeId: "ship" })).status).toBe(404);
  });

  it("refuses a condition whose value is not of its property's type, and one without an operator, with 400", async () => {
    // before: a number compared with text held for every row (SQLite sorts numbers below text), `{}` for every row
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ amount: { lt: "2000" } }, /where\.amount a condition on amount \(a number property\) is a number or null \(equality\) or an object of operators/],
      [{ amount: "1200" }, /a condition on amount \(a number property\)/],
      [{ status: 3 }, /a condition on status \(a string property\) is a string or null/],
      [{ status: {} }, /where\.status names no operator: give a value \(equality\) or at least one of eq, ne/],
      [{ amount: { contains: "1" } }, /contains applies to text properties; amount is a number property/],
      [{ status: { in: ["open", null] } }, /a condition on status/],
      [{ primaryId: 1001 }, /a condition on primaryId \(the object's id, a string\)/],
    ];
    for (const [where, message] of cases) {
      const res = await dev.post("/api/objects/query", { objectTypeId: "invoice", where });
      expect(res.status, JSON.stringify(where)).toBe(400);
      expect(res.body.error.message, JSON.stringify(where)).toMatch(message);
    }
    // the typed forms select what they say
    const below = await dev.post("/api/objects/query", { objectTypeId: "invoice", where: { amount: { lt: 2000 } }, pageSize: 500 });
    expect(below.status).toBe(200);
    expect(below.body.data.length).toBeGreaterThan(0);
    expect(below.body.data.every((o: any) => o.properties.amount < 2000)).toBe(true);
  });

  it("knows no object type, link type or telemetry named like an Object.prototype member (404 and 400, never 403 or 500)", async () => {
    for (const name of ["constructor", "toString", "__proto__"]) {
      expect((await dev.get(`/api/objects?objectTypeId=${name}`)).status, name).toBe(404);
      expect((await dev.get(`/api/objects/${name}/x`)).status, name).toBe(404);
      expect((await dev.post("/api/objects/query", { objectTypeId: name, where: { a: 1 } })).status, name).toBe(404);
      expect((await dev.get(`/api/objects/${name}/x/files/content?path=/properties/a`)).status, name).toBe(404);
      const writes = await dev.post("/api/ontology/writes", {
        changes: [
          { op: "object.create", objectTypeId: name, primaryId: "x", properties: {} },
          { op: "link.upsert", linkId: name, sourceTypeId: "invoice", sourceId: "inv_1001", targetTypeId: "customer", targetId: "cus_acme" },
          { op: "telemetry.append", objectTypeId: "invoice", objectId: "inv_1001", propertyId: name, value: 1 },
        ],
      });
      expect(writes.status, name).toBe(400);
      expect(writes.body.error.message, name).toContain(`"${name}"`);
    }
  });

  it("reads an object whose primary id holds `/`, `%` or a space at its percent-encoded id", async () => {
    // composite dataset keys look like this: rowKey(["a/b", "c"]) = "a%2Fb/c"
    const ids = [`k/${transport}/a%2Fb/c`, `k-${transport}-50%`, `k-${transport} spaced`, `k-${transport}-%41`];
    const write = await dev.post("/api/ontology/writes", { changes: ids.map((primaryId) => ({ op: "object.create", objectTypeId: "customer", primaryId, properties: { name: primaryId } })) });
    expect(write.status).toBe(200);
    for (const id of ids) {
      const res = await dev.get(`/api/objects/customer/${encodeURIComponent(id)}`);
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ objectTypeId: "customer", primaryId: id, properties: { name: id } });
    }
    // the id is decoded once: the encoded text of an id is another id
    expect((await dev.get(`/api/objects/customer/${encodeURIComponent(encodeURIComponent(ids[0]!))}`)).status).toBe(404);
    expect((await dev.get(`/api/objects/customer/${encodeURIComponent(`k/${transport}/a`)}`)).status).toBe(404);
  });

  it("says what is wrong with a path whose percent-escapes do not decode (h3 refuses it before routing as a bare Bad Request)", async () => {
    for (const path of ["/api/objects/customer/%zz", "/api/objects/customer/%E0%A4%A", "/api/objects/customer/50%"]) {
      const res = await dev.get(path);
      expect([path, res.status, res.body.error]).toEqual([path, 400, { code: "invalid_request", message: expect.stringContaining(`has a malformed percent-escape: each % must start %XX`) }]);
    }
  });
});
