// The web app's view of long-term memory (DeerFlow app/gateway/routers/memory.py `MemoryResponse` and the request
// bodies of its fact and import routes). The default backend stores this shape as is.
import { z } from "zod";
import { emptyMemory, type MemoryDocument } from "../../agents/memory/memory-document.js";
import type { MemoryConfig } from "../../agents/memory/memory-config.js";
import { MemoryUnsupportedError, type MemoryManager, type MemoryScope } from "../../agents/memory/manager.js";

export type { MemoryScope };

/** Management operations of a memory backend the routes call. */
export type MemoryOperation = "getMemory" | "reloadMemory" | "clearMemory" | "importMemory" | "createFact" | "updateFact" | "deleteFact";

/** The backend's implementation of `name`, bound to it. @throws MemoryUnsupportedError (501) when it has none. */
export function memoryOperation<K extends MemoryOperation>(manager: MemoryManager, name: K): NonNullable<MemoryManager[K]> {
  const fn = manager[name];
  if (typeof fn !== "function") throw new MemoryUnsupportedError(manager.name, name);
  return (fn as (...args: unknown[]) => unknown).bind(manager) as NonNullable<MemoryManager[K]>;
}

const Section = z.looseObject({ summary: z.string().max(100_000).default(""), updatedAt: z.string().max(64).default("") });
const emptySection = () => ({ summary: "", updatedAt: "" });

/** A fact as the app sends it in an import. `confidence` 0..1; `createdAt` ISO. */
const FactView = z.looseObject({
  id: z.string().min(1).max(128).optional(),
  content: z.string().min(1).max(10_000),
  category: z.string().max(64).default("context"),
  confidence: z.number().min(0).max(1).default(0.5),
  createdAt: z.string().max(64).optional(),
  source: z.string().max(256).default("manual"),
  sourceError: z.string().max(10_000).optional(),
});

/** The `POST /api/memory/import` body (a `GET /api/memory/export` answer). */
export const MemoryImportSchema = z.looseObject({
  version: z.string().optional(),
  lastUpdated: z.string().optional(),
  user: z.looseObject({ workContext: Section.default(emptySection()), personalContext: Section.default(emptySection()), topOfMind: Section.default(emptySection()) }).default({ workContext: emptySection(), personalContext: emptySection(), topOfMind: emptySection() }),
  history: z.looseObject({ recentMonths: Section.default(emptySection()), earlierContext: Section.default(emptySection()), longTermBackground: Section.default(emptySection()) }).default({ recentMonths: emptySection(), earlierContext: emptySection(), longTermBackground: emptySection() }),
  facts: z.array(FactView).max(10_000).default([]),
});
/** `POST /api/memory/facts`. */
export const FactCreateSchema = z.looseObject({ content: z.string().trim().min(1).max(10_000), category: z.string().max(64).default("context"), confidence: z.number().min(0).max(1).default(0.5) });
/** `PATCH /api/memory/facts/{id}`: omitted fields keep their value. */
export const FactPatchSchema = z.looseObject({ content: z.string().trim().min(1).max(10_000).nullish(), category: z.string().max(64).nullish(), confidence: z.number().min(0).max(1).nullish() });

/**
 * The `MemoryResponse` of a document (only the documented fields; an empty document for a backend without one).
 * `revision` is upstream's manifest revision: the document's own when its backend keeps one (the default backend
 * does: 0 before the first write, +1 per write), else null (upstream's default).
 */
export function memoryView(doc: (Partial<Omit<MemoryDocument, "revision">> & { revision?: number | null }) | null | undefined): Omit<MemoryDocument, "revision"> & { revision: number | null } {
  const base = emptyMemory();
  return {
    version: doc?.version ?? base.version,
    revision: typeof doc?.revision === "number" ? doc.revision : null,
    lastUpdated: doc?.lastUpdated ?? "",
    user: { ...base.user, ...(doc?.user ?? {}) },
    history: { ...base.history, ...(doc?.history ?? {}) },
    facts: (doc?.facts ?? []).map((f) => ({
      id: f.id, content: f.content, category: f.category, confidence: f.confidence, createdAt: f.createdAt, source: f.source,
      ...(f.sourceError ? { sourceError: f.sourceError } : {}),
    })),
  };
}

/** An imported body as a memory document. */
export function importedDocument(body: z.infer<typeof MemoryImportSchema>): MemoryDocument {
  return {
    version: "2",
    lastUpdated: "",
    user: { workContext: body.user.workContext, personalContext: body.user.personalContext, topOfMind: body.user.topOfMind },
    history: { recentMonths: body.history.recentMonths, earlierContext: body.history.earlierContext, longTermBackground: body.history.longTermBackground },
    facts: body.facts.map((f) => ({ id: f.id ?? "", content: f.content, category: f.category, confidence: f.confidence, createdAt: f.createdAt ?? "", source: f.source, ...(f.sourceError ? { sourceError: f.sourceError } : {}) })),
  };
}

const SECRET_KEY = /(api_?key|secret|password|passwd|credential|authorization|(^|_)token$)/i;

/** `backend_config` with secret-looking values (api keys, passwords, tokens) replaced by `"***"`, at any depth. */
export function redactSecrets(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(redactSecrets);
  if (!value || typeof value !== "object") return value;
  return Object.fromEntries(Object.entries(value as Record<string, unknown>).map(([k, v]) => [k, SECRET_KEY.test(k) && v != null && v !== "" ? "***" : redactSecrets(v)]));
}

/** The `MemoryConfigResponse`: the shared keys and the backend's config, secrets redacted. */
export function memoryConfigView(memory: MemoryConfig) {
  return {
    enabled: memory.enabled,
    mode: memory.mode,
    injection_enabled: memory.injection_enabled,
    shutdown_flush_timeout_seconds: memory.shutdown_flush_timeout_seconds,
    manager_class: memory.manager_class,
    backend_config: redactSecrets(memory.backend_config) as Record<string, unknown>,
  };
}
