// Every third-party web_fetch provider through its catalog binding against a local fake of its documented API:
// the page (Markdown or HTML for the extractor), the request (auth, body), keys and tokens, 401, 429, 500, garbage,
// a server that never answers, and each provider's own failure answers.
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import type { FakeRequest, HttpFake } from "../support/fakes/http-fake.js";
import { startBrowserlessFake } from "../support/fakes/browserless.js";
import { startCrawl4aiFake } from "../support/fakes/crawl4ai.js";
import { startExaFake } from "../support/fakes/exa.js";
import { startFirecrawlFake } from "../support/fakes/firecrawl.js";
import { startInfoquestFake } from "../support/fakes/infoquest.js";
import { startTavilyFake } from "../support/fakes/tavily.js";
import { failureOf, fetchVia, providerCtx } from "../support/web-providers.js";

const KEY = "sk-test-4f9a0c";
const PAGE = "https://example.com/article";

interface FetchCase {
  use: string;
  provider: string;
  env: string;
  /** `token` providers work without one (self-hosted); `api_key` providers refuse to call. */
  keyName: "api_key" | "token";
  start(key: string): Promise<HttpFake>;
  extra?: Record<string, unknown>;
  /** What the page comes back as. */
  returns: "markdown" | "html";
  /** A 200 that is not JSON is the page itself for HTML readers (upstream hands it on). */
  garbageIsPage?: boolean;
  check(req: FakeRequest): void;
}

const CASES: FetchCase[] = [
  {
    use: "deerflow.community.tavily.tools:web_fetch_tool",
    provider: "Tavily",
    env: "TAVILY_API_KEY",
    keyName: "api_key",
    start: startTavilyFake,
    extra: { extract_depth: "advanced" },
    returns: "markdown",
    check(req) {
      expect(req.headers.authorization).toBe(`Bearer ${KEY}`);
      expect(req.body).toMatchObject({ urls: [PAGE], extract_depth: "advanced", format: "markdown" });
    },
  },
  {
    use: "deerflow.community.exa.tools:web_fetch_tool",
    provider: "Exa",
    env: "EXA_API_KEY",
    keyName: "api_key",
    start: startExaFake,
    returns: "markdown",
    check(req) {
      expect(req.headers["x-api-key"]).toBe(KEY);
      expect(req.body).toMatchObject({ urls: [PAGE], text: { maxCharacters: 4096 } });
    },
  },
  {
    use: "deerflow.community.firecrawl.tools:web_fetch_tool",
    provider: "Firecrawl",
    env: "FIRECRAWL_API_KEY",
    keyName: "api_key",
    start: startFirecrawlFake,
    returns: "markdown",
    check(req) {
      expect(req.headers.authorization).toBe(`Bearer ${KEY}`);
      expect(req.body).toMatchObject({ url: PAGE, formats: ["markdown"], onlyMainContent: true });
    },
  },
  {
    use: "deerflow.community.crawl4ai.tools:web_fetch_tool",
    provider: "Crawl4AI",
    env: "CRAWL4AI_API_TOKEN",
    keyName: "token",
    start: startCrawl4aiFake,
    extra: { filter: "bm25" },
    returns: "markdown",
    check(req) {
      expect(req.headers.authorization).toBe(`Bearer ${KEY}`);
      expect(req.body).toEqual({ url: PAGE, f: "bm25" });
    },
  },
  {
    use: "deerflow.community.browserless.tools:web_fetch_tool",
    provider: "Browserless",
    env: "BROWSERLESS_TOKEN",
    keyName: "token",
    start: startBrowserlessFake,
    extra: { wait_for_selector: "article", wait_for_timeout_ms: 250 },
    returns: "html",
    garbageIsPage: true,
    check(req) {
      expect(req.query.get("token")).toBe(KEY);
      expect(req.body).toEqual({ url: PAGE, waitForSelector: { selector: "article", timeout: 5000 }, waitForTimeout: 250 });
    },
  },
  {
    use: "deerflow.community.infoquest.tools:web_fetch_tool",
    provider: "InfoQuest",
    env: "INFOQUEST_API_KEY",
    keyName: "api_key",
    start: startInfoquestFake,
    extra: { timeout: 10, fetch_time: 5, navigation_timeout: 30 },
    returns: "html",
    garbageIsPage: true,
    check(req) {
      expect(req.headers.authorization).toBe(`Bearer ${KEY}`);
      expect(req.body).toEqual({ url: PAGE, format: "HTML", timeout: 10, fetch_time: 5, navi_timeout: 30 });
    },
  },
];

