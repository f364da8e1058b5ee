import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startHarness, type Harness } from "../support/harness.js";

let h: Harness;
beforeAll(async () => {
  h = await startHarness("models:\n  - name: s\n    use: deerflow-gateway:ScriptedChatModel\n    model: s\n");
});
afterAll(async () => h.close());

describe("GET /docs", () => {
  it("describes every route in OpenAPI 3, with request bodies generated from the zod schemas", async () => {
    const spec = await (await fetch(`${h.url}/docs`)).json();
    expect(spec.openapi).toMatch(/^3\./);
    const paths = Object.keys(spec.paths);
    for (const p of [
      "/threads", "/threads/search", "/threads/{thread_id}", "/threads/{thread_id}/state", "/threads/{thread_id}/history",
      "/threads/{thread_id}/runs", "/threads/{thread_id}/runs/stream", "/threads/{thread_id}/runs/wait", "/threads/{thread_id}/runs/{run_id}",
      "/threads/{thread_id}/runs/{run_id}/cancel", "/threads/{thread_id}/runs/{run_id}/join", "/threads/{thread_id}/runs/{run_id}/stream",
      "/runs/stream", "/runs/wait", "/assistants/search", "/assistants/{assistant_id}", "/api/threads", "/api/runs/stream",
      "/api/models", "/api/agents", "/api/agents/{name}", "/health",
    ]) expect(paths, p).toContain(p);
    const body = spec.paths["/runs/stream"].post.requestBody.content["application/json"].schema;
    expect(body.properties.stream_mode).toBeDefined();
    expect(body.properties.multitask_strategy.anyOf ?? body.properties.multitask_strategy.enum).toBeDefined();
  });

  it("leaves validation to the handlers: a bad body still gets the gateway's 422 detail list", async () => {
    const res = await fetch(`${h.url}/runs/stream`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ stream_mode: 5 }) });
    expect(res.status).toBe(422);
    expect((await res.json()).detail[0].loc).toEqual(["body", "stream_mode"]);
  });
});
