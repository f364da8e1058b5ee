// Port of DeerFlow's memory tools (tool mode: memory_search, memory_add, memory_update, memory_delete), over the
// file-backed memory store.
import { tool } from "langchain";
import { z } from "zod";
import { FileMemoryStore, type MemoryFact } from "../../agents/memory/file-memory-store.js";
import { runContextOf, type RuntimeLike } from "../../agents/run-context.js";

/** Names of the memory tools, in the order they are registered. */
export const MEMORY_TOOL_NAMES = ["memory_search", "memory_add", "memory_update", "memory_delete"] as const;

/** Options of {@link createMemoryTools}. */
export interface MemoryToolsOptions {
  /** Memory bucket (the agent's name; `default` for the default agent). */
  agentName: string;
  store?: FileMemoryStore;
}

function userOf(config: unknown): string {
  return runContextOf(config as RuntimeLike).userId;
}

const describe = (f: MemoryFact) => `[${f.id}]${f.category ? ` (${f.category})` : ""} ${f.content}`;

/**
 * Creates the four memory tools over one agent's memory file: `memory_search` (case-insensitive match of every
 * query word, at most `limit` facts, newest first), `memory_add`, `memory_update` and `memory_delete` (by fact id).
 * The user comes from the runtime context (`user_id`, default `default`). Unknown ids answer "Error: ...".
 */
export function createMemoryTools(options: MemoryToolsOptions) {
  const store = options.store ?? new FileMemoryStore();
  const agent = options.agentName;
  const search = tool(
    async ({ query, limit }, config) => {
      const words = query.toLowerCase().split(/\s+/).filter(Boolean);
      const facts = store.load(userOf(config), agent).facts
        .filter((f) => words.every((w) => `${f.content} ${f.category ?? ""}`.toLowerCase().includes(w)))
        .sort((a, b) => b.updated_at.localeCompare(a.updated_at))
        .slice(0, limit);
      return facts.length ? facts.map(describe).join("\n") : `No memories found matching: ${query}`;
    },
    { name: "memory_search", description: "Search long-term memory about the user and past work.", schema: z.object({ query: z.string(), limit: z.number().int().min(1).max(50).default(5) }) },
  );
  const add = tool(
    async ({ content, category }, config) => `Remembered ${describe(store.addFact(userOf(config), agent, content, category))}`,
    { name: "memory_add", description: "Remember a durable fact (preference, context, decision) for future conversations.", schema: z.object({ content: z.string().min(1), category: z.string().optional() }) },
  );
  const update = tool(
    async ({ id, content }, config) => {
      let found: MemoryFact | undefined;
      store.update(userOf(config), agent, (doc) => {
        found = doc.facts.find((f) => f.id === id);
        if (found) Object.assign(found, { content, updated_at: new Date().toISOString() });
      });
      return found ? `Updated ${describe(found)}` : `Error: no memory with id '${id}'`;
    },
    { name: "memory_update", description: "Correct a remembered fact by id.", schema: z.object({ id: z.string(), content: z.string().min(1) }) },
  );
  const remove = tool(
    async ({ id }, config) => {
      let removed = false;
      store.update(userOf(config), agent, (doc) => {
        const before = doc.facts.length;
        doc.facts = doc.facts.filter((f) => f.id !== id);
        removed = doc.facts.length < before;
      });
      return removed ? `Deleted memory ${id}` : `Error: no memory with id '${id}'`;
    },
    { name: "memory_delete", description: "Forget a remembered fact by id.", schema: z.object({ id: z.string() }) },
  );
  return [search, add, update, remove] as const;
}
