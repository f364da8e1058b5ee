import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ExtensionsConfigSchema } from "../../src/config/extensions-config.js";
import { closeMcpClients, McpToolCache } from "../../src/tools/mcp-tools.js";
import { OAuthTokenManager } from "../../src/tools/mcp-oauth.js";
import { captureLogs } from "../support/capture-logs.js";
import { startMcpOAuthFake, type McpOAuthFake } from "../support/fakes/mcp-oauth.js";
import { postJson, startHarness, type Harness } from "../support/harness.js";
import { parseSse } from "../support/sse.js";

// Issue 49 item 2: MCP servers behind OAuth (upstream mcp/oauth.py). A real streamable HTTP MCP server that
// requires a bearer token issued by a local RFC 6749 token endpoint.
let fake: McpOAuthFake;
const caches: McpToolCache[] = [];
beforeAll(async () => void (fake = await startMcpOAuthFake()));
afterAll(async () => {
  await Promise.all(caches.map((c) => c.close()));
  await fake.close();
});

type Invocable = { name: string; invoke(input: unknown): Promise<unknown> };
const text = (out: unknown) => (typeof out === "string" ? out : JSON.stringify(out));
const server = (oauth: Record<string, unknown>) => ({ type: "http", url: `${fake.url}/mcp`, oauth: { token_url: `${fake.url}/oauth/token`, ...oauth } });
const clientCredentials = () => server({ grant_type: "client_credentials", client_id: fake.clientId, client_secret: fake.clientSecret, scope: "tools" });
const ext = (servers: Record<string, unknown>) => ExtensionsConfigSchema.parse({ mcpServers: servers });
const newCache = (now?: () => number) => {
  const c = new McpToolCache(now);
  caches.push(c);
  return c;
};

describe("MCP servers behind OAuth", () => {
  it("fetches a client-credentials token, sends it on every MCP request, and reuses it while it is fresh", async () => {
    const grants = fake.grants.length;
    const tools = (await newCache().getTools(ext({ secure: clientCredentials() }))) as unknown as Invocable[];
    expect(tools.map((t) => t.name)).toContain("secure_whoami");
    const whoami = tools.find((t) => t.name === "secure_whoami")!;
    expect(text(await whoami.invoke({}))).toMatch(/token #\d+/);
    expect(text(await whoami.invoke({}))).toMatch(/token #\d+/);
    const newGrants = fake.grants.slice(grants);
    expect(newGrants).toHaveLength(1);
    expect(newGrants[0]).toMatchObject({ grant_type: "client_credentials", client_id: fake.clientId, client_secret: fake.clientSecret, scope: "tools" });
  });

  it("answers a 401 from the MCP server by fetching a new token once and retrying the call", async () => {
    const tools = (await newCache().getTools(ext({ secure: clientCredentials() }))) as unknown as Invocable[];
    const whoami = tools.find((t) => t.name === "secure_whoami")!;
    const before = text(await whoami.invoke({}));
    const rejected = fake.rejected;
    fake.revokeAll();
    const after = text(await whoami.invoke({}));
    expect(fake.rejected).toBe(rejected + 1);
    expect(after).not.toBe(before);
    expect(after).toMatch(/token #\d+/);
  });

  it("refreshes a token before it expires (refresh_skew_seconds) with the refresh-token grant, using the rotated refresh token", () => {
    return (async () => {
      let now = 1_000_000;
      fake.expiresIn = 120;
      try {
        const oauth = ext({ s: server({ grant_type: "refresh_token", refresh_token: fake.refreshToken, client_id: "cli", refresh_skew_seconds: 60 }) }).mcpServers.s.oauth!;
        const manager = new OAuthTokenManager("s", oauth, () => now);
        const first = await manager.authorization();
        expect(first).toMatch(/^Bearer access-\d+$/);
        now += 30_000; // 90 s left: more than the skew, the cached token
        expect(await manager.authorization()).toBe(first);
        now += 40_000; // 50 s left: inside the skew, a new token with the refresh token the endpoint rotated
        const second = await manager.authorization();
        expect(second).not.toBe(first);
        const refreshes = fake.grants.filter((g) => g.grant_type === "refresh_token").slice(-2);
        expect(refreshes[0].refresh_token).not.toBe(refreshes[1].refresh_token);
        expect(refreshes[1]).toMatchObject({ client_id: "cli" });
      } finally {
        fake.expiresIn = 3600;
      }
    })();
  });

  it("marks the server unavailable with a logged reason and no secret when the token endpoint answers 500; other servers go on", async () => {
    const logs = captureLogs();
    fake.tokenFailure = 500;
    try {
      const tools = await newCache().getTools(ext({ secure: clientCredentials(), other: { ...clientCredentials(), enabled: false } }));
      expect(tools).toEqual([]);
      const warning = logs.messages().find((m) => m.includes("MCP server 'secure' is unavailable"));
      expect(warning).toContain("answered HTTP 500 (server_error)");
      expect(logs.messages().join("\n")).not.toContain(fake.clientSecret);
    } finally {
      fake.tokenFailure = null;
      logs.restore();
    }
  });
});

describe("upstream's mcpInterceptors", () => {
  it("are named in a warning (Python callables cannot load here), never dropped silently", async () => {
    const logs = captureLogs();
    try {
      await newCache().getTools(ExtensionsConfigSchema.parse({ mcpServers: {}, mcpInterceptors: ["my_pkg.interceptors:build_audit"] }));
      expect(logs.messages().some((m) => m.includes("mcpInterceptors") && m.includes("my_pkg.interceptors:build_audit") && m.includes("not offered"))).toBe(true);
    } finally {
      logs.restore();
    }
  });
});

describe("MCP over OAuth through the gateway", () => {
  const ENV = "DEER_FLOW_EXTENSIONS_CONFIG_PATH";
  const saved = process.env[ENV];
  let work: string;
  let h: Harness;
  beforeAll(async () => {
    work = mkdtempSync(path.join(tmpdir(), "mcp-oauth-"));
    writeFileSync(path.join(work, "extensions_config.json"), JSON.stringify({ mcpServers: { secure: clientCredentials() } }));
    process.env[ENV] = path.join(work, "extensions_config.json");
    h = await startHarness("models:\n  - name: s\n    use: deerflow-gateway:ScriptedChatModel\n    model: s\n");
  });
  afterAll(async () => {
    await h.close();
    await closeMcpClients();
    if (saved === undefined) delete process.env[ENV];
    else process.env[ENV] = saved;
    rmSync(work, { recursive: true, force: true });
  });

  it("runs the OAuth server's tool in a run, and GET /api/mcp/config masks the client secret", async () => {
    const res = await postJson(`${h.url}/runs/stream`, { input: { messages: [{ role: "user", content: "!call secure_whoami {}" }] }, stream_mode: ["values"] });
    const values = parseSse(await res.text()).frames.filter((f) => f.event === "values").at(-1)!.data as { messages: { type: string; content: unknown }[] };
    const toolMessage = values.messages.find((m) => m.type === "tool");
    expect(text(toolMessage?.content)).toMatch(/token #\d+/);
    const config = await (await fetch(`${h.url}/api/mcp/config`)).json();
    expect(config.mcp_servers.secure.oauth).toMatchObject({ token_url: `${fake.url}/oauth/token`, client_id: fake.clientId, client_secret: null });
    expect(JSON.stringify(config)).not.toContain(fake.clientSecret);
  });
});
