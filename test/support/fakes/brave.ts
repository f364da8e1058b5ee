// Fake Brave Search API (https://api-dashboard.search.brave.com/app/documentation): GET /res/v1/web/search and
// /res/v1/images/search with the `X-Subscription-Token` header.
import { numbered, sendJson, startHttpFake, type HttpFake } from "./http-fake.js";

/** Starts a fake Brave Search that accepts `apiKey` and returns `total` results per search. */
export function startBraveFake(apiKey: string, total = 250): Promise<HttpFake> {
  return startHttpFake({
    authorized: (req) => req.headers["x-subscription-token"] === apiKey,
    errorBody: (status) => ({ type: "ErrorResponse", error: { status, code: status === 401 ? "SUBSCRIPTION_TOKEN_INVALID" : status === 429 ? "RATE_LIMITED" : "INTERNAL" } }),
    handle(req, res) {
      const q = req.query.get("q");
      if (req.method === "GET" && req.path === "/res/v1/web/search") {
        const results = numbered(total, (i) => ({ title: `Brave ${i}: ${q}`, url: `https://brave.example/${i}`, description: `description ${i}` }));
        return sendJson(res, 200, { type: "search", query: { original: q }, web: { type: "search", results } });
      }
      if (req.method === "GET" && req.path === "/res/v1/images/search") {
        const results = numbered(total, (i) => ({
          type: "image_result",
          title: `Brave image ${i}`,
          url: `https://brave.example/page/${i}`,
          source: "brave.example",
          thumbnail: { src: `https://imgs.brave.example/thumb/${i}.jpg`, width: 200, height: 100 },
          properties: { url: i === 2 ? "javascript:alert(1)" : `https://brave.example/full/${i}.jpg`, width: 2000, height: 1000 },
        }));
        return sendJson(res, 200, { type: "images", query: { original: q }, results });
      }
      sendJson(res, 404, { type: "ErrorResponse", error: { status: 404 } });
    },
  });
}
