// Port of DeerFlow mcp/tools.py + mcp/cache.py: MCP tools through @langchain/mcp-adapters, cached by config content.
import { createHash } from "node:crypto";
import { DynamicStructuredTool, type StructuredToolInterface } from "@langchain/core/tools";
import type { Connection } from "@langchain/mcp-adapters";
import { runContextOf, type RuntimeLike } from "../agents/run-context.js";
import type { ExtensionsConfig, McpServerConfig } from "../config/extensions-config.js";
import { getLogger } from "../logger.js";
import { connectOAuthClient } from "./mcp-oauth.js";
import { McpSessionPool, type PooledSession } from "./mcp-session-pool.js";

/** How long a server that failed to start is left alone before the next build tries again, in ms. */
export const MCP_RETRY_AFTER_MS = 30_000;

/** Metadata key that marks a tool as coming from an MCP server (its value is the server name). */
export const MCP_SERVER_METADATA_KEY = "mcp_server";

/** True for a tool loaded from an MCP server. */
export function isMcpTool(t: unknown): boolean {
  const md = (t as { metadata?: Record<string, unknown> } | null)?.metadata;
  return typeof md?.[MCP_SERVER_METADATA_KEY] === "string";
}

/**
 * The adapter connection for one server entry: `stdio` (command, args, env merged over the MCP SDK's safe default
 * environment) or `http` / `sse` (`streamable_http` and `streamable-http` mean `http`) with url and headers.
 * @throws Error naming the server for an unknown transport or a missing command/url.
 */
export function toConnection(name: string, server: McpServerConfig): Connection {
  const type = server.type.toLowerCase().replace(/-/g, "_");
  const timeout = server.tool_call_timeout ? { defaultToolTimeout: server.tool_call_timeout * 1000 } : {};
  if (type === "stdio") {
    if (!server.command) throw new Error(`MCP server '${name}' (stdio) has no command`);
    return { transport: "stdio", command: server.command, args: server.args, env: server.env, stderr: "inherit", ...timeout } as Connection;
  }
  if (type === "http" || type === "streamable_http" || type === "sse") {
    if (!server.url) throw new Error(`MCP server '${name}' (${server.type}) has no url`);
    return { transport: type === "sse" ? "sse" : "http", url: server.url, headers: server.headers, ...timeout } as Connection;
  }
  throw new Error(`MCP server '${name}' has unsupported type '${server.type}' (expected stdio, http or sse)`);
}

/** The MCP SDK client type (a type import: the SDK is loaded on the first configured server). */
export type SdkClient = import("@modelcontextprotocol/sdk/client/index.js").Client;

let interceptorsWarned = "";
/**
 * Upstream's `mcpInterceptors` (Python callables wrapping every MCP tool call) cannot load here: a warning naming
 * them, once per distinct value, so the file's setting is never dropped silently. OAuth, upstream's built-in
 * interceptor, is the server's `oauth` block.
 */
function warnInterceptors(extensions: ExtensionsConfig): void {
  const raw = (extensions as Record<string, unknown>).mcpInterceptors;
  const value = raw == null || (Array.isArray(raw) && raw.length === 0) ? "" : JSON.stringify(raw);
  if (value && value !== interceptorsWarned) {
    getLogger().warn({ mcpInterceptors: raw }, `extensions_config.json mcpInterceptors ${value} are not offered by deerflow-gateway (Python callables) and are not applied; OAuth goes in each server's oauth block`);
  }
  interceptorsWarned = value;
}

/** An open connection to one server: something to close, its SDK client, its tools (raw names). */
interface Opened {
  client: { close(): Promise<void> };
  sdk: SdkClient | null;
  tools: StructuredToolInterface[];
}

interface ServerEntry {
  key: string;
  client: { close(): Promise<void> } | null;
  sdk?: SdkClient | null;
  tools: Promise<StructuredToolInterface[]>;
  /** Set once the connection attempt has finished. */
  settled: boolean;
  /** A retry: builds do not wait for it (they go without the server until it is up). */
  background: boolean;
  failedAt?: number;
}

/**
 * MCP tools of the enabled servers in an extensions config, one adapter client per server. A server's client is
 * kept while its entry (after `$VAR` substitution) is byte-identical, so the config can be re-read on every agent
 * build at no cost; an edited, disabled or removed server is closed. A server that cannot start or list its tools
 * (bad command, crash, timeout after `session_init_timeout` seconds) is logged as a warning naming it and skipped,
 * so runs that do not need it are unaffected; it is retried after {@link MCP_RETRY_AFTER_MS} in the background
 * (builds go on without it until it is up), or at once when its entry changes. Tool names are `<server>_<tool>` when `tool_name_prefix` is on (the default) and carry
 * `metadata.mcp_server`. Concurrent builds share one connection attempt.
 *
 * Stateful servers get a session per thread (upstream session_pool.py): a stdio server, and a streamable HTTP
 * server that answered the first connection with an `Mcp-Session-Id`, run each tool call of a thread on that
 * thread's own session (`<user_id>:<thread_id>`, see {@link McpSessionPool}); a call outside any thread, and a
 * stateless server, use the shared connection.
 */
