import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { ExtensionsConfigSchema } from "../../src/config/extensions-config.js";
import { parseAppConfig } from "../../src/config/schema.js";
import { getAvailableTools } from "../../src/tools/get-available-tools.js";
import { isMcpTool, MCP_RETRY_AFTER_MS, McpToolCache, toConnection } from "../../src/tools/mcp-tools.js";
import { captureLogs } from "../support/capture-logs.js";

const SERVER = path.resolve("test/tools/fixtures/mcp-echo-server.mjs");
const stdio = (extra: Record<string, unknown> = {}) => ({ type: "stdio", command: process.execPath, args: [SERVER], ...extra });
const ext = (servers: Record<string, unknown>) => ExtensionsConfigSchema.parse({ mcpServers: servers });
const cache = new McpToolCache();
afterAll(() => cache.close());

type Invocable = { name: string; invoke(input: unknown): Promise<unknown>; metadata?: Record<string, unknown> };
const text = (out: unknown) => (typeof out === "string" ? out : JSON.stringify(out));

describe("MCP tools from a real stdio server (config.md §11)", () => {
  it("loads the tools of an enabled server, prefixed with the server name and tagged as MCP", async () => {
    const tools = (await cache.getTools(ext({ files: stdio({ env: { ECHO_TAG: "one" } }) }))) as unknown as Invocable[];
    expect(tools.map((t) => t.name)).toEqual(["files_echo", "files_add"]);
    expect(tools.every(isMcpTool)).toBe(true);
    expect(tools[0].metadata).toMatchObject({ mcp_server: "files", mcp_tool: "echo" });
    expect(text(await tools[0].invoke({ text: "hello" }))).toContain("one: hello");
    expect(text(await tools[1].invoke({ a: 2, b: 3 }))).toContain("5");
  });

  it("keeps the connection while the entry is unchanged and reconnects when it changes", async () => {
    const config = ext({ files: stdio({ env: { ECHO_TAG: "one" } }) });
    const first = await cache.getTools(config);
    const again = await cache.getTools(ext({ files: stdio({ env: { ECHO_TAG: "one" } }) }));
    expect(again[0]).toBe(first[0]);
    const changed = (await cache.getTools(ext({ files: stdio({ env: { ECHO_TAG: "two" } }) }))) as unknown as Invocable[];
    expect(changed[0]).not.toBe(first[0]);
    expect(text(await changed[0].invoke({ text: "x" }))).toContain("two: x");
  });

  it("skips a broken server with a warning naming it, keeps the others, and never throws", async () => {
    const logs = captureLogs();
    try {
      const tools = await cache.getTools(ext({
        broken: { type: "stdio", command: process.execPath, args: ["-e", "process.exit(3)"] },
        nowhere: { type: "stdio", command: "/definitely/not/a/command" },
        files: stdio({ tool_name_prefix: false }),
        off: { ...stdio(), enabled: false },
      }));
      expect(tools.map((t) => t.name)).toEqual(["echo", "add"]);
      const warnings = logs.messages().filter((m) => m.includes("is unavailable"));
      expect(warnings.some((m) => m.includes("MCP server 'broken'"))).toBe(true);
      expect(warnings.some((m) => m.includes("MCP server 'nowhere'"))).toBe(true);
    } finally {
      logs.restore();
    }
  });

  it("retries a failed server in the background only after MCP_RETRY_AFTER_MS", async () => {
    let now = 0;
    const timed = new McpToolCache(() => now);
    const logs = captureLogs();
    try {
      const broken = ext({ broken: { type: "stdio", command: process.execPath, args: ["-e", "process.exit(3)"] } });
      const attempts = () => logs.messages().filter((m) => m.includes("MCP server 'broken' is unavailable")).length;
      await timed.getTools(broken);
      now = 1_000;
      await timed.getTools(broken);
      expect(attempts()).toBe(1);
      now = 1 + MCP_RETRY_AFTER_MS;
      expect(await timed.getTools(broken)).toEqual([]);
      await timed.settled();
      expect(attempts()).toBe(2);
    } finally {
      logs.restore();
      await timed.close();
    }
  });

  it("maps DeerFlow transports and rejects incomplete entries naming the server", () => {
    const server = (raw: Record<string, unknown>) => ext({ s: raw }).mcpServers.s;
    expect(toConnection("s", server({ type: "streamable_http", url: "http://x/mcp", headers: { a: "b" } }))).toMatchObject({ transport: "http", url: "http://x/mcp" });
    expect(toConnection("s", server({ transport: "sse", url: "http://x/sse" }))).toMatchObject({ transport: "sse" });
    expect(toConnection("s", server({ command: "node", tool_call_timeout: 5 }))).toMatchObject({ transport: "stdio", defaultToolTimeout: 5000 });
    expect(() => toConnection("web", server({ type: "http" }))).toThrow("MCP server 'web' (http) has no url");
    expect(() => toConnection("odd", server({ type: "carrier-pigeon", url: "x" }))).toThrow("unsupported type 'carrier-pigeon'");
  });

  it("puts MCP tools after the configured tools and built-ins in getAvailableTools", async () => {
    const names = (await getAvailableTools({ appConfig: parseAppConfig({}), extensions: ext({ files: stdio({ env: { ECHO_TAG: "two" } }) }), mcpCache: cache })).map((t) => t.name);
    expect(names).toEqual(["present_files", "ask_clarification", "list_uploaded_files", "files_echo", "files_add"]);
    const without = (await getAvailableTools({ appConfig: parseAppConfig({}), includeMcp: false, extensions: ext({ files: stdio() }), mcpCache: cache })).map((t) => t.name);
    expect(without).toEqual(["present_files", "ask_clarification", "list_uploaded_files"]);
  });
});
