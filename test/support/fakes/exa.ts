// Fake Exa API (https://docs.exa.ai): POST /search and POST /contents with the `x-api-key` header.
import { numbered, sendJson, startHttpFake, type HttpFake } from "./http-fake.js";

/** Starts a fake Exa that accepts `apiKey` and returns `total` search results. */
export function startExaFake(apiKey: string, total = 250): Promise<HttpFake> {
  return startHttpFake({
    authorized: (req) => req.headers["x-api-key"] === apiKey,
    errorBody: (status) => ({ requestId: "r1", error: status === 401 ? "Invalid API key" : status === 429 ? "Rate limit exceeded" : "Internal error" }),
    handle(req, res) {
      if (req.method === "POST" && req.path === "/search") {
        const results = numbered(total, (i) => ({ id: `https://exa.example/${i}`, title: `Exa ${i}: ${req.body.query}`, url: `https://exa.example/${i}`, highlights: [`first ${i}`, `second ${i}`] }));
        return sendJson(res, 200, { requestId: "r1", resolvedSearchType: req.body.type, results });
      }
      if (req.method === "POST" && req.path === "/contents") {
        const url = String(req.body.urls[0]);
        return sendJson(res, 200, { requestId: "r2", results: [{ id: url, url, title: "Exa page", text: `Body of ${url}` }] });
      }
      sendJson(res, 404, { error: "Not Found" });
    },
  });
}
