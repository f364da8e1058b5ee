// Fake Serper API (https://serper.dev): POST /search and POST /images with the `X-API-KEY` header.
import { numbered, sendJson, startHttpFake, type HttpFake } from "./http-fake.js";

/** Starts a fake Serper that accepts `apiKey` and returns `total` results per search. */
export function startSerperFake(apiKey: string, total = 250): Promise<HttpFake> {
  return startHttpFake({
    authorized: (req) => req.headers["x-api-key"] === apiKey,
    errorBody: (status) => ({ message: status === 401 ? "Unauthorized." : status === 429 ? "Too many requests" : "Internal error", statusCode: status }),
    handle(req, res) {
      if (req.method === "POST" && req.path === "/search") {
        const organic = numbered(total, (i) => ({ title: `Serper ${i}: ${req.body.q}`, link: `https://serper.example/${i}`, snippet: `snippet ${i}`, position: i }));
        return sendJson(res, 200, { searchParameters: { q: req.body.q, num: req.body.num }, organic });
      }
      if (req.method === "POST" && req.path === "/images") {
        const images = numbered(total, (i) => ({ title: `Serper image ${i}`, imageUrl: `https://serper.example/full/${i}.png`, thumbnailUrl: `https://serper.example/thumb/${i}.png`, link: `https://serper.example/page/${i}` }));
        return sendJson(res, 200, { searchParameters: { q: req.body.q }, images });
      }
      sendJson(res, 404, { message: "Not found" });
    },
  });
}
