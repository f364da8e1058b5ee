// Validation at the edge: a route's zod body and querystring (declared once with doc()) are enforced by Fastify's
// validator compiler before any hook or handler runs, the handler receives the parsed values, and nothing parses
// them a second time.
import Fastify, { type FastifyInstance } from "fastify";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { z } from "zod";
import { installErrorHandlers } from "../../routes/errors.js";
import { doc, registerOpenApi, validInput } from "../../routes/openapi.js";
import { RunCreateSchema } from "../../src/runtime/runs/run-request.js";
import { postJson, startHarness, type Harness } from "../support/harness.js";

let app: FastifyInstance;
const seen: unknown[] = [];
let preHandlerCalls = 0;
const Body = z.strictObject({ n: z.coerce.number().int().default(5), tags: z.array(z.string()).default([]) });
const Query = z.looseObject({ mode: z.enum(["a", "b"]).default("a") });
const Undeclared = z.looseObject({ page: z.coerce.number().int().min(1).default(1) });

beforeAll(async () => {
  app = Fastify();
  installErrorHandlers(app);
  await registerOpenApi(app);
  app.post("/probe", { preHandler: async () => void preHandlerCalls++, schema: doc("probe", "probe", { body: Body, querystring: Query }) }, async (request) => {
    seen.push({ body: validInput(Body, request.body), query: validInput(Query, request.query, "query") });
    return { ok: true };
  });
  // A querystring the route does not declare: validInput is its only parse.
  app.get("/undeclared", { schema: doc("probe", "undeclared") }, async (request) => validInput(Undeclared, request.query, "query"));
  await app.ready();
});
afterAll(() => app.close());
afterEach(() => vi.restoreAllMocks());

describe("zod validation at the edge", () => {
  it("hands the handler parsed values: defaults applied, coercions done", async () => {
    const res = await app.inject({ method: "POST", url: "/probe", payload: { n: "7" } });
    expect(res.statusCode).toBe(200);
    expect(seen.at(-1)).toEqual({ body: { n: 7, tags: [] }, query: { mode: "a" } });
  });

  it("answers 422 naming the field before any hook or handler runs", async () => {
    const before = { seen: seen.length, hooks: preHandlerCalls };
    const bad = await app.inject({ method: "POST", url: "/probe?mode=c", payload: { n: "1" } });
    expect(bad.statusCode).toBe(422);
    const locs = (bad.json().detail as { loc: unknown[] }[]).map((d) => d.loc);
    expect(locs).toContainEqual(["query", "mode"]);
    const body = await app.inject({ method: "POST", url: "/probe", payload: { n: "x", extra: 1 } });
    expect((body.json().detail as { type: string; loc: unknown[] }[]).map((d) => [d.type, d.loc])).toEqual(
      expect.arrayContaining([["extra_forbidden", ["body", "extra"]], [expect.any(String), ["body", "n"]]]),
    );
    expect({ seen: seen.length, hooks: preHandlerCalls }).toEqual(before);
  });

  it("parses each declared part once: the handler's validInput hands back the compiler's value", async () => {
    const bodyParses = vi.spyOn(Body, "safeParse");
    const queryParses = vi.spyOn(Query, "safeParse");
    const res = await app.inject({ method: "POST", url: "/probe?mode=b", payload: { n: "3" } });
    expect(res.statusCode).toBe(200);
    expect(seen.at(-1)).toEqual({ body: { n: 3, tags: [] }, query: { mode: "b" } });
    expect([bodyParses.mock.calls.length, queryParses.mock.calls.length]).toEqual([1, 1]);
  });

  it("parses a part the route does not declare, with the same 422 detail", async () => {
    const ok = await app.inject({ method: "GET", url: "/undeclared?page=4" });
    expect(ok.json()).toEqual({ page: 4 });
    const bad = await app.inject({ method: "GET", url: "/undeclared?page=0" });
    expect(bad.statusCode).toBe(422);
    expect((bad.json().detail as { loc: unknown[] }[]).map((d) => d.loc)).toEqual([["query", "page"]]);
  });
});

describe("on the real routes", () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness("models:\n  - name: s\n    use: deerflow-gateway:ScriptedChatModel\n    model: s\n");
  });
  afterAll(() => h.close());

  it("validates a run body before the thread guard: the same 422 for a missing thread as for an existing one", async () => {
    await postJson(`${h.url}/threads`, { thread_id: "edge-t" });
    const existing = await postJson(`${h.url}/threads/edge-t/runs`, { bogus: 1 });
    const missing = await postJson(`${h.url}/threads/no-such-thread/runs`, { bogus: 1 });
    expect(existing.status).toBe(422);
    expect(missing.status).toBe(422);
    expect(await existing.json()).toEqual(await missing.json());
  });

  it("parses a run body once (the route's validator), not again in the run service", async () => {
    await postJson(`${h.url}/threads`, { thread_id: "edge-once" });
    const parses = vi.spyOn(RunCreateSchema, "safeParse");
    const res = await postJson(`${h.url}/threads/edge-once/runs/wait`, { input: { messages: [{ role: "user", content: "hi" }] } });
    expect(res.status).toBe(200);
    expect(parses).toHaveBeenCalledTimes(1);
  });

  it("only cancels on POST .../stream when action is given", async () => {
    await postJson(`${h.url}/threads`, { thread_id: "edge-join" });
    const created = await postJson(`${h.url}/threads/edge-join/runs/wait`, { input: { messages: [{ role: "user", content: "hi" }] } });
    expect(created.status).toBe(200);
    const runs = await (await fetch(`${h.url}/threads/edge-join/runs`)).json();
    const res = await fetch(`${h.url}/threads/edge-join/runs/${runs[0].run_id}/stream`, { method: "POST" });
    expect(res.status).toBe(200);
    expect(await res.text()).toContain("event: end");
    expect((await (await fetch(`${h.url}/threads/edge-join/runs/${runs[0].run_id}`)).json()).status).toBe("success");
  });
});

describe("metadata keys", () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness("models:\n  - name: s\n    use: deerflow-gateway:ScriptedChatModel\n    model: s\n");
  });
  afterAll(() => h.close());

  it("refuses a control character in a metadata key with 422 (a NUL broke the SQLite JSON path: 500)", async () => {
    for (const route of ["/threads/search", "/threads"]) {
      const res = await postJson(`${h.url}${route}`, { metadata: { "a\u0000": "x" } });
      expect(res.status, route).toBe(422);
    }
    expect((await postJson(`${h.url}/threads/search`, { metadata: { 'a"b.c$[0]': "x" } })).status).toBe(200);
  });
});
