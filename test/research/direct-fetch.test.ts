// Issue 44: the direct fetcher (`deerflow-gateway/web:web_fetch_tool`) over HTTP with the scripted model, against
// a local web server (allow_private_addresses: true), and the bad-input list: each is a clear tool error within
// the timeout, and the run goes on to its final answer.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startHarness, type Harness } from "../support/harness.js";
import { startFakeWebServer, type FakeWebServer } from "../support/fakes/web-server.js";
import { callTool, researchConfig } from "./support.js";

let web: FakeWebServer;
let h: Harness;
beforeAll(async () => {
  web = await startFakeWebServer();
  h = await startHarness(researchConfig("  - name: web_fetch\n    group: web\n    use: deerflow-gateway/web:web_fetch_tool\n    allow_private_addresses: true\n    timeout: 3\n"));
});
afterAll(async () => {
  await h.close();
  await web.close();
});

describe("web_fetch through the direct fetcher", () => {
  it("turns an HTML page into Markdown with its title, dropping scripts and navigation", async () => {
    const { result, status } = await callTool(h, "web_fetch", { url: `${web.url}/page` });
    expect(status).toBe(200);
    expect(result.startsWith("# Deer facts\n\n")).toBe(true);
    expect(result).toContain("Deer are ruminant mammals");
    expect(result).toContain(`[other page](${web.url}/other)`);
    expect(result).not.toContain("alert(1)");
  });

  it("follows a redirect, passes text as is and converts a PDF", async () => {
    expect((await callTool(h, "web_fetch", { url: `${web.url}/redirect` })).result).toContain("Deer are ruminant mammals");
    expect((await callTool(h, "web_fetch", { url: `${web.url}/text` })).result).toBe("plain notes\nline two");
    expect((await callTool(h, "web_fetch", { url: `${web.url}/pdf` })).result).toContain("Quarterly deer census report");
  });

  it("caps a 1 MB page at 4,096 characters of Markdown with a note", async () => {
    const { result } = await callTool(h, "web_fetch", { url: `${web.url}/big` });
    expect(result.startsWith("# Big")).toBe(true);
    expect(result).toMatch(/\n\n\[Truncated: only the first 4096 characters of the page's Markdown are shown\.\]$/);
    expect(result.length).toBeLessThan(4096 + 120);
  });

  it("answers HTTP errors and unsupported types as tool errors naming the provider", async () => {
    expect((await callTool(h, "web_fetch", { url: `${web.url}/status/500` })).result).toBe("Error: direct: the server answered HTTP 500");
    expect((await callTool(h, "web_fetch", { url: `${web.url}/status/429` })).result).toBe("Error: direct: the server rate-limited the request (HTTP 429)");
    expect((await callTool(h, "web_fetch", { url: `${web.url}/image` })).result).toMatch(/^Error: direct: content type image\/png is not supported/);
  });
});

describe("bad input: a clear tool error within the timeout, and the run continues", () => {
  const cases: [string, string, RegExp][] = [
    ["credentials in the URL", "http://user:pw@127.0.0.1/", /^Error: direct: URLs with credentials/],
    ["a non-http scheme", "file:///etc/passwd", /^Error: direct: only http:\/\/ and https:\/\/ URLs are supported, not file:/],
    ["a redirect loop", "/loop", /^Error: direct: redirect loop$/],
    ["a 10 GB streamed response", "/huge", /^Error: direct: the response is larger than 5 MB$/],
    ["a 10 GB declared response", "/huge-declared", /^Error: direct: the response is larger than 5 MB$/],
    ["a response that never ends", "/never-ends", /^Error: direct: timed out after 3 s$/],
    ["binary content labelled text/html", "/binary", /^Error: direct: the response is labelled text\/html but holds binary data$/],
    ["a redirect to the metadata address (hop re-checked)", "/to-metadata", /^Error: direct: the URL points at 169\.254\.169\.254 is a cloud metadata address$/],
  ];
  for (const [what, target, expected] of cases) {
    it(what, async () => {
      const started = Date.now();
      const url = target.startsWith("/") ? `${web.url}${target}` : target;
      const { result, final } = await callTool(h, "web_fetch", { url });
      expect(result).toMatch(expected);
      expect(Date.now() - started).toBeLessThan(8000);
      // The run went on: the scripted model answered after the tool result.
      expect(final).not.toBe(result);
      expect(final.length).toBeGreaterThan(0);
    });
  }

  it("reduces HTML with 100k nested elements to its text, quickly and within bounded memory", async () => {
    const rss = process.memoryUsage().rss;
    const started = Date.now();
    const { result } = await callTool(h, "web_fetch", { url: `${web.url}/deep` });
    expect(result).toBe("# Deep\n\nDeep\nbottom");
    expect(Date.now() - started).toBeLessThan(5000);
    expect(process.memoryUsage().rss - rss).toBeLessThan(300 * 1024 * 1024);
  });
});
