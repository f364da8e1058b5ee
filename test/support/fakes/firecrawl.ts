// Fake Firecrawl v2 API (https://docs.firecrawl.dev/api-reference): POST /v2/search and /v2/scrape, Bearer key.
import { bearer, numbered, sendJson, startHttpFake, type HttpFake } from "./http-fake.js";

/** Starts a fake Firecrawl that accepts `apiKey` and returns `total` search results. */
export function startFirecrawlFake(apiKey: string, total = 250): Promise<HttpFake> {
  return startHttpFake({
    authorized: (req) => bearer(req) === apiKey,
    errorBody: (status) => ({ success: false, error: status === 401 ? "Unauthorized: Invalid token" : status === 429 ? "Rate limit exceeded" : "Internal server error" }),
    handle(req, res) {
      if (req.method === "POST" && req.path === "/v2/search") {
        const web = numbered(total, (i) => ({ url: `https://firecrawl.example/${i}`, title: `Firecrawl ${i}: ${req.body.query}`, description: `description ${i}`, position: i }));
        return sendJson(res, 200, { success: true, data: { web } });
      }
      if (req.method === "POST" && req.path === "/v2/scrape") {
        const url = String(req.body.url);
        return sendJson(res, 200, { success: true, data: { markdown: `# Scraped\n\nBody of ${url}`, metadata: { title: "Scraped page", sourceURL: url, statusCode: 200 } } });
      }
      sendJson(res, 404, { success: false, error: "Not Found" });
    },
  });
}
