// A real stateful MCP server (the MCP SDK's streamable HTTP server with session ids) on 127.0.0.1:0: each
// `initialize` opens a session (`Mcp-Session-Id`), and its tool `count` answers `<session id>:<n>`, the calls that
// session has answered, as a browser or REPL server keeps state per session.
import { randomUUID } from "node:crypto";
import { createServer, type IncomingMessage } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";

/** A running fake. */
export interface StatefulMcpFake {
  /** The MCP endpoint. */
  url: string;
  /** Every session id issued, in order. */
  sessions: string[];
  close(): Promise<void>;
}

async function readBody(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  const text = Buffer.concat(chunks).toString("utf8");
  return text ? JSON.parse(text) : undefined;
}

/** Starts the fake; close it in afterAll. */
export async function startStatefulMcpFake(): Promise<StatefulMcpFake> {
  const transports = new Map<string, StreamableHTTPServerTransport>();
  const sockets = new Set<Socket>();
  const fake: StatefulMcpFake = { url: "", sessions: [], close: async () => undefined };
  const newSession = async (): Promise<StreamableHTTPServerTransport> => {
    let calls = 0;
    const server = new McpServer({ name: "stateful-fake", version: "1.0.0" });
    const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      enableJsonResponse: true,
      onsessioninitialized: (id) => void (transports.set(id, transport), fake.sessions.push(id)),
    });
    server.registerTool("count", { description: "Count this session's calls", inputSchema: {} }, async () => ({ content: [{ type: "text", text: `${transport.sessionId}:${++calls}` }] }));
    await server.connect(transport);
    return transport;
  };
  const http = createServer((req, res) => {
    void (async () => {
      const id = req.headers["mcp-session-id"];
      const body = req.method === "POST" ? await readBody(req) : undefined;
      const existing = typeof id === "string" ? transports.get(id) : undefined;
      if (typeof id === "string" && !existing) return void res.writeHead(404).end();
      await (existing ?? (await newSession())).handleRequest(req, res, body);
    })().catch(() => (res.headersSent ? res.end() : res.writeHead(500).end()));
  });
  http.on("connection", (s) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));
  fake.url = `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`;
  fake.close = () => new Promise<void>((resolve) => {
    for (const s of sockets) s.destroy();
    http.close(() => resolve());
  });
  return fake;
}