describe.each(CASES)("web_fetch via $use", (c) => {
  let fake: HttpFake;
  const entry = (extra: Record<string, unknown> = {}) => ({ base_url: fake.url, [c.keyName]: KEY, ...c.extra, ...extra });
  const call = (extra: Record<string, unknown> = {}, signal?: AbortSignal) => fetchVia(c.use, PAGE, providerCtx("web_fetch", c.use, entry(extra), signal));
  beforeAll(async () => {
    fake = await c.start(KEY);
  });
  afterAll(() => fake.close());
  beforeEach(() => {
    fake.mode = "ok";
  });
  afterEach(() => {
    vi.unstubAllEnvs();
  });

  it(`returns the page as ${c.returns} and sends the key and the entry's keys`, async () => {
    const page = await call();
    expect(page.url).toBe(PAGE);
    expect(page[c.returns]).toContain(`Body of ${PAGE}`);
    c.check(fake.requests.at(-1)!);
  });

  it("takes the key from the environment variable when the entry has none", async () => {
    vi.stubEnv(c.env, KEY);
    const page = await call({ [c.keyName]: undefined });
    expect(page[c.returns]).toContain(`Body of ${PAGE}`);
    c.check(fake.requests.at(-1)!);
  });

  it("without a key: a hosted API says what to set; a self-hosted server is called without one", async () => {
    vi.stubEnv(c.env, "");
    const before = fake.requests.length;
    const msg = await failureOf(call({ [c.keyName]: undefined }));
    expect(msg).toContain(c.provider);
    if (c.keyName === "api_key") {
      expect(msg).toContain("api_key");
      expect(msg).toContain(c.env);
      expect(fake.requests.length).toBe(before);
    } else {
      // the fake wants a token, so the tokenless call is sent and refused
      expect(fake.requests.length).toBe(before + 1);
      const req = fake.requests.at(-1)!;
      expect(req.headers.authorization).toBeUndefined();
      expect(req.query.get("token")).toBeNull();
      expect(msg).toMatch(/401/);
    }
  });

  it("a refused key is an error naming the provider, without the key", async () => {
    const msg = await failureOf(call({ [c.keyName]: "wrong-secret-77" }));
    expect(msg).toContain(c.provider);
    expect(msg).toMatch(/401|refused|unauthori[sz]ed|invalid/i);
    expect(msg).not.toContain("wrong-secret-77");
  });

  it.each([
    ["429", /429|rate limit/i],
    ["500", /500|fail|error/i],
  ] as const)("answer %s is a short error naming the provider", async (mode, pattern) => {
    fake.mode = mode;
    const msg = await failureOf(call());
    expect(msg.startsWith(`${c.provider}: `)).toBe(true);
    expect(msg).toMatch(pattern);
    expect(msg).not.toContain(KEY);
  });

  it(c.garbageIsPage ? "a body that is not JSON is handed on as the page, as upstream" : "a body that is not JSON is an error", async () => {
    fake.mode = "garbage";
    if (c.garbageIsPage) {
      expect((await call()).html).toContain("upstream proxy error");
    } else {
      expect(await failureOf(call())).toMatch(new RegExp(`^${c.provider}: .*(invalid JSON|unexpected response format)`));
    }
  });

  it("a server that never answers fails at the entry's timeout, or when the tool's signal fires", async () => {
    fake.mode = "hang";
    const t0 = Date.now();
    const timeoutKey = c.use.includes("infoquest") ? {} : c.use.includes("browserless") ? { timeout_s: 0.5 } : { timeout: 0.5 };
    const signal = c.use.includes("infoquest") ? AbortSignal.timeout(500) : undefined;
    const msg = await failureOf(call(timeoutKey, signal));
    expect(msg).toContain(c.provider);
    expect(msg).toMatch(/timed out|cancelled/);
    expect(Date.now() - t0).toBeLessThan(4000);
  });
});

describe("web_fetch provider answers of their own", () => {
  const fakes: HttpFake[] = [];
  const start = async (f: Promise<HttpFake>) => {
    const fake = await f;
    fakes.push(fake);
    return fake;
  };
  afterAll(async () => {
    await Promise.all(fakes.map((f) => f.close()));
  });

  it("Tavily: a failed extraction is the error, as upstream", async () => {
    const fake = await start(startTavilyFake(KEY));
    const use = "deerflow.community.tavily.tools:web_fetch_tool";
    const msg = await failureOf(fetchVia(use, "https://example.com/fail", providerCtx("web_fetch", use, { base_url: fake.url, api_key: KEY })));
    expect(msg).toBe("Tavily: could not extract the page: blocked by robots.txt");
  });

  it("Crawl4AI: success false is an error; an unknown filter is refused before any call", async () => {
    const fake = await start(startCrawl4aiFake());
    const use = "deerflow.community.crawl4ai.tools:web_fetch_tool";
    expect(await failureOf(fetchVia(use, "https://example.com/fail", providerCtx("web_fetch", use, { base_url: fake.url })))).toMatch(/^Crawl4AI: reported failure/);
    const before = fake.requests.length;
    expect(await failureOf(fetchVia(use, PAGE, providerCtx("web_fetch", use, { base_url: fake.url, filter: "fit_content" })))).toBe("Crawl4AI: filter must be one of fit, raw, bm25, llm");
    expect(fake.requests.length).toBe(before);
    const page = await fetchVia(use, PAGE, providerCtx("web_fetch", use, { base_url: fake.url }));
    expect(page.markdown).toContain("(fit)");
  });

  it("Browserless: a target page that answered 404 is flagged in the title", async () => {
    const fake = await start(startBrowserlessFake());
    const use = "deerflow.community.browserless.tools:web_fetch_tool";
    const page = await fetchVia(use, "https://example.com/missing", providerCtx("web_fetch", use, { base_url: fake.url }));
    expect(page.title).toBe("(warning: target page responded 404 Not Found)");
    expect(page.html).toContain("Rendered");
  });
});
