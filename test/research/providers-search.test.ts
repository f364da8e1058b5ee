// Every third-party web_search provider through its catalog binding against a local fake of its documented API:
// result shape, request shape (auth, body), key from entry / env / missing, 401, 429, 500, garbage, a server that
// never answers (entry timeout and tool signal), and the provider's max_results cap.
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import type { FakeRequest, HttpFake } from "../support/fakes/http-fake.js";
import { startBraveFake } from "../support/fakes/brave.js";
import { startExaFake } from "../support/fakes/exa.js";
import { startFirecrawlFake } from "../support/fakes/firecrawl.js";
import { startInfoquestFake } from "../support/fakes/infoquest.js";
import { startSearxngFake } from "../support/fakes/searxng.js";
import { startSerperFake } from "../support/fakes/serper.js";
import { startTavilyFake } from "../support/fakes/tavily.js";
import { failureOf, providerCtx, searchVia } from "../support/web-providers.js";

const KEY = "sk-test-4f9a0c";

interface SearchCase {
  use: string;
  provider: string;
  /** The env variable of the key; none for a keyless provider. */
  env?: string;
  cap: number;
  start(): Promise<HttpFake>;
  extra?: Record<string, unknown>;
  /** Asserts the request carried the key and the per-entry keys; returns the count it asked for, if any. */
  check(req: FakeRequest): number | undefined;
}

const CASES: SearchCase[] = [
  {
    use: "deerflow.community.tavily.tools:web_search_tool",
    provider: "Tavily",
    env: "TAVILY_API_KEY",
    cap: 20,
    start: () => startTavilyFake(KEY),
    extra: { search_depth: "advanced", topic: "news" },
    check(req) {
      expect(req.headers.authorization).toBe(`Bearer ${KEY}`);
      expect(req.body).toMatchObject({ query: "deer flow", search_depth: "advanced", topic: "news" });
      return req.body.max_results;
    },
  },
  {
    use: "deerflow.community.exa.tools:web_search_tool",
    provider: "Exa",
    env: "EXA_API_KEY",
    cap: 100,
    start: () => startExaFake(KEY),
    extra: { search_type: "neural", contents_max_characters: 300 },
    check(req) {
      expect(req.headers["x-api-key"]).toBe(KEY);
      expect(req.body).toMatchObject({ query: "deer flow", type: "neural", contents: { highlights: { maxCharacters: 300 } } });
      return req.body.numResults;
    },
  },
  {
    use: "deerflow.community.firecrawl.tools:web_search_tool",
    provider: "Firecrawl",
    env: "FIRECRAWL_API_KEY",
    cap: 100,
    start: () => startFirecrawlFake(KEY),
    extra: { tbs: "qdr:w" },
    check(req) {
      expect(req.headers.authorization).toBe(`Bearer ${KEY}`);
      expect(req.body).toMatchObject({ query: "deer flow", tbs: "qdr:w" });
      return req.body.limit;
    },
  },
  {
    use: "deerflow.community.brave.tools:web_search_tool",
    provider: "Brave Search",
    env: "BRAVE_SEARCH_API_KEY",
    cap: 20,
    start: () => startBraveFake(KEY),
    extra: { country: "DE", safesearch: "strict" },
    check(req) {
      expect(req.headers["x-subscription-token"]).toBe(KEY);
      expect(Object.fromEntries(req.query)).toMatchObject({ q: "deer flow", country: "DE", safesearch: "strict", text_decorations: "false" });
      return Number(req.query.get("count"));
    },
  },
  {
    use: "deerflow.community.serper.tools:web_search_tool",
    provider: "Serper",
    env: "SERPER_API_KEY",
    cap: 10,
    start: () => startSerperFake(KEY),
    extra: { region: "us", hl: "en" },
    check(req) {
      expect(req.headers["x-api-key"]).toBe(KEY);
      expect(req.body).toMatchObject({ q: "deer flow", gl: "us", hl: "en" });
      return req.body.num;
    },
  },
  {
    use: "deerflow.community.searxng.tools:web_search_tool",
    provider: "SearXNG",
    cap: 20,
    start: () => startSearxngFake(),
    extra: { safesearch: "moderate", categories: "general" },
    check(req) {
      expect(Object.fromEntries(req.query)).toMatchObject({ q: "deer flow", format: "json", safesearch: "1", categories: "general" });
      return undefined;
    },
  },
  {
    use: "deerflow.community.infoquest.tools:web_search_tool",
    provider: "InfoQuest",
    env: "INFOQUEST_API_KEY",
    cap: 20,
    start: () => startInfoquestFake(KEY),
    extra: { search_time_range: 10 },
    check(req) {
      expect(req.headers.authorization).toBe(`Bearer ${KEY}`);
      expect(req.body).toEqual({ format: "JSON", query: "deer flow", time_range: 10 });
      return undefined;
    },
  },
];

