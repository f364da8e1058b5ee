// The offline scripted model's answer to the memory-extraction prompt: a fixed rule, so tests and offline demos
// can predict exactly what memory learns. No counterpart upstream (DeerFlow always uses a real model).
import type { BaseMessage } from "@langchain/core/messages";
import { MEMORY_UPDATE_MARKER } from "./extraction.js";

const text = (m: BaseMessage) => (typeof m.content === "string" ? m.content : m.content.map((b) => (typeof b === "string" ? b : "text" in b ? String(b.text) : "")).join(""));
const unescape = (s: string) => s.replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&amp;/g, "&");

/** Fact category of a first-person sentence (see {@link scriptedMemoryUpdate}). */
export function scriptedCategory(sentence: string): string {
  if (/\b(prefer|prefers|like|likes|love|loves|hate|hates|favou?rite)\b/i.test(sentence)) return "preference";
  if (/\b(want|wants|plan|plans|goal|aim|hope)\b/i.test(sentence)) return "goal";
  return "context";
}

/**
 * The scripted model's answer when the request is a memory update (the system prompt starts with
 * {@link MEMORY_UPDATE_MARKER}), else null. The rule, applied to the `User:` turns inside `<conversation>`:
 *
 * - every sentence (split after `.`, `!`, `?` or a line break) that starts with `I ` / `I'm ` / `I've ` / `My `
 *   (any case) becomes a new fact: `content` the sentence without its final punctuation, `category` `preference`
 *   when it says prefer/like/love/hate/favourite, `goal` when it says want/plan/goal/aim/hope, else `context`;
 *   `confidence` 0.9; `scope` user, `durability` durable, `authority` descriptive;
 * - `user.topOfMind` becomes `Recently discussed: <the last user turn>` (at most 200 characters), user-scoped;
 * - nothing is removed and the other sections are left alone.
 * The answer is that JSON, compact.
 */
export function scriptedMemoryUpdate(messages: BaseMessage[]): string | null {
  const system = messages.find((m) => m.getType() === "system");
  if (!system || !text(system).startsWith(MEMORY_UPDATE_MARKER)) return null;
  const request = [...messages].reverse().find((m) => m.getType() === "human");
  const conversation = /<conversation>\n?([\s\S]*?)\n?<\/conversation>/.exec(request ? text(request) : "")?.[1] ?? "";
  const userTurns = conversation
    .split(/\n\n(?=(?:User|Assistant): |---)/)
    .filter((t) => t.startsWith("User: "))
    .map((t) => unescape(t.slice("User: ".length)).trim());
  const newFacts = userTurns
    .flatMap((turn) => turn.split(/(?<=[.!?])\s+|\n+/))
    .map((s) => s.trim())
    .filter((s) => /^(i|i'm|i've|my)\s/i.test(s))
    .map((s) => s.replace(/[.!?]+$/, ""))
    .map((content) => ({ content, category: scriptedCategory(content), confidence: 0.9, scope: "user", durability: "durable", authority: "descriptive" }));
  const last = userTurns.at(-1);
  const update: Record<string, unknown> = { newFacts, factsToRemove: [] };
  if (last) update.user = { topOfMind: { summary: `Recently discussed: ${last.length > 200 ? `${last.slice(0, 197)}...` : last}`, shouldUpdate: true, scope: "user", authority: "descriptive" } };
  return JSON.stringify(update);
}
