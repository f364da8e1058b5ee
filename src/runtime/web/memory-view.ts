// The web app's view of long-term memory (DeerFlow app/gateway/routers/memory.py `MemoryResponse`), mapped onto
// the file memory store (src/agents/memory/file-memory-store.ts). The store keeps facts and per-thread digests;
// the profile summaries the app shows (user / history sections) are kept in the same file under `profile`, so
// export and import round-trip.
import { randomUUID } from "node:crypto";
import { z } from "zod";
import type { FileMemoryStore, MemoryDocument, MemoryFact } from "../../agents/memory/file-memory-store.js";
import { NotFoundError } from "../../errors.js";

const Section = z.looseObject({ summary: z.string().default(""), updatedAt: z.string().default("") });
const emptySection = () => ({ summary: "", updatedAt: "" });
/** The summaries block of the app's memory view. */
export const ProfileSchema = z.looseObject({
  user: z.looseObject({ workContext: Section.default(emptySection()), personalContext: Section.default(emptySection()), topOfMind: Section.default(emptySection()) }).default({ workContext: emptySection(), personalContext: emptySection(), topOfMind: emptySection() }),
  history: z.looseObject({ recentMonths: Section.default(emptySection()), earlierContext: Section.default(emptySection()), longTermBackground: Section.default(emptySection()) }).default({ recentMonths: emptySection(), earlierContext: emptySection(), longTermBackground: emptySection() }),
});

/** A fact as the app reads it. `confidence` 0..1; `createdAt` ISO. */
const FactView = z.looseObject({
  id: z.string().min(1).max(128).optional(),
  content: z.string().min(1).max(10_000),
  category: z.string().max(64).default("context"),
  confidence: z.number().min(0).max(1).default(0.5),
  createdAt: z.string().optional(),
  source: z.string().max(256).default("manual"),
});

/** The `POST /api/memory/import` body (a `GET /api/memory/export` answer). */
export const MemoryImportSchema = ProfileSchema.extend({ version: z.string().optional(), lastUpdated: z.string().optional(), facts: z.array(FactView).max(10_000).default([]) });
/** `POST /api/memory/facts`. */
export const FactCreateSchema = z.looseObject({ content: z.string().trim().min(1).max(10_000), category: z.string().max(64).default("context"), confidence: z.number().min(0).max(1).default(0.5) });
/** `PATCH /api/memory/facts/{id}`: omitted fields keep their value. */
export const FactPatchSchema = z.looseObject({ content: z.string().trim().min(1).max(10_000).nullish(), category: z.string().max(64).nullish(), confidence: z.number().min(0).max(1).nullish() });

type StoredFact = MemoryFact & { confidence?: number; source?: string };
type Doc = MemoryDocument & { profile?: unknown };

/** The `MemoryResponse` view of a stored document. */
export function memoryView(doc: Doc) {
  const profile = ProfileSchema.parse(doc.profile ?? {});
  return {
    version: String(doc.version ?? "1"),
    lastUpdated: doc.updated_at ?? "",
    user: profile.user,
    history: profile.history,
    facts: (doc.facts as StoredFact[]).map((f) => ({
      id: f.id, content: f.content, category: f.category ?? "context", confidence: typeof f.confidence === "number" ? f.confidence : 0.5,
      createdAt: f.created_at, source: f.source ?? "agent",
    })),
  };
}

/** Memory operations of one (user, agent) pair. Every write goes through the store's atomic save. */
export class MemoryService {
  constructor(private readonly store: FileMemoryStore, private readonly userId: string, private readonly agentName: string) {}

  read() {
    return memoryView(this.store.load(this.userId, this.agentName) as Doc);
  }

  /** Deletes every fact, digest and summary. */
  clear() {
    return memoryView(this.store.update(this.userId, this.agentName, () => ({ version: 1, updated_at: null, facts: [], threads: {} })) as Doc);
  }

  addFact(input: z.infer<typeof FactCreateSchema>) {
    const now = new Date().toISOString();
    const fact: StoredFact = { id: `fact_${randomUUID().replace(/-/g, "").slice(0, 12)}`, content: input.content, category: input.category, confidence: input.confidence, source: "manual", created_at: now, updated_at: now };
    return memoryView(this.store.update(this.userId, this.agentName, (doc) => void doc.facts.push(fact)) as Doc);
  }

  /** @throws NotFoundError (404) for an unknown fact. */
  patchFact(id: string, patch: z.infer<typeof FactPatchSchema>) {
    return memoryView(this.store.update(this.userId, this.agentName, (doc) => {
      const fact = doc.facts.find((f) => f.id === id) as StoredFact | undefined;
      if (!fact) throw new NotFoundError(`Memory fact '${id}' not found`);
      if (patch.content != null) fact.content = patch.content;
      if (patch.category != null) fact.category = patch.category;
      if (patch.confidence != null) fact.confidence = patch.confidence;
      fact.updated_at = new Date().toISOString();
    }) as Doc);
  }

  /** @throws NotFoundError (404) for an unknown fact. */
  deleteFact(id: string) {
    return memoryView(this.store.update(this.userId, this.agentName, (doc) => {
      const before = doc.facts.length;
      doc.facts = doc.facts.filter((f) => f.id !== id);
      if (doc.facts.length === before) throw new NotFoundError(`Memory fact '${id}' not found`);
    }) as Doc);
  }

  /** Replaces the facts and summaries with an exported document (conversation digests are kept). */
  import(data: z.infer<typeof MemoryImportSchema>) {
    const now = new Date().toISOString();
    return memoryView(this.store.update(this.userId, this.agentName, (doc) => {
      const seen = new Set<string>();
      doc.facts = data.facts.map((f) => {
        let id = f.id && !seen.has(f.id) ? f.id : `fact_${randomUUID().replace(/-/g, "").slice(0, 12)}`;
        seen.add(id);
        return { id, content: f.content, category: f.category, confidence: f.confidence, source: f.source, created_at: f.createdAt ?? now, updated_at: now } as StoredFact;
      });
      (doc as Doc).profile = { user: data.user, history: data.history };
    }) as Doc);
  }
}
