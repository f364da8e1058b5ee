// The default backend's model step (DeerMem core/updater.py and prompts/memory_update): the prompt that asks the
// model to update structured memory from a conversation, the parser of its JSON answer, and the rules that apply
// the answer (write gate, confidence threshold, duplicates, capacity). The prompt text is our own.
import { AIMessage, HumanMessage, SystemMessage, type BaseMessage } from "@langchain/core/messages";
import { hasToolCallIntent, textOf } from "../middlewares/message-utils.js";
import { capText, coerceConfidence, factKey, HISTORY_SECTIONS, MAX_FACT_CHARS, MAX_SUMMARY_CHARS, newFactId, USER_SECTIONS, type MemoryDocument, type MemoryFact } from "./memory-document.js";
import { escapeMemoryText } from "./injection.js";

/** First line of the extraction system prompt; the offline scripted model recognises the request by it. */
export const MEMORY_UPDATE_MARKER = "You maintain the long-term memory of an AI assistant about its user.";

const SYSTEM_PROMPT = `${MEMORY_UPDATE_MARKER}
Read the current memory and the new conversation, then answer with the changes to make, as one JSON object.

Sections (rewrite one only when the conversation brings meaningful new information; set shouldUpdate accordingly):
- user.workContext: role, organisation, main projects and technologies (1-3 sentences).
- user.personalContext: languages, communication preferences, interests (1-2 sentences).
- user.topOfMind: the several things the user is currently focused on (3-5 sentences).
- history.recentMonths: what the user worked on recently (a paragraph).
- history.earlierContext: older patterns still relevant (a paragraph).
- history.longTermBackground: lasting background and working style (2-4 sentences).

Facts: specific, durable statements about the user, with names, numbers and versions kept exact.
- category: preference | knowledge | context | behavior | goal | correction
- confidence: 0.9-1.0 stated explicitly, 0.7-0.8 strongly implied, 0.5-0.6 inferred (rarely)
- scope: user (true of the user in any future conversation) | thread (this conversation only) | project (one project only)
- durability: durable | temporary; authority: descriptive | transactional (grants or instructions to act are transactional)
Only user-scoped, durable, descriptive facts are kept. Do not record uploaded files, current-task goals or one-off permissions.
Remove an existing fact (by id) only when the user explicitly contradicts or retracts it.

Answer format:
{"user": {"workContext": {"summary": "...", "shouldUpdate": false, "scope": "user", "authority": "descriptive"}, "personalContext": {...}, "topOfMind": {...}},
 "history": {"recentMonths": {...}, "earlierContext": {...}, "longTermBackground": {...}},
 "newFacts": [{"content": "...", "category": "preference", "confidence": 0.9, "scope": "user", "durability": "durable", "authority": "descriptive"}],
 "factsToRemove": [{"id": "fact_...", "scope": "user", "reason": "..."}]}
Return only the JSON object.`;

/** One conversation waiting to be folded into memory. */
export interface ConversationTurns {
  threadId: string;
  messages: BaseMessage[];
}

/** True for a message that carries conversation: a visible user message or a final assistant answer. */
export function isMemoryRelevant(m: BaseMessage): boolean {
  if (HumanMessage.isInstance(m)) {
    const kw = m.additional_kwargs ?? {};
    return !kw.hide_from_ui && !kw.dynamic_context_reminder && m.name !== "summary";
  }
  return AIMessage.isInstance(m) && !hasToolCallIntent(m) && textOf(m).trim() !== "";
}

const UPLOADS = /<(uploaded_files|current_uploads)>[\s\S]*?<\/\1>\n*/g;

/**
 * The conversation as the prompt shows it (DeerMem `format_conversation_for_update`): `User: ...` and
 * `Assistant: ...` turns separated by blank lines; uploads blocks removed; a turn over 1000 characters keeps its
 * first and last 500; text escaped so it cannot close the `<conversation>` block.
 */
export function formatConversation(messages: BaseMessage[]): string {
  const lines: string[] = [];
  for (const m of messages) {
    const human = HumanMessage.isInstance(m);
    let text = textOf(m);
    if (human) text = text.replace(UPLOADS, "").trim();
    if (!text) continue;
    if (text.length > 1000) text = `${text.slice(0, 500)}\n...[truncated]...\n${text.slice(-500)}`;
    lines.push(`${human ? "User" : "Assistant"}: ${escapeMemoryText(text)}`);
  }
  return lines.join("\n\n");
}

/** The memory as the prompt shows it: summaries and facts (with ids, so the model can name removals), escaped. */
function currentMemoryText(doc: MemoryDocument): string {
  const view = {
    user: Object.fromEntries(USER_SECTIONS.map((k) => [k, doc.user[k].summary])),
    history: Object.fromEntries(HISTORY_SECTIONS.map((k) => [k, doc.history[k].summary])),
    facts: doc.facts.map((f) => ({ id: f.id, content: f.content, category: f.category, confidence: f.confidence })),
  };
  return escapeMemoryText(JSON.stringify(view, null, 2));
}

/** The extraction request: our system prompt, and the current memory plus the conversations of the batch. */
export function buildUpdatePrompt(doc: MemoryDocument, batch: ConversationTurns[]): BaseMessage[] {
  const conversation = batch.map((c) => formatConversation(c.messages)).filter(Boolean).join("\n\n---\n\n");
  return [
    new SystemMessage(SYSTEM_PROMPT),
    new HumanMessage(`Current memory:\n<current_memory>\n${currentMemoryText(doc)}\n</current_memory>\n\nNew conversation:\n<conversation>\n${conversation}\n</conversation>\n\nUpdate the memory from this conversation.`),
  ];
}

