// The third-party image_search providers (Serper, Brave, InfoQuest) and web_capture (Browserless /screenshot)
// through their catalog bindings against local fakes of their documented APIs.
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import type { FakeRequest, HttpFake } from "../support/fakes/http-fake.js";
import { startBraveFake } from "../support/fakes/brave.js";
import { startBrowserlessFake, TINY_PNG } from "../support/fakes/browserless.js";
import { startInfoquestFake } from "../support/fakes/infoquest.js";
import { startSerperFake } from "../support/fakes/serper.js";
import { captureVia, failureOf, imagesVia, providerCtx } from "../support/web-providers.js";

const KEY = "sk-test-4f9a0c";

interface ImageCase {
  use: string;
  provider: string;
  env: string;
  cap: number;
  start(): Promise<HttpFake>;
  extra?: Record<string, unknown>;
  check(req: FakeRequest): number | undefined;
}

const CASES: ImageCase[] = [
  {
    use: "deerflow.community.serper.tools:image_search_tool",
    provider: "Serper",
    env: "SERPER_API_KEY",
    cap: 10,
    start: () => startSerperFake(KEY),
    check(req) {
      expect(req.path).toBe("/images");
      expect(req.headers["x-api-key"]).toBe(KEY);
      expect(req.body.q).toBe("red deer");
      return req.body.num;
    },
  },
  {
    use: "deerflow.community.brave.tools:image_search_tool",
    provider: "Brave Search",
    env: "BRAVE_SEARCH_API_KEY",
    cap: 200,
    start: () => startBraveFake(KEY),
    extra: { country: "US", search_lang: "en", safesearch: "strict", spellcheck: true },
    check(req) {
      expect(req.path).toBe("/res/v1/images/search");
      expect(req.headers["x-subscription-token"]).toBe(KEY);
      expect(Object.fromEntries(req.query)).toMatchObject({ q: "red deer", country: "US", search_lang: "en", safesearch: "strict", spellcheck: "true" });
      return Number(req.query.get("count"));
    },
  },
  {
    use: "deerflow.community.infoquest.tools:image_search_tool",
    provider: "InfoQuest",
    env: "INFOQUEST_API_KEY",
    cap: 20,
    start: () => startInfoquestFake(KEY),
    extra: { image_search_time_range: 30, image_size: "l" },
    check(req) {
      expect(req.headers.authorization).toBe(`Bearer ${KEY}`);
      expect(req.body).toEqual({ format: "JSON", query: "red deer", search_type: "Images", time_range: 30, image_size: "l" });
      return undefined;
    },
  },
];

