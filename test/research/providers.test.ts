// Issue 44: DuckDuckGo web and image search and the Jina reader against a local fake of their endpoints (through
// `base_url`), the SSRF guard with default settings, failure as a tool result, the cache and /metrics.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startHarness, type Harness } from "../support/harness.js";
import { startFakeWebServer, type FakeWebServer } from "../support/fakes/web-server.js";
import { callTool, researchConfig } from "./support.js";

let web: FakeWebServer;
let h: Harness;
beforeAll(async () => {
  web = await startFakeWebServer();
  h = await startHarness(
    researchConfig(
      [
        `  - name: web_search\n    group: web\n    use: deerflow.community.ddg_search.tools:web_search_tool\n    base_url: ${web.url}\n    max_results: 3`,
        `  - name: image_search\n    group: web\n    use: deerflow.community.image_search.tools:image_search_tool\n    base_url: ${web.url}`,
        `  - name: web_fetch\n    group: web\n    use: deerflow.community.jina_ai.tools:web_fetch_tool\n    base_url: ${web.url}\n    api_key: jina-secret-key`,
      ].join("\n"),
    ),
  );
});
afterAll(async () => {
  await h.close();
  await web.close();
});

describe("DuckDuckGo web search", () => {
  it("returns the web app's JSON array of {title, url, snippet}, ads skipped, capped by the entry's max_results", async () => {
    const { result } = await callTool(h, "web_search", { query: "deer habitats", max_results: 10 });
    const hits = JSON.parse(result) as { title: string; url: string; snippet: string }[];
    expect(hits).toHaveLength(3);
    expect(hits[0]).toEqual({ title: "Result 1 for deer habitats", url: "https://example.org/1?q=deer habitats", snippet: "Snippet 1 about deer habitats" });
    const sent = web.requests.find((r) => r.path === "/html/" && r.body.includes("deer+habitats"));
    expect(new URLSearchParams(sent!.body).get("kl")).toBe("wt-wt");
  });

  it("says 'No results found' as upstream does, and reports a challenge page as rate limiting", async () => {
    expect(JSON.parse((await callTool(h, "web_search", { query: "nothing" })).result)).toEqual({ error: "No results found", query: "nothing" });
    expect((await callTool(h, "web_search", { query: "blocked" })).result).toMatch(/^Error: duckduckgo: DuckDuckGo answered without a result list/);
  });

  it("refuses a 100 KB query with a clear error, and the run continues", async () => {
    const before = web.requests.length;
    const { result, final } = await callTool(h, "web_search", { query: "q".repeat(100 * 1024) });
    expect(result).toBe("Error: duckduckgo: the query is too long (102400 characters; at most 2000)");
    expect(final).not.toBe(result);
    expect(web.requests.length).toBe(before);
  });
});

describe("DuckDuckGo image search", () => {
  it("returns {results: [{title, image_url, thumbnail_url, source_url}]} with upstream's usage hint", async () => {
    const out = JSON.parse((await callTool(h, "image_search", { query: "red deer", max_results: 2 })).result);
    expect(out.total_results).toBe(2);
    expect(out.results[0]).toEqual({ title: "Image 1", image_url: "https://img.example/1.jpg", thumbnail_url: "https://tn.example/1.jpg", source_url: "https://page.example/1" });
    expect(out.usage_hint).toContain("image_url");
  });
});

describe("Jina reader web_fetch and the SSRF guard", () => {
  it("sends a public URL to the reader with the key and extracts the returned HTML", async () => {
    const { result } = await callTool(h, "web_fetch", { url: "https://93.184.215.14/article" });
    expect(result).toMatch(/^# Jina read https:\/\/93\.184\.215\.14\/article\n\nFetched through the reader/);
    const sent = web.requests.find((r) => r.method === "POST" && r.path === "/" && r.body.includes("93.184.215.14"));
    expect(sent?.headers.authorization).toBe("Bearer jina-secret-key");
    expect(sent?.headers["x-return-format"]).toBe("html");
  });

  const probes: [string, RegExp][] = [
    ["http://127.0.0.1/", /127\.0\.0\.1 is a non-public address \(loopback\)/],
    ["http://2130706433/", /127\.0\.0\.1 is a non-public address \(loopback\)/],
    ["http://0177.0.0.1/", /127\.0\.0\.1 is a non-public address \(loopback\)/],
    ["http://0x7f.0x0.0x0.0x1/", /127\.0\.0\.1 is a non-public address \(loopback\)/],
    ["http://10.1.2.3/", /10\.1\.2\.3 is a non-public address \(private\)/],
    ["http://100.64.0.1/", /\(carrierGradeNat\)/],
    ["http://169.254.169.254/latest/meta-data/", /cloud metadata address/],
    ["http://[::1]/", /::1 is a non-public address \(loopback\)/],
    ["http://[::ffff:127.0.0.1]/", /127\.0\.0\.1 is a non-public address \(loopback\)/],
    ["http://[fe80::1]/", /\(linkLocal\)/],
    ["http://224.0.0.1/", /\(multicast\)/],
    ["http://0.0.0.0/", /\(unspecified\)/],
    ["http://metadata.google.internal/", /the host metadata\.google\.internal is not allowed/],
    ["http://localhost:8001/", /the host localhost is not allowed/],
    ["http://sub.localhost/", /the host sub\.localhost is not allowed/],
    ["http://user:pw@example.com/", /URLs with credentials/],
    ["gopher://example.com/", /only http:\/\/ and https:\/\/ URLs are supported, not gopher:/],
    ["http://localtest.me/", /localtest\.me resolves to 127\.0\.0\.1 is a non-public address|could not be resolved/],
  ];
  for (const [url, reason] of probes) {
    it(`refuses ${url} before it reaches the reader`, async () => {
      const before = web.requests.length;
      const { result } = await callTool(h, "web_fetch", { url });
      expect(result).toMatch(/^Error: jina: /);
      expect(result).toMatch(reason);
      expect(web.requests.length).toBe(before);
    });
  }

  it("puts an IDN host into punycode before checking it", async () => {
    const { result } = await callTool(h, "web_fetch", { url: "http://bücher.localhost/" });
    expect(result).toBe("Error: jina: the host xn--bcher-kva.localhost is not allowed");
  });
});

describe("cache and metrics", () => {
  it("answers an identical search from the cache and counts calls, failures and hits in /metrics", async () => {
    const count = () => web.requests.filter((r) => r.path === "/html/" && r.body.includes("cached+query")).length;
    const first = await callTool(h, "web_search", { query: "cached query" });
    const second = await callTool(h, "web_search", { query: "cached query" });
    expect(second.result).toBe(first.result);
    expect(count()).toBe(1);
    await callTool(h, "web_fetch", { url: "http://127.0.0.1/" });
    const metrics = await (await fetch(`${h.url}/metrics`)).text();
    expect(metrics).toMatch(/deerflow_web_tool_cache_hits_total\{tool="web_search",provider="duckduckgo"\} [1-9]/);
    expect(metrics).toMatch(/deerflow_web_tool_calls_total\{tool="web_search",provider="duckduckgo"\} [1-9]/);
    expect(metrics).toMatch(/deerflow_web_tool_failures_total\{tool="web_fetch",provider="jina",reason="blocked_url"\} [1-9]/);
    expect(metrics).toMatch(/deerflow_web_tool_duration_seconds_count\{tool="web_search",provider="duckduckgo"\} [1-9]/);
    expect(metrics).not.toContain("jina-secret-key");
  });
});
