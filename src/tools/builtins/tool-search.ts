// Port of DeerFlow tools/builtins/tool_search.py: deferred tools (MCP) behind a `tool_search` tool.
import { createHash } from "node:crypto";
import { ToolMessage } from "@langchain/core/messages";
import type { StructuredToolInterface } from "@langchain/core/tools";
import { convertToOpenAITool } from "@langchain/core/utils/function_calling";
import { Command } from "@langchain/langgraph";
import { tool } from "langchain";
import { z } from "zod";
import { escapePromptText } from "../../agents/prompt-text.js";
import { toolCallIdOf } from "./write-todos.js";
import { compareCodePoints } from "../../code-point-order.js";
import { compileLinearRegex, escapeRegexSource, type LinearRegex } from "../../linear-regex.js";

/** A tool's OpenAI function schema: what `tool_search` returns and what the catalog hash covers. */
export interface FunctionSchema {
  name: string;
  description: string;
  parameters: unknown;
}

/** The function schema of a LangChain tool. */
export function functionSchemaOf(t: StructuredToolInterface): FunctionSchema {
  const fn = convertToOpenAITool(t).function;
  return { name: fn.name, description: fn.description ?? "", parameters: fn.parameters ?? {} };
}

/** Deterministic JSON: object keys sorted at every level. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
  if (value && typeof value === "object") {
    return `{${Object.keys(value as object).sort().map((k) => `${JSON.stringify(k)}:${canonical((value as Record<string, unknown>)[k])}`).join(",")}}`;
  }
  return JSON.stringify(value ?? null);
}

/** First 16 hex chars of SHA-256 over the canonical, name-sorted schema list (promotions are valid per hash). */
export function catalogHash(schemas: readonly FunctionSchema[]): string {
  const sorted = [...schemas].sort((a, b) => compareCodePoints(a.name, b.name));
  return createHash("sha256").update(canonical(sorted)).digest("hex").slice(0, 16);
}

/** The deferred tool catalog of one agent build. */
export interface DeferredCatalog {
  /** Deferred tool names (hidden from the model until promoted). */
  names: Set<string>;
  hash: string;
  schemas: FunctionSchema[];
}

/** Builds the catalog of `tools` (their schemas and hash). */
export function buildDeferredCatalog(tools: readonly StructuredToolInterface[]): DeferredCatalog {
  const schemas = tools.map(functionSchemaOf);
  return { names: new Set(schemas.map((s) => s.name)), hash: catalogHash(schemas), schemas };
}

/**
 * Finds deferred tools for a query, at most `limit` (except `select:`): `select:a,b` picks exact names; `+req rest`
 * keeps names containing `req`, ranked by how many words of `rest` the name and description contain; anything
 * else is a case-insensitive regular expression (RE2, linear time: a literal match when it does not compile) over
 * name and description, name matches first.
 */
export function searchCatalog(schemas: readonly FunctionSchema[], query: string, limit = 5): FunctionSchema[] {
  const q = query.trim();
  if (q.toLowerCase().startsWith("select:")) {
    const wanted = q.slice(7).split(",").map((s) => s.trim()).filter(Boolean);
    return wanted.map((n) => schemas.find((s) => s.name === n)).filter((s): s is FunctionSchema => Boolean(s));
  }
  if (q.startsWith("+")) {
    const [req, ...rest] = q.slice(1).split(/\s+/);
    const words = rest.map((w) => w.toLowerCase()).filter(Boolean);
    const score = (s: FunctionSchema) => words.filter((w) => `${s.name} ${s.description}`.toLowerCase().includes(w)).length;
    return schemas.filter((s) => s.name.toLowerCase().includes(req.toLowerCase())).sort((a, b) => score(b) - score(a)).slice(0, limit);
  }
  let re: LinearRegex;
  try {
    re = compileLinearRegex(q, true);
  } catch {
    re = compileLinearRegex(escapeRegexSource(q), true);
  }
  const byName = schemas.filter((s) => re.test(s.name));
  const byDescription = schemas.filter((s) => !byName.includes(s) && re.test(s.description));
  return [...byName, ...byDescription].slice(0, limit);
}

/**
 * Creates `tool_search` over a deferred catalog. It answers with the matching tools' function schemas (JSON) or
 * "No tools found matching: <query>", and promotes the matches (`promoted = {catalog_hash, names}`), so
 * DeferredToolFilterMiddleware binds them from the next model call on.
 * @param limit Most results of a non-`select:` query (`tool_search.auto_promote_top_k`, 1-5).
 */
export function createToolSearchTool(catalog: DeferredCatalog, limit = 5) {
  return tool(
    async ({ query }, config) => {
      const found = searchCatalog(catalog.schemas, query, limit);
      const id = toolCallIdOf(config);
      if (!found.length) return new ToolMessage({ content: `No tools found matching: ${query}`, tool_call_id: id, name: "tool_search" });
      return new Command({
        update: {
          promoted: { catalog_hash: catalog.hash, names: found.map((s) => s.name) },
          messages: [new ToolMessage({ content: JSON.stringify(found.map((s) => ({ type: "function", function: s }))), tool_call_id: id, name: "tool_search" })],
        },
      });
    },
    {
      name: "tool_search",
      description:
        "Load deferred tools (listed in <available-deferred-tools>) so you can call them. Query with `select:name1,name2` " +
        "for exact names, `+keyword more words` to require a keyword in the name, or a regular expression. Matching tools " +
        "become callable from your next step.",
      schema: z.object({ query: z.string().describe("select:a,b | +required other words | regex") }),
    },
  );
}

/** The `<available-deferred-tools>` prompt section: sorted, escaped names one per line; "" when none. */
export function deferredToolsSection(names: Iterable<string>): string {
  const sorted = [...names].sort();
  if (!sorted.length) return "";
  return ["<available-deferred-tools>", ...sorted.map(escapePromptText), "</available-deferred-tools>"].join("\n");
}
