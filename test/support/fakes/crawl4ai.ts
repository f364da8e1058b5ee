// Fake Crawl4AI Docker server (https://docs.crawl4ai.com/core/self-hosting/): POST /md `{url, f}`, Bearer token.
import { bearer, sendJson, startHttpFake, type HttpFake } from "./http-fake.js";

/** Starts a fake Crawl4AI server; `token` undefined accepts requests without one (a pre-0.9 server). */
export function startCrawl4aiFake(token?: string): Promise<HttpFake> {
  return startHttpFake({
    authorized: (req) => token === undefined || bearer(req) === token,
    errorBody: (status) => ({ detail: status === 401 ? "Invalid or missing token" : "error" }),
    handle(req, res) {
      if (req.method !== "POST" || req.path !== "/md") return sendJson(res, 404, { detail: "Not Found" });
      const url = String(req.body?.url);
      if (url.includes("fail")) return sendJson(res, 200, { url, filter: req.body.f, markdown: "", success: false });
      sendJson(res, 200, { url, filter: req.body.f, query: null, cache: "0", markdown: `# Crawled\n\nBody of ${url} (${req.body.f})`, success: true });
    },
  });
}
