// Over HTTP: the offline scripted model calls web_search, image_search and web_fetch configured with DeerFlow's
// third-party `use:` paths (Serper, Brave, Crawl4AI) pointed at local fakes; the tool results reach the thread,
// and a provider failure is a tool result the run survives.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { HttpFake } from "../support/fakes/http-fake.js";
import { startBraveFake } from "../support/fakes/brave.js";
import { startCrawl4aiFake } from "../support/fakes/crawl4ai.js";
import { startSerperFake } from "../support/fakes/serper.js";
import { postJson, startHarness, type Harness } from "../support/harness.js";

const KEY = "sk-test-4f9a0c";
let h: Harness;
let serper: HttpFake;
let brave: HttpFake;
let crawl4ai: HttpFake;

beforeAll(async () => {
  [serper, brave, crawl4ai] = await Promise.all([startSerperFake(KEY), startBraveFake(KEY), startCrawl4aiFake(KEY)]);
  h = await startHarness(`models:
  - name: s
    use: deerflow-gateway:ScriptedChatModel
    model: s
tools:
  - name: web_search
    group: web
    use: deerflow.community.serper.tools:web_search_tool
    base_url: ${serper.url}
    api_key: ${KEY}
    max_results: 3
  - name: image_search
    group: web
    use: deerflow.community.brave.tools:image_search_tool
    base_url: ${brave.url}
    api_key: ${KEY}
  - name: web_fetch
    group: web
    use: deerflow.community.crawl4ai.tools:web_fetch_tool
    base_url: ${crawl4ai.url}
    token: ${KEY}
    allow_private_addresses: true
`);
});
afterAll(async () => {
  await h?.close();
  await Promise.all([serper, brave, crawl4ai].map((f) => f?.close()));
});

/** Runs `!call <tool> <args>` on a new thread and returns the tool message the thread ends up with. */
async function callTool(thread: string, tool: string, args: unknown): Promise<{ name: string; content: string }> {
  await postJson(`${h.url}/threads`, { thread_id: thread });
  const res = await postJson(`${h.url}/threads/${thread}/runs/wait`, { input: { messages: [{ role: "user", content: `!call ${tool} ${JSON.stringify(args)}` }] } });
  expect(res.status).toBe(200);
  const state = await (await fetch(`${h.url}/threads/${thread}/state`)).json();
  const msg = state.values.messages.find((m: { type: string }) => m.type === "tool");
  expect(msg, "a tool message in the thread").toBeDefined();
  return msg;
}

describe("third-party providers over HTTP with the scripted model", () => {
  it("web_search via Serper: the JSON array the web app renders, max_results from the entry", async () => {
    serper.mode = "ok";
    const msg = await callTool("serper-ok", "web_search", { query: "red deer habitat", max_results: 9 });
    expect(msg.name).toBe("web_search");
    const hits = JSON.parse(msg.content);
    expect(hits).toEqual([1, 2, 3].map((i) => ({ title: `Serper ${i}: red deer habitat`, url: `https://serper.example/${i}`, snippet: `snippet ${i}` })));
    expect(serper.requests.at(-1)!.body).toEqual({ q: "red deer habitat", num: 3 });
  });

  it("image_search via Brave: {results: [{title, image_url, thumbnail_url, source_url}]}", async () => {
    const msg = await callTool("brave-img", "image_search", { query: "red deer", max_results: 2 });
    const body = JSON.parse(msg.content);
    expect(body.results).toHaveLength(2);
    expect(body.results[0]).toMatchObject({ title: "Brave image 1", image_url: "https://brave.example/full/1.jpg", thumbnail_url: "https://imgs.brave.example/thumb/1.jpg", source_url: "https://brave.example/page/1" });
  });

  it("web_fetch via Crawl4AI: the page's Markdown in the thread", async () => {
    const msg = await callTool("c4a", "web_fetch", { url: "http://127.0.0.1:9/article" });
    expect(msg.content).toContain("Body of http://127.0.0.1:9/article (fit)");
    expect(crawl4ai.requests.at(-1)!.headers.authorization).toBe(`Bearer ${KEY}`);
  });

  it("a rate-limited provider is an Error tool result naming it, and the run succeeds", async () => {
    serper.mode = "429";
    try {
      const msg = await callTool("serper-429", "web_search", { query: "rate limited please" });
      expect(msg.content).toBe("Error: serper: HTTP 429 (rate limited or out of credits; try again later)");
      expect(msg.content).not.toContain(KEY);
      const runs = await (await fetch(`${h.url}/threads/serper-429/runs`)).json();
      expect(runs[0].status).toBe("success");
    } finally {
      serper.mode = "ok";
    }
  });
});
