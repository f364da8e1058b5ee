// A local web server for the research tools' tests: plain pages, documents, redirects and the hostile responses
// of issue 44's bad-input list (10 GB, never-ending, redirect loop, deep nesting, binary labelled text/html).
// Also serves DuckDuckGo's (POST /html/, GET /?q=, GET /i.js) and Jina reader's (POST /) documented endpoints,
// so one server is the fake for every provider of this part (reached through each entry's `base_url`).
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { makePdf } from "../documents.js";

/** A running fake: its base URL, the requests it saw (method + path + body), and close(). */
export interface FakeWebServer {
  url: string;
  requests: { method: string; path: string; body: string; headers: IncomingMessage["headers"] }[];
  close(): Promise<void>;
}

const para = `<p>${"Research text about deer and flows. ".repeat(20)}<a href="/page">more</a></p>\n`;
/** An article page of about 1 MB. */
export const BIG_PAGE = `<html><head><title>Big page</title></head><body><nav>menu</nav><article><h1>Big</h1>${para.repeat(Math.ceil(1_000_000 / para.length))}</article></body></html>`;
export const ARTICLE = `<html><head><title>Deer facts</title><script>alert(1)</script></head><body><nav>Home | About</nav><article><h1>Deer facts</h1><p>Deer are ruminant mammals forming the family Cervidae. ${"They live in forests and grasslands across the world. ".repeat(8)}</p><p>Read the <a href="/other">other page</a>.</p></article></body></html>`;

function ddgResultsPage(query: string): string {
  if (query === "nothing") return `<html><body><div class="no-results">No results.</div></body></html>`;
  if (query === "blocked") return `<html><body><form id="challenge-form">Please verify you are human</form></body></html>`;
  const results = [1, 2, 3, 4, 5, 6].map(
    (i) => `<div class="result results_links web-result"><h2><a class="result__a" href="//duckduckgo.com/l/?uddg=${encodeURIComponent(`https://example.org/${i}?q=${query}`)}&rut=x">Result ${i} for ${query}</a></h2><a class="result__snippet">Snippet ${i} about ${query}</a></div>`,
  );
  return `<html><body><div class="result result--ad"><a class="result__a" href="https://ads.example">Ad</a></div>${results.join("")}</body></html>`;
}

function route(req: IncomingMessage, res: ServerResponse, body: string, base: string): void {
  const url = new URL(req.url ?? "/", base);
  const html = (s: string | Buffer, type = "text/html; charset=utf-8"): void => void res.writeHead(200, { "content-type": type }).end(s);
  switch (url.pathname) {
    case "/page":
      return html(ARTICLE);
    case "/big":
      return html(BIG_PAGE);
    case "/text":
      return html("plain notes\nline two", "text/plain");
    case "/pdf":
      return html(makePdf(["Quarterly deer census report"]), "application/pdf");
    case "/image":
      return html("\x89PNG....", "image/png");
    case "/redirect":
      return void res.writeHead(302, { location: "/page" }).end();
    case "/loop":
      return void res.writeHead(302, { location: "/loop2" }).end();
    case "/loop2":
      return void res.writeHead(301, { location: "/loop" }).end();
    case "/to-metadata":
      return void res.writeHead(302, { location: "http://169.254.169.254/latest/meta-data/" }).end();
    case "/deep":
      return html(`<html><head><title>Deep</title></head><body>${"<div>".repeat(100_000)}bottom${"</div>".repeat(100_000)}</body></html>`);
    case "/binary":
      return html(Buffer.from(Array.from({ length: 65536 }, (_, i) => (i * 7919) % 256)));
    case "/huge": {
      // 10 GB declared and streamed until the client hangs up.
      res.writeHead(200, { "content-type": "text/html" });
      const chunk = Buffer.alloc(64 * 1024, 0x61);
      const pump = () => {
        while (!res.destroyed && res.write(chunk));
        if (!res.destroyed) res.once("drain", pump);
      };
      return pump();
    }
    case "/huge-declared":
      res.writeHead(200, { "content-type": "text/html", "content-length": String(10 * 1024 ** 3) });
      return void res.write("<html>");
    case "/never-ends": {
      res.writeHead(200, { "content-type": "text/html" });
      const timer = setInterval(() => (res.destroyed ? clearInterval(timer) : res.write("<p>.</p>")), 50);
      return void res.on("close", () => clearInterval(timer));
    }
    case "/status/429":
      return void res.writeHead(429).end("slow down");
    case "/status/500":
      return void res.writeHead(500).end("oops");
    // DuckDuckGo
    case "/html/":
      return html(ddgResultsPage(new URLSearchParams(body).get("q") ?? ""));
    case "/i.js":
      if (url.searchParams.get("vqd") !== "4-123") return void res.writeHead(403).end();
      return html(JSON.stringify({ results: [1, 2, 3].map((i) => ({ title: `Image ${i}`, image: `https://img.example/${i}.jpg`, thumbnail: `https://tn.example/${i}.jpg`, url: `https://page.example/${i}`, height: 10, width: 10 })) }), "application/json");
    case "/":
      if (req.method === "POST") {
        // Jina reader: POST / {url} -> the page as HTML.
        const target = (JSON.parse(body || "{}") as { url?: string }).url ?? "";
        return html(`<html><head><title>Jina read ${target}</title></head><body><article><p>${"Fetched through the reader. ".repeat(20)}</p></article></body></html>`);
      }
      if (url.searchParams.get("iax") === "images") return html(`<script>vqd="4-123";</script>`);
      return html(ARTICLE);
    default:
      res.writeHead(404).end("not found");
  }
}

/** Starts the fake on 127.0.0.1 with a random port. */
export async function startFakeWebServer(): Promise<FakeWebServer> {
  const requests: FakeWebServer["requests"] = [];
  let base = "";
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks).toString("utf8");
      requests.push({ method: req.method ?? "", path: req.url ?? "", body, headers: req.headers });
      route(req, res, body, base);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url: base,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
