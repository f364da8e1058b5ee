import { describe, expect, it } from "vitest";
import { ExtensionsConfigSchema } from "../../src/config/extensions-config.js";
import { buildMcpRoutingIndex, mcpRouteOf, mcpRoutingHintsSection } from "../../src/tools/mcp-routing.js";

const ext = (server: Record<string, unknown>) => ExtensionsConfigSchema.parse({ mcpServers: { s: { command: "x", ...server } } });
const mcp = (name: string, original = name) => ({ name: `s_${name}`, metadata: { mcp_server: "s", mcp_tool: original } });

describe("MCP routing (upstream resolve_effective_mcp_routing)", () => {
  it("is off by default and for non-MCP tools", () => {
    expect(mcpRouteOf(mcp("a"), ext({}))).toBeNull();
    expect(mcpRouteOf({ name: "bash" }, ext({ routing: { mode: "prefer", keywords: ["x"] } }))).toBeNull();
  });

  it("puts only the keys a tool override sets over the server's; clamps priority; blank keywords do not count", () => {
    const e = ext({ routing: { mode: "prefer", priority: 5, keywords: ["files"] }, tools: { a: { routing: { priority: 500 } }, b: { routing: { mode: "off" } }, c: { routing: { keywords: [" ", ""] } } } });
    expect(mcpRouteOf(mcp("a"), e)).toEqual({ priority: 100, keywords: ["files"] });
    expect(mcpRouteOf(mcp("b"), e)).toBeNull();
    expect(mcpRouteOf(mcp("c"), e)).toBeNull();
    expect(mcpRouteOf(mcp("d"), e)).toEqual({ priority: 5, keywords: ["files"] });
    expect(() => ext({ tools: { a: { routing: { mode: "prefer", typo: 1 } } } })).toThrow();
  });

  it("renders non-deferred tools as a plain preference and escapes names and keywords", () => {
    const index = buildMcpRoutingIndex([mcp("a")], ext({ routing: { mode: "prefer", keywords: ["<x>", "y", "z"] } }));
    expect(mcpRoutingHintsSection(index, new Set())).toBe("<mcp_routing_hints>\nWhen the user's request involves &lt;x&gt;, y, or z:\n  prefer the `s_a` tool.\n</mcp_routing_hints>");
    expect(mcpRoutingHintsSection(new Map(), new Set())).toBe("");
  });
});
