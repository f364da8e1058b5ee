// Fake Browserless (https://docs.browserless.io/rest-apis/intro): POST /content (rendered HTML) and POST
// /screenshot (image bytes), `?token=` auth.
import { sendJson, startHttpFake, type HttpFake } from "./http-fake.js";

/** A 1x1 transparent PNG. */
export const TINY_PNG = Buffer.from("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=", "base64");

/** Starts a fake Browserless; `token` undefined accepts requests without one (a self-hosted instance). */
export function startBrowserlessFake(token?: string): Promise<HttpFake> {
  return startHttpFake({
    authorized: (req) => token === undefined || req.query.get("token") === token,
    handle(req, res) {
      const url = String(req.body?.url);
      if (req.method === "POST" && req.path === "/content") {
        const code = url.includes("missing") ? "404" : "200";
        return void res
          .writeHead(200, { "content-type": "text/html; charset=utf-8", "x-response-code": code, "x-response-status": code === "404" ? "Not Found" : "OK", "x-response-url": url })
          .end(`<html><head><title>Rendered</title></head><body><article><h1>Rendered</h1><p>Body of ${url}</p></article></body></html>`);
      }
      if (req.method === "POST" && req.path === "/screenshot") {
        const type = req.body?.options?.type ?? "png";
        return void res.writeHead(200, { "content-type": `image/${type}`, "x-response-code": "200" }).end(TINY_PNG);
      }
      sendJson(res, 404, { error: "Not Found" });
    },
  });
}