describe.each(CASES)("image_search via $use", (c) => {
  let fake: HttpFake;
  const ctx = (extra: Record<string, unknown> = {}, signal?: AbortSignal) =>
    providerCtx("image_search", c.use, { base_url: fake.url, api_key: KEY, ...c.extra, ...extra }, signal);
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

  it("returns {title, image_url, thumbnail_url, source_url} with http(s) URLs only", async () => {
    const hits = await imagesVia(c.use, "red deer", 4, ctx());
    expect(hits).toHaveLength(4);
    for (const h of hits) {
      expect(h.title).toMatch(/\S/);
      // Brave's fake hides a javascript: URL in result 2; every URL that is passed on is http(s)
      expect(h.image_url || h.thumbnail_url).toMatch(/^https:\/\//);
      for (const u of [h.image_url, h.thumbnail_url, h.source_url]) expect(u).toMatch(/^(https:\/\/|$)/);
      expect(h.source_url).toMatch(/^https:\/\//);
    }
    const asked = c.check(fake.requests.at(-1)!);
    if (asked !== undefined) expect(asked).toBe(4);
  });

  it("caps max_results at the provider's limit", async () => {
    const hits = await imagesVia(c.use, "red deer", 5000, ctx());
    expect(hits).toHaveLength(c.cap);
    const asked = c.check(fake.requests.at(-1)!);
    if (asked !== undefined) expect(asked).toBe(c.cap);
  });

  it("takes the key from the environment, and without one says what to set", async () => {
    vi.stubEnv(c.env, KEY);
    expect(await imagesVia(c.use, "red deer", 2, ctx({ api_key: undefined }))).toHaveLength(2);
    vi.stubEnv(c.env, "");
    const msg = await failureOf(imagesVia(c.use, "red deer", 2, ctx({ api_key: undefined })));
    expect(msg).toContain(c.env);
    expect(msg).toContain("api_key");
  });

  it.each([
    ["401", /401|refused/],
    ["429", /429/],
    ["500", /500/],
    ["garbage", /invalid JSON/],
  ] as const)("answer %s is a short error naming the provider", async (mode, pattern) => {
    if (mode !== "401") fake.mode = mode;
    const msg = await failureOf(imagesVia(c.use, "red deer", 2, ctx(mode === "401" ? { api_key: "wrong-secret-77" } : {})));
    expect(msg.startsWith(`${c.provider}: `)).toBe(true);
    expect(msg).toMatch(pattern);
    expect(msg).not.toContain("wrong-secret-77");
  });

  it("a server that never answers fails at the timeout", async () => {
    fake.mode = "hang";
    const t0 = Date.now();
    expect(await failureOf(imagesVia(c.use, "red deer", 2, ctx({ timeout: 0.5 })))).toMatch(/timed out/);
    expect(Date.now() - t0).toBeLessThan(4000);
  });
});

describe("Brave image results", () => {
  let fake: HttpFake;
  beforeAll(async () => {
    fake = await startBraveFake(KEY);
  });
  afterAll(() => fake.close());

  it("drop a non-http image URL instead of passing it on, and keep upstream's source and size", async () => {
    const use = "deerflow.community.brave.tools:image_search_tool";
    const hits = await imagesVia(use, "red deer", 3, providerCtx("image_search", use, { base_url: fake.url, api_key: KEY }));
    expect(hits[1]).toMatchObject({ title: "Brave image 2", image_url: "", thumbnail_url: "https://imgs.brave.example/thumb/2.jpg", width: 200, height: 100 });
    expect(hits[0]).toMatchObject({ image_url: "https://brave.example/full/1.jpg", source: "brave.example", width: 2000, height: 1000 });
  });
});

describe("web_capture via deerflow.community.browserless.tools:web_capture_tool", () => {
  const use = "deerflow.community.browserless.tools:web_capture_tool";
  let fake: HttpFake;
  beforeAll(async () => {
    fake = await startBrowserlessFake(KEY);
  });
  afterAll(() => fake.close());
  beforeEach(() => {
    fake.mode = "ok";
  });
  afterEach(() => {
    vi.unstubAllEnvs();
  });

  it("posts upstream's screenshot options and returns the image bytes", async () => {
    const entry = { base_url: fake.url, token: KEY, output_format: "jpeg", quality: 80, full_page: false, viewport_width: 800, viewport_height: 600, wait_for_selector: "main", wait_for_timeout_ms: 100, best_attempt: true };
    const shot = await captureVia(use, "https://example.com/", providerCtx("web_capture", use, entry));
    expect(shot.mimeType).toBe("image/jpeg");
    expect(shot.bytes.equals(TINY_PNG)).toBe(true);
    const req = fake.requests.at(-1)!;
    expect(req.path).toBe("/screenshot");
    expect(req.query.get("token")).toBe(KEY);
    expect(req.body).toEqual({
      url: "https://example.com/",
      options: { fullPage: false, type: "jpeg", quality: 80 },
      viewport: { width: 800, height: 600 },
      waitForSelector: { selector: "main", timeout: 5000 },
      waitForTimeout: 100,
      bestAttempt: true,
    });
  });

  it("defaults as upstream: png, full page, 1280x720, token from BROWSERLESS_TOKEN", async () => {
    vi.stubEnv("BROWSERLESS_TOKEN", KEY);
    const shot = await captureVia(use, "https://example.com/", providerCtx("web_capture", use, { base_url: fake.url }));
    expect(shot.mimeType).toBe("image/png");
    expect(fake.requests.at(-1)!.body).toEqual({ url: "https://example.com/", options: { fullPage: true, type: "png" }, viewport: { width: 1280, height: 720 } });
  });

  it("refuses an unknown output_format before calling, and reports 401, 500, a body that is not an image and a hang", async () => {
    const before = fake.requests.length;
    expect(await failureOf(captureVia(use, "https://example.com/", providerCtx("web_capture", use, { base_url: fake.url, token: KEY, output_format: "gif" })))).toBe(
      "Browserless: output_format must be png, jpeg or webp",
    );
    expect(fake.requests.length).toBe(before);
    expect(await failureOf(captureVia(use, "https://example.com/", providerCtx("web_capture", use, { base_url: fake.url, token: "wrong-secret-77" })))).toBe(
      "Browserless: HTTP 401 (the API key was refused)",
    );
    fake.mode = "500";
    expect(await failureOf(captureVia(use, "https://example.com/", providerCtx("web_capture", use, { base_url: fake.url, token: KEY })))).toMatch(/^Browserless: HTTP 500/);
    fake.mode = "garbage";
    expect(await failureOf(captureVia(use, "https://example.com/", providerCtx("web_capture", use, { base_url: fake.url, token: KEY })))).toBe(
      "Browserless: returned application/json instead of an image",
    );
    fake.mode = "hang";
    expect(await failureOf(captureVia(use, "https://example.com/", providerCtx("web_capture", use, { base_url: fake.url, token: KEY, timeout: 0.5 })))).toBe(
      "Browserless: request timed out after 0.5s",
    );
  });
});