/** The model's answer, loosely typed (every field is checked when applied). */
export type MemoryUpdate = Record<string, unknown>;

/**
 * The first JSON object in a model answer that has a memory-update key (`user`, `history`, `newFacts` or
 * `factsToRemove`), tolerating prose and code fences around it (DeerMem `_parse_memory_update_response`).
 * @throws Error when no such object is found.
 */
export function parseUpdate(text: string): MemoryUpdate {
  for (let i = text.indexOf("{"); i !== -1; i = text.indexOf("{", i + 1)) {
    // Try each closing brace from the far end: the longest balanced candidate that parses wins.
    for (let j = text.lastIndexOf("}"); j > i; j = text.lastIndexOf("}", j - 1)) {
      try {
        const value = JSON.parse(text.slice(i, j + 1));
        if (value && typeof value === "object" && !Array.isArray(value) && ["user", "history", "newFacts", "factsToRemove"].some((k) => k in value)) return value as MemoryUpdate;
        break;
      } catch {
        // not this span
      }
    }
  }
  throw new Error("No memory update JSON object found in the model's answer");
}

const label = (v: unknown) => (typeof v === "string" ? v.trim().toLowerCase() : "");
const obj = (v: unknown): Record<string, unknown> => (v && typeof v === "object" && !Array.isArray(v) ? (v as Record<string, unknown>) : {});

/** Limits applied with an update. */
export interface ApplyLimits {
  maxFacts: number;
  factConfidenceThreshold: number;
}

/** What an update changed (logged). */
export interface ApplyReport {
  added: number;
  removed: number;
  sections: number;
  rejected: number;
}

/**
 * Applies a model answer to `doc` in place (DeerMem `_apply_updates`): a summary is rewritten when
 * `shouldUpdate` and its `scope` is `user` and `authority` `descriptive`; a new fact is stored when it is
 * `user`/`durable`/`descriptive`, at or above the confidence threshold and not already stored (same text, any
 * case); then the lowest-confidence facts go until at most `maxFacts` remain (the newest wins a tie); a removal
 * needs `scope: user` and a reason. Facts get an id, `createdAt` now and `source` the thread id(s).
 */
export function applyUpdate(doc: MemoryDocument, update: MemoryUpdate, source: string, limits: ApplyLimits): ApplyReport {
  const now = new Date().toISOString();
  const report: ApplyReport = { added: 0, removed: 0, sections: 0, rejected: 0 };
  const gatedSection = (group: Record<string, unknown>, key: string) => {
    const s = obj(group[key]);
    if (!s.shouldUpdate || typeof s.summary !== "string" || !s.summary.trim()) return null;
    if (label(s.scope) !== "user" || label(s.authority) !== "descriptive") {
      report.rejected++;
      return null;
    }
    report.sections++;
    return { summary: capText(s.summary.trim(), MAX_SUMMARY_CHARS), updatedAt: now };
  };
  for (const k of USER_SECTIONS) doc.user[k] = gatedSection(obj(update.user), k) ?? doc.user[k];
  for (const k of HISTORY_SECTIONS) doc.history[k] = gatedSection(obj(update.history), k) ?? doc.history[k];

  const known = new Set(doc.facts.map((f) => factKey(f.content)));
  for (const raw of Array.isArray(update.newFacts) ? update.newFacts : []) {
    const f = obj(raw);
    if (typeof f.content !== "string" || !f.content.trim()) continue;
    if (label(f.scope) !== "user" || label(f.durability) !== "durable" || label(f.authority) !== "descriptive") {
      report.rejected++;
      continue;
    }
    const confidence = coerceConfidence(f.confidence, 0.5);
    if (confidence < limits.factConfidenceThreshold) continue;
    const key = factKey(f.content);
    if (known.has(key)) continue;
    known.add(key);
    const fact: MemoryFact = { id: newFactId(), content: capText(f.content.trim(), MAX_FACT_CHARS), category: (typeof f.category === "string" && f.category.trim()) || "context", confidence, createdAt: now, source };
    if (fact.category === "correction" && typeof f.sourceError === "string" && f.sourceError.trim()) fact.sourceError = capText(f.sourceError.trim(), MAX_FACT_CHARS);
    doc.facts.push(fact);
    report.added++;
  }
  trimToCapacity(doc, limits.maxFacts);

  const removals = new Set<string>();
  for (const raw of Array.isArray(update.factsToRemove) ? update.factsToRemove : []) {
    const r = obj(raw);
    if (typeof r.id !== "string" || label(r.scope) !== "user" || typeof r.reason !== "string" || !r.reason.trim()) {
      report.rejected++;
      continue;
    }
    removals.add(r.id);
  }
  const before = doc.facts.length;
  doc.facts = doc.facts.filter((f) => !removals.has(f.id));
  report.removed = before - doc.facts.length;
  return report;
}

/**
 * Keeps at most `maxFacts` facts: the highest confidence first, the newer first on a tie; the kept facts keep their
 * stored order (DeerMem's `confidence` eviction policy).
 * @returns the ids evicted.
 */
export function trimToCapacity(doc: MemoryDocument, maxFacts: number): Set<string> {
  if (doc.facts.length <= maxFacts) return new Set();
  const ranked = doc.facts.map((f, i) => ({ f, i })).sort((a, b) => b.f.confidence - a.f.confidence || b.i - a.i);
  const keep = new Set(ranked.slice(0, maxFacts).map((x) => x.f.id));
  const evicted = new Set(doc.facts.filter((f) => !keep.has(f.id)).map((f) => f.id));
  doc.facts = doc.facts.filter((f) => keep.has(f.id));
  return evicted;
}
