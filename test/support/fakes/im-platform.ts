// Shared core of the IM platform fakes: an HTTP server on 127.0.0.1:0 that records every API call (method name,
// JSON body, time) and can be told to answer the next calls with a status (429 / 500) in the platform's shape.
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";

/** One API call as the fake received it. */
export interface PlatformCall {
  method: string;
  /** The HTTP method (`POST`, `PATCH`, `GET`). */
  verb: string;
  body: Record<string, any>;
  headers: IncomingMessage["headers"];
  at: number;
}

/** A running platform fake. */
export interface PlatformFake {
  url: string;
  calls: PlatformCall[];
  /** Statuses for the next calls, consumed one per call (e.g. `[429]`: the next call is rate limited once). */
  failNext: number[];
  close(): Promise<void>;
}

/** Starts an HTTP server whose `route(method, body, headers, res)` answers each POST; `method` is the last path segment. */
export async function startPlatformFake(
  route: (call: PlatformCall, url: URL, res: ServerResponse) => void | Promise<void>,
  failure: (status: number, res: ServerResponse) => void,
): Promise<PlatformFake> {
  const sockets = new Set<Socket>();
  const fake: PlatformFake = { url: "", calls: [], failNext: [], close: async () => undefined };
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const url = new URL(req.url ?? "/", "http://fake");
      let body: Record<string, any> = {};
      try {
        body = chunks.length ? (JSON.parse(Buffer.concat(chunks).toString("utf8")) as Record<string, any>) : {};
      } catch {
        body = {};
      }
      const call: PlatformCall = { method: url.pathname.split("/").at(-1) ?? "", verb: req.method ?? "GET", body, headers: req.headers, at: Date.now() };
      fake.calls.push(call);
      const status = fake.failNext.shift();
      if (status !== undefined) return failure(status, res);
      void Promise.resolve(route(call, url, res)).catch(() => res.writeHead(500).end());
    });
  });
  server.on("connection", (s) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  fake.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  fake.close = () => new Promise<void>((resolve) => {
    for (const s of sockets) s.destroy();
    server.close(() => resolve());
  });
  return fake;
}

/** Sends `value` as JSON with `status` and extra headers. */
export function json(res: ServerResponse, status: number, value: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { "content-type": "application/json", ...headers }).end(JSON.stringify(value));
}
