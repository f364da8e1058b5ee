// Fake BytePlus InfoQuest APIs (https://docs.byteplus.com/en/docs/InfoQuest): the search API (POST /, `query`,
// optional `search_type: "Images"`) and the reader API (POST /, `url`) on one server, Bearer key.
import { bearer, numbered, sendJson, startHttpFake, type HttpFake } from "./http-fake.js";

/** Starts a fake InfoQuest (search and reader) that accepts `apiKey` and returns `total` results per search. */
export function startInfoquestFake(apiKey: string, total = 250): Promise<HttpFake> {
  return startHttpFake({
    authorized: (req) => bearer(req) === apiKey,
    errorBody: (status) => ({ error: { code: status, message: status === 401 ? "invalid api key" : "error" } }),
    handle(req, res) {
      if (req.method !== "POST" || req.path !== "/") return sendJson(res, 404, {});
      if (typeof req.body?.url === "string") {
        return sendJson(res, 200, { reader_result: `<html><head><title>IQ page</title></head><body><article><h1>IQ page</h1><p>Body of ${req.body.url}</p></article></body></html>` });
      }
      const results =
        req.body?.search_type === "Images"
          ? { images_results: numbered(total, (i) => ({ original: `https://iq.example/full/${i}.jpg`, thumbnail: `https://iq.example/thumb/${i}.jpg`, title: `IQ image ${i}`, link: `https://iq.example/page/${i}` })) }
          : {
              organic: numbered(total, (i) => ({ title: `IQ ${i}: ${req.body.query}`, desc: `desc ${i}`, url: `https://iq.example/${i}` })),
              top_stories: { items: [{ title: "IQ news", url: "https://iq.example/news", source: "IQ Times", time_frame: "1 hour ago" }] },
            };
      sendJson(res, 200, { search_result: { results: [{ content: { results } }] } });
    },
  });
}
