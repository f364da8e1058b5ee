// The common part of the research providers' fakes: an HTTP server on 127.0.0.1:0 that records every request
// (method, path, query, headers, parsed body) and can be switched to fail the way real APIs fail.
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";

/** One request as the fake received it. */
export interface FakeRequest {
  method: string;
  path: string;
  query: URLSearchParams;
  headers: IncomingMessage["headers"];
  /** Parsed JSON body, or the raw text when it is not JSON (`undefined` when empty). */
  body: any;
}

/**
 * How the fake answers: `ok` per its API; `429` and `500` with the provider's error body; `garbage` a 200 that is
 * not the documented JSON; `hang` never answers (the socket stays open until the fake closes).
 */
export type FakeMode = "ok" | "429" | "500" | "garbage" | "hang";

/** A running fake. `mode` may be changed between calls. */
export interface HttpFake {
  url: string;
  requests: FakeRequest[];
  mode: FakeMode;
  close(): Promise<void>;
}

/** The provider-specific part: `authorized` checks the credential (401 otherwise), `handle` answers a good request. */
export interface FakeApi {
  authorized(req: FakeRequest): boolean;
  handle(req: FakeRequest, res: ServerResponse): void;
  /** Body of a 401 / 429 / 500 in the provider's documented error shape. */
  errorBody?(status: number): unknown;
}

/** Sends `value` as a JSON response. */
export function sendJson(res: ServerResponse, status: number, value: unknown): void {
  res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(value));
}

/** Starts a fake speaking `api`; close it in afterAll. */
export async function startHttpFake(api: FakeApi): Promise<HttpFake> {
  const sockets = new Set<Socket>();
  const fake: HttpFake = { url: "", requests: [], mode: "ok", close: async () => undefined };
  const error = (res: ServerResponse, status: number) => sendJson(res, status, api.errorBody?.(status) ?? { error: `HTTP ${status}` });
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const text = Buffer.concat(chunks).toString("utf8");
      let body: unknown = text || undefined;
      try {
        body = text ? JSON.parse(text) : undefined;
      } catch {
        // keep the raw text
      }
      const url = new URL(req.url ?? "/", "http://fake");
      const rec: FakeRequest = { method: req.method ?? "GET", path: url.pathname, query: url.searchParams, headers: req.headers, body };
      fake.requests.push(rec);
      if (fake.mode === "hang") return;
      if (!api.authorized(rec)) return error(res, 401);
      if (fake.mode === "429" || fake.mode === "500") return error(res, Number(fake.mode));
      if (fake.mode === "garbage") return void res.writeHead(200, { "content-type": "application/json" }).end("<html>upstream proxy error</html>");
      api.handle(rec, res);
    });
  });
  server.on("connection", (s) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  fake.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  fake.close = async () => {
    for (const s of sockets) s.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  };
  return fake;
}

/** `n` numbered search results built by `make`. */
export function numbered<T>(n: number, make: (i: number) => T): T[] {
  return Array.from({ length: n }, (_, i) => make(i + 1));
}

/** The Bearer token of a request, or `""`. */
export function bearer(req: FakeRequest): string {
  const h = req.headers.authorization ?? "";
  return h.startsWith("Bearer ") ? h.slice(7) : "";
}
