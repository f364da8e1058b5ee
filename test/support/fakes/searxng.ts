// Fake SearXNG instance (https://docs.searxng.org/dev/search_api.html): GET /search?q=...&format=json, no key.
import { numbered, sendJson, startHttpFake, type HttpFake } from "./http-fake.js";

/** Starts a fake SearXNG returning `total` results; a request without `format=json` gets 403 as a real instance. */
export function startSearxngFake(total = 250): Promise<HttpFake> {
  return startHttpFake({
    authorized: () => true,
    handle(req, res) {
      if (req.method !== "GET" || req.path !== "/search") return sendJson(res, 404, { error: "not found" });
      if (req.query.get("format") !== "json") return void res.writeHead(403).end("Forbidden");
      const q = req.query.get("q");
      const results = numbered(total, (i) => ({ title: `SearXNG ${i}: ${q}`, url: `https://searx.example/${i}`, content: `content ${i}`, engine: "duckduckgo" }));
      sendJson(res, 200, { query: q, number_of_results: total, results });
    },
  });
}