describe.each(CASES)("web_search via $use", (c) => {
  let fake: HttpFake;
  const entry = (extra: Record<string, unknown> = {}) => ({ base_url: fake.url, ...(c.env ? { api_key: KEY } : {}), ...c.extra, ...extra });
  beforeAll(async () => {
    fake = await c.start();
  });
  afterAll(() => fake.close());
  beforeEach(() => {
    fake.mode = "ok";
  });
  afterEach(() => {
    vi.unstubAllEnvs();
  });

  it("returns {title, url, snippet} hits and sends the key and the entry's keys", async () => {
    const before = fake.requests.length;
    const hits = await searchVia(c.use, "deer flow", 3, providerCtx("web_search", c.use, entry()));
    expect(hits).toHaveLength(3);
    for (const h of hits) {
      expect(h.title).toMatch(/\S/);
      expect(h.url).toMatch(/^https:\/\//);
      expect(typeof h.snippet).toBe("string");
    }
    expect(hits[0]!.title).toContain("deer flow");
    expect(fake.requests.length).toBe(before + 1);
    const asked = c.check(fake.requests.at(-1)!);
    if (asked !== undefined) expect(asked).toBe(3);
  });

  it("caps max_results at the provider's limit", async () => {
    const hits = await searchVia(c.use, "deer flow", 1000, providerCtx("web_search", c.use, entry()));
    expect(hits).toHaveLength(c.cap);
    const asked = c.check(fake.requests.at(-1)!);
    if (asked !== undefined) expect(asked).toBe(c.cap);
  });

  it.runIf(c.env)("takes the key from the environment variable when the entry has none", async () => {
    vi.stubEnv(c.env!, KEY);
    const { api_key: _drop, ...noKey } = entry();
    const hits = await searchVia(c.use, "deer flow", 2, providerCtx("web_search", c.use, noKey));
    expect(hits).toHaveLength(2);
  });

  it.runIf(c.env)("without a key says which key and variable to set, and calls nothing", async () => {
    vi.stubEnv(c.env!, "");
    const before = fake.requests.length;
    const { api_key: _drop, ...noKey } = entry();
    const msg = await failureOf(searchVia(c.use, "deer flow", 2, providerCtx("web_search", c.use, noKey)));
    expect(msg).toContain(c.provider);
    expect(msg).toContain("api_key");
    expect(msg).toContain(c.env!);
    expect(fake.requests.length).toBe(before);
  });

  it.runIf(c.env)("a refused key is an error naming the provider, without the key", async () => {
    const msg = await failureOf(searchVia(c.use, "deer flow", 2, providerCtx("web_search", c.use, entry({ api_key: "wrong-secret-77" }))));
    expect(msg).toContain(c.provider);
    expect(msg).toMatch(/401|refused|unauthori[sz]ed|invalid/i);
    expect(msg).not.toContain("wrong-secret-77");
  });

  it.each([
    ["429", /429|rate limit/i],
    ["500", /500|fail|error/i],
    ["garbage", /invalid JSON|unexpected response format/i],
  ] as const)("answer %s is a short error naming the provider", async (mode, pattern) => {
    fake.mode = mode;
    const msg = await failureOf(searchVia(c.use, "deer flow", 2, providerCtx("web_search", c.use, entry())));
    expect(msg.startsWith(`${c.provider}: `)).toBe(true);
    expect(msg).toMatch(pattern);
    expect(msg).not.toContain(KEY);
    expect(msg.length).toBeLessThan(300);
  });

  it("a server that never answers fails at the entry's timeout", async () => {
    fake.mode = "hang";
    const t0 = Date.now();
    const msg = await failureOf(searchVia(c.use, "deer flow", 2, providerCtx("web_search", c.use, entry({ timeout: 0.5 }))));
    expect(msg).toContain(c.provider);
    expect(msg).toMatch(/timed out/);
    expect(Date.now() - t0).toBeLessThan(4000);
  });

  it("a server that never answers fails when the tool's signal fires", async () => {
    fake.mode = "hang";
    const t0 = Date.now();
    const ctx = providerCtx("web_search", c.use, entry({ timeout: 60 }), AbortSignal.timeout(300));
    const msg = await failureOf(searchVia(c.use, "deer flow", 2, ctx));
    expect(msg).toContain(c.provider);
    expect(msg).toMatch(/cancelled|timed out/);
    expect(Date.now() - t0).toBeLessThan(3000);
  });
});
