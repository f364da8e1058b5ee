import { Validator } from "@seriousme/openapi-schema-validator";
import Fastify, { type FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { registerOpenApi } from "../../routes/openapi.js";
import { startHarness, type Harness } from "../support/harness.js";

let h: Harness;

beforeAll(async () => {
  h = await startHarness("models:\n  - name: scripted\n    use: deerflow-gateway:ScriptedChatModel\n    model: scripted-echo\n");
});
afterAll(async () => h.close());

/** Every (method, path) the app serves, read from Fastify's own route tree (HEAD and the docs' own routes left out). */
function servedRoutes(app: FastifyInstance): { method: string; url: string }[] {
  const out: { method: string; url: string }[] = [];
  const stack: string[] = [];
  for (const line of app.printRoutes({ commonPrefix: false }).split("\n")) {
    const m = /^((?:│   |    )*)(?:├── |└── )(.+?)(?: \(([A-Z, ]+)\))?$/.exec(line);
    if (!m) continue;
    const depth = m[1].length / 4;
    stack.length = depth;
    stack.push(m[2]);
    const url = stack.join("").replace(/\/\//g, "/");
    for (const method of (m[3] ?? "").split(", ").filter(Boolean)) {
      // HEAD mirrors GET; OPTIONS is the CORS preflight (@fastify/cors), not an API operation.
      if (method === "HEAD" || method === "OPTIONS" || url.startsWith("/docs") || url === "/openapi.json") continue;
      out.push({ method, url });
    }
  }
  return out;
}

/**
 * The documented OpenAPI path of a served route: `:name` -> `{name}`, a trailing `*` -> `{path}` (the route tree
 * prints a wildcard without the static segment before it, so `*` matches any documented path ending in `{path}`).
 */
function openApiPath(url: string, paths: string[]): string | undefined {
  const exact = url.replace(/:(\w+)/g, "{$1}");
  if (!exact.endsWith("*")) return paths.includes(exact) ? exact : undefined;
  const prefix = exact.slice(0, -1);
  return paths.find((p) => p.startsWith(prefix) && p.endsWith("/{path}"));
}

/** Body-less POSTs: they act on the path (and query) alone. */
const NO_BODY = new Set([
  "POST /threads/{thread_id}/runs/{run_id}/cancel", "POST /threads/{thread_id}/runs/{run_id}/stream", "POST /api/v1/auth/logout",
  "POST /api/mcp/cache/reset", "POST /threads/{thread_id}/mcp-tasks/{task_id}/cancel", "POST /api/memory/reload", "POST /api/skills/reload",
  "POST /api/scheduled-tasks/{task_id}/pause", "POST /api/scheduled-tasks/{task_id}/resume", "POST /api/scheduled-tasks/{task_id}/trigger",
]);
/** Features the gateway does not offer answer "not offered" without reading a body. */
const NOT_OFFERED = /^\/api\/(channels|integrations\/lark|threads\/\{thread_id\}\/browser)\b/;

describe("the OpenAPI document", () => {
  it("is a valid OpenAPI 3.1 document according to an independent validator", async () => {
    const res = await fetch(`${h.url}/openapi.json`);
    expect(res.status).toBe(200);
    const doc = await res.json();
    expect(doc.openapi).toBe("3.1.0");
    const result = await new Validator().validate(doc);
    expect(result.errors).toBeUndefined();
    expect(result.valid).toBe(true);
  });

  it("describes every route the app serves, with responses, errors, request bodies and unique operation ids", async () => {
    const doc = await (await fetch(`${h.url}/openapi.json`)).json();
    const routes = servedRoutes(h.app);
    expect(routes.length).toBeGreaterThan(60);
    const ids = new Set<string>();
    const missingBodies: string[] = [];
    for (const { method, url } of routes) {
      const path = openApiPath(url, Object.keys(doc.paths));
      expect(path, `${method} ${url} has a documented path`).toBeDefined();
      const op = doc.paths[path!]?.[method.toLowerCase()];
      expect(op, `${method} ${url} is documented`).toBeDefined();
      ids.add(op.operationId);
      const success = Object.entries(op.responses).filter(([code]) => /^2/.test(code));
      expect(success.length, `${method} ${url} has a success response`).toBeGreaterThan(0);
      for (const [code, response] of success as [string, any][]) {
        if (code !== "204" && code !== "202") expect(response.content, `${method} ${url} ${code} has a body schema`).toBeDefined();
      }
      expect(op.responses["4XX"].content["application/json"].schema.properties.detail).toBeDefined();
      const bare = path!.replace(/^\/api(?=\/threads|\/runs|\/assistants)/, "");
      if (["POST", "PUT", "PATCH"].includes(method) && !NO_BODY.has(`${method} ${bare}`) && !NOT_OFFERED.test(path!) && !op.requestBody) missingBodies.push(`${method} ${url}`);
      for (const p of path!.matchAll(/\{(\w+)\}/g)) expect(op.parameters.some((x: any) => x.in === "path" && x.name === p[1]), `${method} ${url} declares {${p[1]}}`).toBe(true);
    }
    expect(missingBodies, "POST/PUT/PATCH routes without a request body schema").toEqual([]);
    expect(ids.size).toBe(routes.length);
    expect(Object.keys(doc.paths).some((p) => p.includes("*"))).toBe(false);
  });

  it("documents the run body and the thread response from the handlers' own schemas", async () => {
    const doc = await (await fetch(`${h.url}/openapi.json`)).json();
    const stream = doc.paths["/threads/{thread_id}/runs/stream"].post;
    expect(Object.keys(stream.requestBody.content["application/json"].schema.properties)).toEqual(expect.arrayContaining(["assistant_id", "input", "stream_mode", "context"]));
    expect(stream.responses["200"].content["text/event-stream"]).toBeDefined();
    const thread = doc.paths["/threads/{thread_id}"].get.responses["200"].content["application/json"].schema;
    expect(thread.required).toEqual(expect.arrayContaining(["thread_id", "status", "metadata"]));
  });

  it("validates a bad body at the edge with the gateway's 422 detail list", async () => {
    const res = await fetch(`${h.url}/runs/stream`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ stream_mode: 5 }) });
    expect(res.status).toBe(422);
    expect((await res.json()).detail[0].loc).toEqual(["body", "stream_mode"]);
  });

  it("is browsable at /docs", async () => {
    const res = await fetch(`${h.url}/docs`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toContain("text/html");
    expect(await res.text()).toMatch(/swagger-ui/i);
  });

  it("picks up a route added later, with no extra work, and stays valid", async () => {
    const app = Fastify();
    await registerOpenApi(app as never);
    app.get("/brand/new/:thing_id", async () => ({ ok: true }));
    app.post("/brand/new", { schema: { body: { type: "object", properties: { name: { type: "string" } } } } }, async () => ({}));
    await app.ready();
    const doc = app.swagger() as any;
    expect(doc.paths["/brand/new/{thing_id}"].get.responses["200"].content["application/json"]).toBeDefined();
    expect(doc.paths["/brand/new"].post.requestBody).toBeDefined();
    expect((await new Validator().validate(doc)).valid).toBe(true);
    await app.close();
  });
});
