import { ToolMessage } from "@langchain/core/messages";
import { isCommand } from "@langchain/langgraph";
import { tool } from "langchain";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { DeferredToolFilterMiddleware } from "../../../src/agents/middlewares/deferred-tool-filter.js";
import { buildDeferredCatalog, catalogHash, createToolSearchTool, deferredToolsSection, searchCatalog } from "../../../src/tools/builtins/tool-search.js";

const mk = (name: string, description = `${name} tool`) => tool(async () => name, { name, description, schema: z.object({ q: z.string().optional() }) });
const [a, b, c] = [mk("mcp_a", "query the orders table"), mk("mcp_b", "send an email"), mk("active_c")];

describe("DeferredToolFilterMiddleware (agent-factory.md §6.17, AF-065)", () => {
  const mw = new DeferredToolFilterMiddleware(["mcp_a", "mcp_b"], "h1");
  const bound = async (promoted: unknown) => {
    let names: string[] = [];
    await mw.wrapModelCall({ tools: [a, b, c], messages: [], state: { promoted } } as never, (async (r: { tools: { name: string }[] }) => {
      names = r.tools.map((t) => t.name);
    }) as never);
    return names;
  };

  it("binds deferred tools only once promoted under the same catalog hash", async () => {
    expect(await bound(null)).toEqual(["active_c"]);
    expect(await bound({ catalog_hash: "h1", names: ["mcp_a"] })).toEqual(["mcp_a", "active_c"]);
    expect(await bound({ catalog_hash: "STALE", names: ["mcp_a"] })).toEqual(["active_c"]);
  });

  it("answers a call to a hidden deferred tool with an error naming tool_search, and lets others through", async () => {
    const handler = (async () => new ToolMessage({ content: "ran", tool_call_id: "x" })) as never;
    const hidden = (await mw.wrapToolCall({ toolCall: { name: "mcp_a", args: {}, id: "c1" }, state: { promoted: null } } as never, handler)) as ToolMessage;
    expect(hidden.status).toBe("error");
    expect(String(hidden.content)).toContain("tool_search");
    const promoted = (await mw.wrapToolCall({ toolCall: { name: "mcp_a", args: {}, id: "c2" }, state: { promoted: { catalog_hash: "h1", names: ["mcp_a"] } } } as never, handler)) as ToolMessage;
    expect(promoted.content).toBe("ran");
    expect(((await mw.wrapToolCall({ toolCall: { name: "active_c", args: {}, id: "c3" }, state: {} } as never, handler)) as ToolMessage).content).toBe("ran");
  });

  it("leaves the request untouched with no deferred names", async () => {
    const empty = new DeferredToolFilterMiddleware([], "h");
    let tools: unknown[] = [];
    await empty.wrapModelCall({ tools: [a, b], messages: [], state: {} } as never, (async (r: { tools: unknown[] }) => void (tools = r.tools)) as never);
    expect(tools).toEqual([a, b]);
  });
});

describe("tool_search", () => {
  const catalog = buildDeferredCatalog([a, b]);

  it("hashes the catalog independently of order", () => {
    expect(catalog.hash).toMatch(/^[0-9a-f]{16}$/);
    expect(buildDeferredCatalog([b, a]).hash).toBe(catalog.hash);
    expect(catalogHash([])).not.toBe(catalog.hash);
  });

  it("finds tools by select:, +required and regex queries", () => {
    expect(searchCatalog(catalog.schemas, "select:mcp_b,mcp_a,nope").map((s) => s.name)).toEqual(["mcp_b", "mcp_a"]);
    expect(searchCatalog(catalog.schemas, "+mcp email").map((s) => s.name)).toEqual(["mcp_b", "mcp_a"]);
    expect(searchCatalog(catalog.schemas, "ORDERS").map((s) => s.name)).toEqual(["mcp_a"]);
    expect(searchCatalog(catalog.schemas, "mcp_[").map((s) => s.name)).toEqual([]);
  });

  it("promotes what it finds and returns the function schemas", async () => {
    const ts = createToolSearchTool(catalog);
    const found = await ts.invoke({ name: "tool_search", args: { query: "select:mcp_a" }, id: "s1", type: "tool_call" });
    expect(isCommand(found)).toBe(true);
    const update = (found as unknown as { update: { promoted: unknown; messages: ToolMessage[] } }).update;
    expect(update.promoted).toEqual({ catalog_hash: catalog.hash, names: ["mcp_a"] });
    expect(JSON.parse(String(update.messages[0].content))[0].function.name).toBe("mcp_a");
    const none = (await ts.invoke({ name: "tool_search", args: { query: "zzz" }, id: "s2", type: "tool_call" })) as ToolMessage;
    expect(none.content).toBe("No tools found matching: zzz");
  });

  it("lists deferred names sorted in the prompt section", () => {
    expect(deferredToolsSection(["b<x>", "a"])).toBe("<available-deferred-tools>\na\nb&lt;x&gt;\n</available-deferred-tools>");
    expect(deferredToolsSection([])).toBe("");
  });
});