export class McpToolCache {
  private readonly servers = new Map<string, ServerEntry>();
  /** The per-thread sessions of stateful servers. */
  readonly pool: McpSessionPool;

  /**
   * @param now Clock for the retry delay and the pool's idle time (tests).
   * @param pool Bounds of the session pool (tests); upstream's by default.
   */
  constructor(private readonly now: () => number = Date.now, pool: { maxSessions?: number; idleMs?: number } = {}) {
    this.pool = new McpSessionPool({ ...pool, now });
  }

  /** The tools of every enabled server, in server order; never throws. */
  async getTools(extensions: ExtensionsConfig): Promise<StructuredToolInterface[]> {
    warnInterceptors(extensions);
    const enabled = Object.entries(extensions.mcpServers).filter(([, s]) => s.enabled);
    const names = new Set(enabled.map(([n]) => n));
    for (const [name, entry] of this.servers) if (!names.has(name)) this.drop(name, entry);
    const lists = await Promise.all(enabled.map(([name, server]) => this.serverTools(name, server)));
    return lists.flat();
  }

  private drop(name: string, entry: ServerEntry): void {
    this.servers.delete(name);
    this.pool.closeServer(name);
    void entry.client?.close().catch(() => undefined);
  }

  private serverTools(name: string, server: McpServerConfig): Promise<StructuredToolInterface[]> {
    const key = createHash("sha256").update(JSON.stringify(server)).digest("hex");
    const existing = this.servers.get(name);
    if (existing && existing.key === key) {
      if (existing.background && !existing.settled) return Promise.resolve([]);
      if (existing.failedAt === undefined || this.now() - existing.failedAt < MCP_RETRY_AFTER_MS) return existing.tools;
    }
    // A retry of the same entry runs in the background, so a server that hangs delays one build at most.
    const retry = Boolean(existing && existing.key === key);
    if (existing) this.drop(name, existing);
    const entry: ServerEntry = { key, client: null, tools: Promise.resolve([]), settled: false, background: retry };
    entry.tools = this.connect(name, server, entry).finally(() => void (entry.settled = true));
    this.servers.set(name, entry);
    return retry ? Promise.resolve([]) : entry.tools;
  }

  /** Resolves when every connection attempt in flight has finished (tests, warm-up). */
  async settled(): Promise<void> {
    await Promise.all([...this.servers.values()].map((e) => e.tools));
  }

  private async connect(name: string, server: McpServerConfig, entry: ServerEntry): Promise<StructuredToolInterface[]> {
    let timer: NodeJS.Timeout | undefined;
    try {
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer within session_init_timeout (${server.session_init_timeout} s)`)), server.session_init_timeout * 1000);
        timer.unref?.();
      });
      let tools = (await Promise.race([this.open(name, server, entry), timeout])) as StructuredToolInterface[];
      for (const t of tools) {
        const original = t.name;
        if (server.tool_name_prefix) (t as { name: string }).name = `${name}_${original}`;
        const holder = t as unknown as { metadata?: Record<string, unknown> };
        holder.metadata = { ...(holder.metadata ?? {}), [MCP_SERVER_METADATA_KEY]: name, mcp_tool: original };
      }
      const stateful = isStateful(server, entry.sdk);
      if (stateful) tools = tools.map((t) => this.perThread(name, server, t));
      getLogger().info({ server: name, tools: tools.map((t) => t.name), session_per_thread: stateful }, `MCP server '${name}' connected with ${tools.length} tool(s)`);
      return tools;
    } catch (err) {
      entry.failedAt = this.now();
      const message = (err as Error).message?.split("\n")[0] ?? String(err);
      getLogger().warn({ server: name, err: message }, `MCP server '${name}' is unavailable, its tools are skipped: ${message}`);
      void entry.client?.close().catch(() => undefined);
      entry.client = null;
      entry.sdk = null;
      return [];
    } finally {
      if (timer) clearTimeout(timer);
    }
  }

  /** Opens the server's client on `entry` and lists its tools ({@link openClient}); a dropped entry gets none. */
  private async open(name: string, server: McpServerConfig, entry: ServerEntry): Promise<StructuredToolInterface[]> {
    const opened = await openClient(name, server);
    entry.client = opened.client;
    entry.sdk = opened.sdk;
    // Dropped (entry edited or removed, cache closed) or timed out while connecting: no client to leak.
    if (this.servers.get(name) !== entry || entry.failedAt !== undefined) return opened.client.close().then(() => []);
    return opened.tools;
  }

  /**
   * The tool as one that runs on the calling thread's own session of the server: opened on the thread's first
   * call (its own connection, its own tools/list), kept in {@link pool}. Without a thread in the run context the
   * shared connection's tool runs.
   */
  private perThread(name: string, server: McpServerConfig, shared: StructuredToolInterface): StructuredToolInterface {
    const raw = String((shared as { metadata?: Record<string, unknown> }).metadata?.mcp_tool ?? shared.name);
    const call = (t: unknown, args: unknown, runManager: unknown, config: unknown) => (t as { func: (...a: unknown[]) => Promise<unknown> }).func(args, runManager, config);
    return new DynamicStructuredTool({
      name: shared.name,
      description: shared.description,
      schema: shared.schema as never,
      responseFormat: (shared as { responseFormat?: "content" | "content_and_artifact" }).responseFormat,
      metadata: (shared as { metadata?: Record<string, unknown> }).metadata,
      func: async (args, runManager, config) => {
        const { userId, threadId } = runContextOf(config as RuntimeLike);
        if (!threadId) return call(shared, args, runManager, config);
        const open = async (): Promise<PooledSession> => {
          const opened = await openClient(name, server);
          getLogger().info({ server: name, thread_id: threadId }, `MCP server '${name}': opened a session for a thread`);
          return { tools: new Map(opened.tools.map((t) => [t.name, t])), close: () => opened.client.close() };
        };
        return this.pool.use(name, `${userId}:${threadId}`, open, async (session) => {
          const tool = session.tools.get(raw);
          if (!tool) throw new Error(`MCP server '${name}' has no tool '${raw}' in this thread's session`);
          return call(tool, args, runManager, config);
        });
      },
    }) as unknown as StructuredToolInterface;
  }

  /**
   * The raw MCP SDK client of a connected server (background tasks call submit/status/cancel tools through it, to
   * read `structuredContent`), or null when the server is not connected.
   */
  async sdkClient(name: string): Promise<SdkClient | null> {
    const entry = this.servers.get(name);
    if (!entry) return null;
    await entry.tools;
    return entry.sdk ?? null;
  }

  /** Closes every client and pooled session (stdio servers are stopped). */
  async close(): Promise<void> {
    const entries = [...this.servers.values()];
    this.servers.clear();
    await Promise.all([this.pool.closeAll(), ...entries.map((e) => e.client?.close().catch(() => undefined))]);
  }
}

