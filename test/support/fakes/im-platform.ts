// Shared core of the IM platform fakes: an HTTP server on 127.0.0.1:0 that records every API call (method name,
// body: JSON, form-encoded or multipart with its file parts, time) and can be told to answer the next calls with a status (429 / 500) in the platform's shape.
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";

/** One API call as the fake received it. */
export interface PlatformCall {
  method: string;
  /** The HTTP method (`POST`, `PATCH`, `GET`). */
  verb: string;
  /** The same as {@link verb} (the file-transfer tests' name for it). */
  httpMethod: string;
  /** The path and query as requested. */
  path: string;
  /** JSON body, or the fields of a form-encoded / multipart body. */
  body: Record<string, any>;
  /** The multipart body's file parts by field name. */
  files: Record<string, { filename: string; type: string; data: Buffer }>;
  /** The body's bytes as sent. */
  raw: Buffer;
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
      void (async () => {
        const url = new URL(req.url ?? "/", "http://fake");
        const raw = Buffer.concat(chunks);
        const { body, files } = await parseBody(raw, String(req.headers["content-type"] ?? ""));
        const call: PlatformCall = { method: url.pathname.split("/").at(-1) ?? "", verb: req.method ?? "POST", httpMethod: req.method ?? "POST", path: `${url.pathname}${url.search}`, body, files, raw, headers: req.headers, at: Date.now() };
        fake.calls.push(call);
        const status = fake.failNext.shift();
        if (status !== undefined) return failure(status, res);
        await route(call, url, res);
      })().catch(() => res.writeHead(500).end());
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

/** Parses a JSON, form-encoded or multipart body (the last with the WHATWG parser of Node's fetch). */
async function parseBody(raw: Buffer, contentType: string): Promise<{ body: Record<string, any>; files: PlatformCall["files"] }> {
  const files: PlatformCall["files"] = {};
  if (!raw.length) return { body: {}, files };
  if (contentType.startsWith("application/x-www-form-urlencoded")) return { body: Object.fromEntries(new URLSearchParams(raw.toString("utf8"))), files };
  if (contentType.startsWith("multipart/form-data")) {
    const form = await new Response(new Uint8Array(raw), { headers: { "content-type": contentType } }).formData();
    const body: Record<string, any> = {};
    for (const [name, value] of form) {
      if (typeof value === "string") body[name] = value;
      else files[name] = { filename: value.name, type: value.type, data: Buffer.from(await value.arrayBuffer()) };
    }
    return { body, files };
  }
  try {
    return { body: JSON.parse(raw.toString("utf8")) as Record<string, any>, files };
  } catch {
    return { body: {}, files };
  }
}
