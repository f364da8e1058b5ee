// Fake Tavily API (https://docs.tavily.com): POST /search and POST /extract with `Authorization: Bearer <key>`.
import { bearer, numbered, sendJson, startHttpFake, type HttpFake } from "./http-fake.js";

/** Starts a fake Tavily that accepts `apiKey` and returns `total` search results. */
export function startTavilyFake(apiKey: string, total = 250): Promise<HttpFake> {
  return startHttpFake({
    authorized: (req) => bearer(req) === apiKey,
    errorBody: (status) => ({ detail: { error: status === 401 ? "Unauthorized: missing or invalid API key." : status === 429 ? "Rate limit exceeded" : "Internal server error" } }),
    handle(req, res) {
      if (req.method === "POST" && req.path === "/search") {
        const results = numbered(total, (i) => ({ title: `Tavily ${i}: ${req.body.query}`, url: `https://tavily.example/${i}`, content: `snippet ${i}`, score: 1 / i }));
        return sendJson(res, 200, { query: req.body.query, results, images: [], response_time: 0.1, request_id: "r1" });
      }
      if (req.method === "POST" && req.path === "/extract") {
        const url = String(req.body.urls[0]);
        if (url.includes("fail")) return sendJson(res, 200, { results: [], failed_results: [{ url, error: "blocked by robots.txt" }], response_time: 0.1 });
        return sendJson(res, 200, { results: [{ url, title: "Extracted page", raw_content: `# Heading\n\nBody of ${url}` }], failed_results: [], response_time: 0.1 });
      }
      sendJson(res, 404, { detail: { error: "Not Found" } });
    },
  });
}
