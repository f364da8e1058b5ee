// A real MCP server (the MCP SDK's streamable HTTP server, stateless) behind a local OAuth 2.0 token endpoint, on
// 127.0.0.1:0. `/oauth/token` speaks RFC 6749 (client credentials and refresh token grants, form-encoded, JSON
// answers, `error` codes); `/mcp` answers 401 unless the request carries a bearer token it issued and has not
// revoked. Tools: `whoami` (which token number called), and the ordinary task contract `submit_job` / `job_status` /
// `cancel_job` (structuredContent `{task_id, status}`) for MCP background tasks.
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { z } from "zod";

/** One remote job of the task contract. */
export interface FakeJob {
  id: string;
  status: "running" | "completed" | "failed" | "cancelled";
  result?: unknown;
}

/** A running fake. Change the knobs between calls. */
export interface McpOAuthFake {
  /** Base URL; the MCP endpoint is `${url}/mcp`, the token endpoint `${url}/oauth/token`. */
  url: string;
  clientId: string;
  clientSecret: string;
  /** The refresh token the endpoint accepts now (rotated on every refresh grant). */
  refreshToken: string;
  /** Seconds the next issued token lives (`expires_in`). */
  expiresIn: number;
  /** When set, the token endpoint answers this status with `{error: "server_error"}`. */
  tokenFailure: number | null;
  /** Every token grant received (form fields). */
  grants: Record<string, string>[];
  /** Authorization header of every MCP request, in order. */
  mcpAuth: (string | undefined)[];
  /** MCP requests answered 401. */
  rejected: number;
  jobs: Map<string, FakeJob>;
  /** Makes every token issued so far invalid at the MCP endpoint (the next request gets 401). */
  revokeAll(): void;
  close(): Promise<void>;
}

const json = (res: ServerResponse, status: number, body: unknown) => res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body));

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}

function mcpServer(fake: McpOAuthFake, tokenNo: number): McpServer {
  const server = new McpServer({ name: "oauth-fake", version: "1.0.0" });
  server.registerTool("whoami", { description: "Which token called", inputSchema: {} }, async () => ({ content: [{ type: "text", text: `token #${tokenNo}` }] }));
  const job = (j: FakeJob) => ({ content: [{ type: "text" as const, text: JSON.stringify(j) }], structuredContent: { task_id: j.id, status: j.status, ...(j.result !== undefined ? { result: j.result } : {}) } });
  server.registerTool("submit_job", { description: "Start a long job", inputSchema: { topic: z.string() } }, async ({ topic }) => {
    const j: FakeJob = { id: `job-${fake.jobs.size + 1}-${topic}`, status: "running" };
    fake.jobs.set(j.id, j);
    return job(j);
  });
  server.registerTool("job_status", { description: "Status of a job", inputSchema: { task_id: z.string() } }, async ({ task_id }) => {
    const j = fake.jobs.get(task_id);
    return j ? job(j) : { content: [{ type: "text", text: "no such job" }], structuredContent: { task_id, status: "failed", error_code: "task_not_found" } };
  });
  server.registerTool("cancel_job", { description: "Cancel a job", inputSchema: { task_id: z.string() } }, async ({ task_id }) => {
    const j = fake.jobs.get(task_id);
    if (!j) return { isError: true, content: [{ type: "text", text: "no such job" }] };
    if (j.status === "running") j.status = "cancelled";
    return job(j);
  });
  return server;
}

/** Starts the fake; close it in afterAll. */
export async function startMcpOAuthFake(): Promise<McpOAuthFake> {
  const valid = new Map<string, number>();
  let issued = 0;
  const sockets = new Set<Socket>();
  const fake: McpOAuthFake = {
    url: "", clientId: "gateway-client", clientSecret: "s3cret-client-value", refreshToken: "refresh-1", expiresIn: 3600, tokenFailure: null,
    grants: [], mcpAuth: [], rejected: 0, jobs: new Map(),
    revokeAll: () => valid.clear(),
    close: async () => undefined,
  };
  const token = async (req: IncomingMessage, res: ServerResponse) => {
    const form = Object.fromEntries(new URLSearchParams(await readBody(req)));
    fake.grants.push(form);
    if (fake.tokenFailure) return json(res, fake.tokenFailure, { error: "server_error" });
    if (form.grant_type === "client_credentials" && (form.client_id !== fake.clientId || form.client_secret !== fake.clientSecret)) return json(res, 401, { error: "invalid_client" });
    if (form.grant_type === "refresh_token") {
      if (form.refresh_token !== fake.refreshToken) return json(res, 400, { error: "invalid_grant" });
      fake.refreshToken = `refresh-${issued + 2}`;
    }
    if (form.grant_type !== "client_credentials" && form.grant_type !== "refresh_token") return json(res, 400, { error: "unsupported_grant_type" });
    const access = `access-${++issued}`;
    valid.set(access, issued);
    json(res, 200, { access_token: access, token_type: "bearer", expires_in: fake.expiresIn, ...(form.grant_type === "refresh_token" ? { refresh_token: fake.refreshToken } : {}) });
  };
  const mcp = async (req: IncomingMessage, res: ServerResponse) => {
    const auth = req.headers.authorization;
    fake.mcpAuth.push(auth);
    const tokenNo = auth?.startsWith("Bearer ") ? valid.get(auth.slice(7)) : undefined;
    if (tokenNo === undefined) {
      fake.rejected++;
      return res.writeHead(401, { "www-authenticate": 'Bearer error="invalid_token"' }).end();
    }
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    const server = mcpServer(fake, tokenNo);
    res.on("close", () => void server.close());
    await server.connect(transport);
    const text = await readBody(req);
    await transport.handleRequest(req, res, text ? JSON.parse(text) : undefined);
  };
  const http = createServer((req, res) => {
    const path = new URL(req.url ?? "/", "http://fake").pathname;
    const handler = path === "/oauth/token" && req.method === "POST" ? token : path === "/mcp" ? mcp : null;
    if (!handler) return json(res, 404, { error: "not_found" });
    handler(req, res).catch((err) => (res.headersSent ? res.end() : json(res, 500, { error: String(err) })));
  });
  http.on("connection", (s) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));
  fake.url = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
  fake.close = () => new Promise<void>((resolve) => {
    for (const s of sockets) s.destroy();
    http.close(() => resolve());
  });
  return fake;
}
