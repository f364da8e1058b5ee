// Port of DeerFlow agents/memory/tools.py (memory tool mode: memory_search, memory_add, memory_update,
// memory_delete), over the MemoryManager contract.
import { tool } from "langchain";
import { z } from "zod";
import { defaultMemoryManager } from "../../agents/memory/deermem-manager.js";
import { MemoryFactNotFoundError, MemoryUnsupportedError, type MemoryManager, type MemoryScope } from "../../agents/memory/manager.js";
import { factKey } from "../../agents/memory/memory-document.js";
import { runContextOf, type RuntimeLike } from "../../agents/run-context.js";
import { getLogger } from "../../logger.js";

/** Names of the memory tools, in the order they are registered. */
export const MEMORY_TOOL_NAMES = ["memory_search", "memory_add", "memory_update", "memory_delete"] as const;

/** Options of {@link createMemoryTools}. */
export interface MemoryToolsOptions {
  /** Memory bucket (the agent's name; `default` for the default agent). */
  agentName: string;
  /** Backend; default the run's manager (run context), else the process-wide default backend. */
  manager?: MemoryManager;
}

const json = (value: unknown) => JSON.stringify(value);

// Built once per process: zod compiles a parser per schema instance, and tools are created per agent build.
const SearchArgs = z.object({ query: z.string().describe("Words to look for in the facts (case-insensitive)"), category: z.string().nullish().describe("Only facts of this category, e.g. preference, correction, context"), limit: z.number().int().min(1).max(50).default(10) });
const AddArgs = z.object({ content: z.string().describe("The fact, specific and factual"), category: z.string().default("context").describe("preference, correction, behavior, knowledge, goal or context"), confidence: z.number().min(0).max(1).default(0.7).describe("0.9+ for explicit statements, lower for inferences") });
const UpdateArgs = z.object({ fact_id: z.string(), content: z.string().min(1).nullish(), category: z.string().nullish(), confidence: z.number().min(0).max(1).nullish() });
const DeleteArgs = z.object({ fact_id: z.string() });

type Operation = "search" | "createFact" | "updateFact" | "deleteFact" | "getMemory";

/** The backend's implementation of `op`. @throws MemoryUnsupportedError when the backend lacks it. */
function need<K extends Operation>(manager: MemoryManager, op: K): NonNullable<MemoryManager[K]> {
  const fn = manager[op];
  if (typeof fn !== "function") throw new MemoryUnsupportedError(manager.name, op);
  return fn as NonNullable<MemoryManager[K]>;
}

/**
 * Creates the four memory tools over one agent's memory, through the memory manager (so they work with any backend
 * that implements the operations; others answer a JSON error). Every tool answers JSON, as upstream:
 * `memory_search` → `{results, count}` (facts containing every query word, highest confidence first, optional
 * `category` filter, `limit` 1-50, default 10); `memory_add` → `{fact_id, status: "added"}` (`{error}` for a
 * duplicate or empty text); `memory_update` / `memory_delete` → `{fact_id, status}` or `{error: "Fact not found: <id>"}`.
 * The user comes from the runtime context (`user_id`).
 */
export function createMemoryTools(options: MemoryToolsOptions) {
  const scopeOf = (config: unknown): { manager: MemoryManager; scope: MemoryScope } => {
    const ctx = runContextOf(config as RuntimeLike);
    return { manager: options.manager ?? ctx.memoryManager ?? defaultMemoryManager(), scope: { userId: ctx.userId, agentName: options.agentName } };
  };
  const guard = async (name: string, fn: () => Promise<string>, factId?: string): Promise<string> => {
    try {
      return await fn();
    } catch (err) {
      if (err instanceof MemoryFactNotFoundError) return json({ error: `Fact not found: ${factId}` });
      if (!(err instanceof MemoryUnsupportedError)) getLogger().warn({ tool: name, err: (err as Error).message }, "memory tool failed");
      return json({ error: (err as Error).message });
    }
  };
  const search = tool(
    async ({ query, category, limit }, config) => {
      const { manager, scope } = scopeOf(config);
      return guard("memory_search", async () => {
        const results = await need(manager, "search").call(manager, scope, query, { topK: limit, category });
        return json({ results, count: results.length });
      });
    },
    {
      name: "memory_search",
      description: "Search what you already know about the user (preferences, corrections, context). Returns JSON {results, count}; each fact has id, content, category, confidence, createdAt and source.",
      schema: SearchArgs,
    },
  );
  const add = tool(
    async ({ content, category, confidence }, config) => {
      const { manager, scope } = scopeOf(config);
      return guard("memory_add", async () => {
        const text = content.trim();
        if (!text) return json({ error: "empty content" });
        const existing = manager.getMemory ? (await manager.getMemory(scope)).facts : [];
        if (existing.some((f) => factKey(f.content) === factKey(text))) return json({ error: "Duplicate fact" });
        const { factId } = await need(manager, "createFact").call(manager, scope, { content: text, category, confidence });
        if (factId === null) return json({ error: "Fact was not stored because the configured memory.max_facts capacity policy evicted it" });
        return json({ fact_id: factId, status: "added" });
      });
    },
    {
      name: "memory_add",
      description: "Remember a durable fact about the user (preference, correction, personal or work context) for future conversations. Returns JSON {fact_id, status}.",
      schema: AddArgs,
    },
  );
  const update = tool(
    async ({ fact_id, content, category, confidence }, config) => {
      const { manager, scope } = scopeOf(config);
      return guard("memory_update", async () => {
        await need(manager, "updateFact").call(manager, scope, fact_id, { content, category, confidence });
        return json({ fact_id, status: "updated" });
      }, fact_id);
    },
    {
      name: "memory_update",
      description: "Update a stored fact by id (from memory_search); omitted fields stay as they are. Returns JSON {fact_id, status}.",
      schema: UpdateArgs,
    },
  );
  const remove = tool(
    async ({ fact_id }, config) => {
      const { manager, scope } = scopeOf(config);
      return guard("memory_delete", async () => {
        await need(manager, "deleteFact").call(manager, scope, fact_id);
        return json({ fact_id, status: "deleted" });
      }, fact_id);
    },
    { name: "memory_delete", description: "Forget a stored fact by id (from memory_search). Returns JSON {fact_id, status}.", schema: DeleteArgs },
  );
  return [search, add, update, remove] as const;
}