/**
 * A stateful server gets a session per thread: stdio (each session is its own process, as upstream pools), and
 * streamable HTTP when the server gave the first connection an `Mcp-Session-Id` (a stateless server gives none).
 */
function isStateful(server: McpServerConfig, sdk: SdkClient | null | undefined): boolean {
  const type = server.type.toLowerCase().replace(/-/g, "_");
  if (type === "stdio") return true;
  if (type !== "http" && type !== "streamable_http") return false;
  return typeof (sdk?.transport as { sessionId?: unknown } | undefined)?.sessionId === "string";
}

/**
 * Connects to one server and lists its tools (raw names, standard adapter conversion): through the MCP adapters'
 * client, or, for an http/sse server with an enabled `oauth` block, through an SDK client whose requests carry the
 * OAuth token. @throws Error for a bad entry, a failed connection or a failed listing.
 */
async function openClient(name: string, server: McpServerConfig): Promise<Opened> {
  // Imported on the first configured server: the adapters and the MCP SDK hold ~20 MB of RSS.
  const { MultiServerMCPClient, loadMcpTools } = await import("@langchain/mcp-adapters");
  const connection = toConnection(name, server) as { transport: string; url?: string; headers?: Record<string, string> };
  if (server.oauth?.enabled) {
    if (connection.transport === "stdio") throw new Error("an oauth block applies to http and sse servers only");
    const opened = await connectOAuthClient(name, connection.transport as "http" | "sse", connection.url ?? "", connection.headers ?? {}, server.oauth);
    try {
      const tools = await loadMcpTools(name, opened.client as never, {
        throwOnLoadError: false, prefixToolNameWithServerName: false, useStandardContentBlocks: false,
        ...(server.tool_call_timeout ? { defaultToolTimeout: server.tool_call_timeout * 1000 } : {}),
      });
      return { client: opened, sdk: opened.client, tools };
    } catch (err) {
      await opened.close().catch(() => undefined);
      throw err;
    }
  }
  const client = new MultiServerMCPClient({
    mcpServers: { [name]: connection as Connection },
    onConnectionError: "throw",
    throwOnLoadError: false,
    prefixToolNameWithServerName: false,
    useStandardContentBlocks: false,
  });
  try {
    const tools = await client.getTools();
    return { client, sdk: ((await client.getClient(name)) as SdkClient | undefined) ?? null, tools };
  } catch (err) {
    await client.close().catch(() => undefined);
    throw err;
  }
}

/** The process-wide MCP cache used by the lead agent (its connections live as long as the process). */
export const sharedMcpToolCache = new McpToolCache();

/** Closes the shared MCP clients (server shutdown, tests). */
export function closeMcpClients(): Promise<void> {
  return sharedMcpToolCache.close();
}

/** Hex SHA-256 of a text (the content signature of a config file). */
export function contentSignature(text: string): string {
  return createHash("sha256").update(text).digest("hex");
}
