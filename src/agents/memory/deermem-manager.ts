// Port of DeerFlow's default memory backend (agents/memory/backends/deermem: DeerMem, core/queue.py,
// core/updater.py): after each turn the conversation waits, debounced per (user, agent); then one model call per
// (user, agent) batch updates the structured memory, which is injected into later runs within a token budget.
import type { BaseMessage } from "@langchain/core/messages";
import { AsyncLocalStorageProviderSingleton } from "@langchain/core/singletons";
import path from "node:path";
import { getAppConfig } from "../../config/app-config.js";
import { getRuntimeHome } from "../../config/paths.js";
import { getLogger } from "../../logger.js";
import { textOf } from "../middlewares/message-utils.js";
import { applyUpdate, buildUpdatePrompt, isMemoryRelevant, parseUpdate, trimToCapacity, type ConversationTurns } from "./extraction.js";
import { extractionModel } from "./extraction-model.js";
import { FileMemoryStore } from "./file-memory-store.js";
import { fileDocuments, type MemoryDocuments } from "./memory-store.js";
import { formatMemoryForInjection, tokenCounter } from "./injection.js";
import { deerMemConfigOf, DeerMemConfigSchema, type DeerMemConfig } from "./memory-config.js";
import { coerceConfidence, emptyMemory, factKey, newFactId, normalizeMemory, type MemoryDocument } from "./memory-document.js";
import { MemoryFactNotFoundError, withinTimeout, type MemoryFactPatch, type MemoryManager, type MemoryManagerInit, type MemoryScope, type MemorySearchHit } from "./manager.js";
import { ConflictError } from "../../errors.js";

/** Conversations remembered as already extracted, per (user, agent, thread); least recently used dropped beyond this. */
export const WATERMARK_MAX_KEYS = 4096;
/** Least time between two "queue is full" warnings, in ms. */
const FULL_WARNING_INTERVAL_MS = 60_000;
/** Memory documents kept parsed in memory (re-read when their stored version changes). */
const CACHE_MAX = 1024;

const bucketKey = (s: MemoryScope) => `${s.userId}\u0000${s.agentName}`;
const identity = (m: BaseMessage) => (typeof m.id === "string" && m.id ? m.id : `${m.getType()}:${textOf(m).slice(0, 200)}`);

interface Bucket {
  scope: MemoryScope;
  /** Newest relevant conversation per thread. */
  threads: Map<string, BaseMessage[]>;
  timer: NodeJS.Timeout | null;
}

/** UTF-8 length in bytes: an upper bound of any byte-level BPE token count (each token covers at least one byte). */
const utf8Bytes = (text: string): number => Buffer.byteLength(text, "utf8");

/**
 * The default memory backend (`manager_class: deermem`).
 *
 * - Storage: one JSON document per (user, agent) under `storage_path` (default `DEER_FLOW_HOME`), see
 *   {@link FileMemoryStore}; malformed files are moved aside and read as empty. Under `database.backend: postgres`
 *   the app hands it a shared store instead ({@link useSharedStore}): every process on the database sees one memory.
 * - Updates: {@link add} keeps the newest conversation per thread (user messages and final answers only); a
 *   (user, agent) batch is processed `debounce_seconds` after its last turn, in one model call (`model_name`, else
 *   the default model) that sees the current memory and only the turns not yet extracted (a per-thread watermark);
 *   the answer is applied to the memory as read after the call, so edits made meanwhile are kept. Batches of one
 *   (user, agent) never run concurrently. A failed call or unparsable answer is logged and the batch dropped.
 * - Injection: {@link getContext} formats the memory within `max_injection_tokens` (see
 *   {@link formatMemoryForInjection}).
 * Knobs are read from the live config on every use, so edits to `memory.backend_config` apply without a restart.
 */
export class DeerMemManager implements MemoryManager {
  readonly name = "deermem";
  readonly supportsSearch = true;
  private readonly init: MemoryManagerInit;
  private storeInstance?: FileMemoryStore;
  private storeRoot?: string;
  private fileDocs?: MemoryDocuments;
  private shared?: MemoryDocuments;
  private parsedFor?: object;
  private parsed?: DeerMemConfig;
  private readonly buckets = new Map<string, Bucket>();
  private readonly running = new Map<string, Promise<void>>();
  private readonly watermarks = new Map<string, { count: number; last: string }>();
  private readonly cache = new Map<string, { version: string; doc: MemoryDocument; context?: { budget: string; text: string } }>();
  /** Turns dropped by a full queue since the last warning, and when that warning was logged (epoch ms). */
  private droppedTurns = 0;
  private lastFullWarningAt = -Infinity;

  constructor(init: MemoryManagerInit) {
    this.init = init;
    // Validates a directly constructed backend too (the config loader already did for config.yaml).
    DeerMemConfigSchema.parse(init.backendConfig ?? {});
  }

  /**
   * Loads the tiktoken table now when memory is injected and counted with tiktoken. Building it takes 300-500 ms of
   * CPU (seconds on a busy host) in one synchronous step: at startup that delays readiness, while at a user's first
   * large memory it would stall every request of every user. Costs ~55 MB resident for the process's life.
   */
  async warmUp(): Promise<void> {
    const memory = this.init.getAppConfig().memory;
    if (memory.enabled && memory.injection_enabled && this.config.token_counting === "tiktoken") await tokenCounter("tiktoken");
  }

  /** The knobs now: the live config's `backend_config` when it still selects deermem, else the one built with. */
  get config(): DeerMemConfig {
    try {
      const memory = this.init.getAppConfig().memory;
      if (memory.manager_class === "deermem") {
        // The loaded config object only changes on a reload: parse its knobs once per object (this runs per turn).
        if (memory !== this.parsedFor) this.parsed = deerMemConfigOf((this.parsedFor = memory));
        return this.parsed!;
      }
    } catch {
      // No readable config (an embed without config.yaml): the construction-time knobs.
    }
    return DeerMemConfigSchema.parse(this.init.backendConfig ?? {});
  }

  /**
   * The file store, rooted at `storage_path` (relative: under the runtime home; empty: the runtime home). Without a
   * home given at construction the root follows `DEER_FLOW_HOME` as it is now.
   */
  get store(): FileMemoryStore {
    const root = this.storageRoot();
    if (!this.storeInstance || this.storeRoot !== root) {
      this.storeInstance = new FileMemoryStore(root);
      this.fileDocs = fileDocuments(this.storeInstance);
      this.storeRoot = root;
    }
    return this.storeInstance;
  }

  /** The directory memory files live under now: `storage_path` resolved against the runtime home. */
  private storageRoot(): string {
    const configured = this.config.storage_path;
    const home = this.init.home ?? getRuntimeHome();
    return configured ? path.resolve(home, configured) : home;
  }

  /** Where documents are read and written: the shared store when one was given, else the files of {@link store}. */
  get documents(): MemoryDocuments {
    const files = this.store;
    return this.shared ?? (files === this.storeInstance && this.fileDocs ? this.fileDocs : fileDocuments(files));
  }

  /**
   * Stores documents in `documents` (PostgreSQL, shared by every process on the database) instead of files from now
   * on. Before the switch, `adoptFiles` (when the store has it) imports once the memory files under the current
   * storage root that the shared store lacks (docs/memory.md, "Memory on PostgreSQL").
   * @returns how many documents were imported.
   */
  async useSharedStore(documents: MemoryDocuments & { adoptFiles?(root: string): Promise<number> }): Promise<number> {
    const imported = (await documents.adoptFiles?.(this.storageRoot())) ?? 0;
    this.shared = documents;
    this.cache.clear();
    return imported;
  }

  /** Conversations waiting for extraction, over all buckets. */
  get pending(): number {
    let n = 0;
    for (const b of this.buckets.values()) n += b.threads.size;
    return n;
  }

  add(threadId: string, messages: BaseMessage[], scope: MemoryScope): void {
    this.store.fileFor(scope.userId, scope.agentName);
    const relevant = messages.filter(isMemoryRelevant);
    if (!relevant.length) return;
    const { queue_max_depth: depth, debounce_seconds: debounce } = this.config;
    const key = bucketKey(scope);
    let bucket = this.buckets.get(key);
    if (depth > 0 && this.pending >= depth && !bucket?.threads.has(threadId)) {
      // One warning a minute with the count dropped since the last one: under load a full queue would otherwise log
      // a line for every turn.
      this.droppedTurns++;
      const now = Date.now();
      if (now - this.lastFullWarningAt >= FULL_WARNING_INTERVAL_MS) {
        getLogger().warn({ thread_id: threadId, pending: this.pending, dropped: this.droppedTurns }, "memory update queue is full; turns are not remembered");
        this.lastFullWarningAt = now;
        this.droppedTurns = 0;
      }
      return;
    }
    if (!bucket) this.buckets.set(key, (bucket = { scope: { ...scope }, threads: new Map(), timer: null }));
    // Turns of the pending conversation that are gone from the new one (summarization removed them before they were
    // extracted) stay in front of it: upstream flushes them with a summarization hook, here they are simply kept.
    const previous = bucket.threads.get(threadId);
    let conversation = relevant;
    if (previous) {
      const present = new Set(relevant.map(identity));
      const removed = previous.filter((m) => !present.has(identity(m)));
      if (removed.length) conversation = [...removed, ...relevant];
    }
    bucket.threads.set(threadId, conversation);
    if (bucket.timer) clearTimeout(bucket.timer);
    bucket.timer = setTimeout(() => void this.processBucket(key), debounce * 1000);
    bucket.timer.unref?.();
  }

  async getContext(scope: MemoryScope & { threadId?: string }): Promise<string> {
    const cfg = this.config;
    const budget = `${cfg.max_injection_tokens}|${cfg.token_counting}|${cfg.guaranteed_token_budget}|${cfg.guaranteed_categories.join(",")}`;
    const doc = await this.read(scope, false);
    // The formatted text is kept with the cached document: a user's runs re-render only after their memory changed.
    const entry = this.cache.get(this.store.fileFor(scope.userId, scope.agentName));
    if (entry?.context?.budget === budget) return entry.context.text;
    let text = "";
    if (doc.facts.length || Object.values({ ...doc.user, ...doc.history }).some((s) => s.summary.trim())) {
      const options = { maxTokens: cfg.max_injection_tokens, guaranteedCategories: cfg.guaranteed_categories, guaranteedTokenBudget: cfg.guaranteed_token_budget };
      // A token is at least one UTF-8 byte, so memory whose whole text fits both budgets in bytes is injected whole
      // without counting (the tiktoken table is loaded at startup: see warmUp).
      const whole = formatMemoryForInjection(doc, { ...options, maxTokens: Number.MAX_SAFE_INTEGER, guaranteedTokenBudget: Number.MAX_SAFE_INTEGER, count: utf8Bytes });
      const fits = cfg.token_counting === "tiktoken" && utf8Bytes(whole) <= Math.min(cfg.max_injection_tokens, cfg.guaranteed_token_budget || cfg.max_injection_tokens);
      text = fits ? whole : formatMemoryForInjection(doc, { ...options, count: await tokenCounter(cfg.token_counting) });
    }
    if (entry) entry.context = { budget, text };
    return text;
  }

  async flush(scope?: MemoryScope): Promise<void> {
    if (scope) return this.processBucket(bucketKey(scope));
    await Promise.all([...this.buckets.keys()].map((key) => this.processBucket(key)));
    await Promise.all([...this.running.values()]);
  }

  async shutdownFlush(timeoutMs: number): Promise<boolean> {
    if (!this.pending && !this.running.size) return true;
    const ok = await withinTimeout(this.flush(), timeoutMs);
    if (!ok) getLogger().warn({ pending: this.pending, timeout_ms: timeoutMs }, "memory drain did not finish in time; the rest of the pending updates are dropped");
    return ok;
  }

  async forget(scope: MemoryScope): Promise<void> {
    const key = bucketKey(scope);
    this.dropPending(key);
    await this.running.get(key);
    await this.documents.remove(scope.userId, scope.agentName);
    this.cache.delete(this.store.fileFor(scope.userId, scope.agentName));
    for (const k of [...this.watermarks.keys()]) if (k.startsWith(`${key}\u0000`)) this.watermarks.delete(k);
  }

  async getMemory(scope: MemoryScope): Promise<MemoryDocument> {
    return this.read(scope);
  }

  async reloadMemory(scope: MemoryScope): Promise<MemoryDocument> {
    this.cache.delete(this.store.fileFor(scope.userId, scope.agentName));
    return this.read(scope);
  }

  async clearMemory(scope: MemoryScope): Promise<MemoryDocument> {
    const key = bucketKey(scope);
    // Pending turns would otherwise write the cleared memory back a moment later.
    this.dropPending(key);
    await this.running.get(key);
    return this.write(scope, () => emptyMemory());
  }

  async importMemory(scope: MemoryScope, doc: MemoryDocument): Promise<MemoryDocument> {
    await this.running.get(bucketKey(scope));
    const imported = normalizeMemory(doc);
    const seen = new Set<string>();
    const texts = new Set<string>();
    // The same rules as learned facts: one copy of a text, at most `max_facts` (lowest confidence out).
    imported.facts = imported.facts.flatMap((f) => {
      const key = factKey(f.content);
      if (texts.has(key)) return [];
      texts.add(key);
      const id = seen.has(f.id) ? newFactId() : f.id;
      seen.add(id);
      return [{ ...f, id, createdAt: f.createdAt || new Date().toISOString() }];
    });
    trimToCapacity(imported, this.config.max_facts);
    return this.write(scope, () => imported);
  }

  /** @throws ConflictError (409) when a fact with the same text exists. */
  async createFact(scope: MemoryScope, input: { content: string; category: string; confidence: number }) {
    let factId: string | null = null;
    const memory = await this.write(scope, (doc) => {
      if (doc.facts.some((f) => factKey(f.content) === factKey(input.content))) throw new ConflictError("A fact with the same content already exists.");
      const fact = { id: newFactId(), content: input.content.trim(), category: input.category || "context", confidence: coerceConfidence(input.confidence), createdAt: new Date().toISOString(), source: "manual" };
      doc.facts.push(fact);
      factId = trimToCapacity(doc, this.config.max_facts).has(fact.id) ? null : fact.id;
    });
    return { memory, factId };
  }

  async updateFact(scope: MemoryScope, id: string, patch: MemoryFactPatch): Promise<MemoryDocument> {
    return this.write(scope, (doc) => {
      const fact = doc.facts.find((f) => f.id === id);
      if (!fact) throw new MemoryFactNotFoundError(id);
      if (patch.content != null) {
        if (doc.facts.some((f) => f.id !== id && factKey(f.content) === factKey(patch.content!))) throw new ConflictError("A fact with the same content already exists.");
        fact.content = patch.content.trim();
      }
      if (patch.category != null) fact.category = patch.category;
      if (patch.confidence != null) fact.confidence = coerceConfidence(patch.confidence);
    });
  }

  async deleteFact(scope: MemoryScope, id: string): Promise<MemoryDocument> {
    return this.write(scope, (doc) => {
      const before = doc.facts.length;
      doc.facts = doc.facts.filter((f) => f.id !== id);
      if (doc.facts.length === before) throw new MemoryFactNotFoundError(id);
    });
  }

  /**
   * Facts containing every word of `query` (case-insensitive; DeerMem's substring fallback), highest confidence
   * first; an empty query matches all.
   */
  async search(scope: MemoryScope, query: string, options: { topK?: number; category?: string | null } = {}): Promise<MemorySearchHit[]> {
    const words = query.toLowerCase().split(/\s+/).filter(Boolean);
    return (await this.read(scope)).facts
      .filter((f) => !options.category || f.category === options.category)
      .filter((f) => words.every((w) => f.content.toLowerCase().includes(w)))
      .sort((a, b) => b.confidence - a.confidence)
      .slice(0, Math.max(1, options.topK ?? 5))
      .map(({ id, content, category, confidence, createdAt, source }) => ({ id, content, category, confidence, createdAt, source }));
  }

  /**
   * The scope's document, from the cache while its stored version is unchanged (a file's mtime and size, a row's
   * revision). `copy` false hands out the cached object itself (read-only use).
   */
  private async read(scope: MemoryScope, copy = true): Promise<MemoryDocument> {
    const key = this.store.fileFor(scope.userId, scope.agentName);
    const hit = this.cache.get(key);
    const found = await this.documents.read(scope.userId, scope.agentName, hit?.version);
    if (!found) {
      this.cache.delete(key);
      return { ...emptyMemory(), revision: 0 };
    }
    if (!found.doc && hit) return copy ? structuredClone(hit.doc) : hit.doc;
    const doc = found.doc ?? { ...emptyMemory(), revision: 0 };
    this.cache.delete(key);
    if (found.version !== null && found.doc) {
      this.cache.set(key, { version: found.version, doc: structuredClone(doc) });
      if (this.cache.size > CACHE_MAX) this.cache.delete(this.cache.keys().next().value!);
    }
    return doc;
  }

  /**
   * Read-modify-write of the scope's document as its next revision, under the document's lock
   * (MemoryDocuments.update): another process writing the same memory waits for this write and then builds on it.
   */
  private async write(scope: MemoryScope, change: (doc: MemoryDocument) => MemoryDocument | void): Promise<MemoryDocument> {
    this.cache.delete(this.store.fileFor(scope.userId, scope.agentName));
    return this.documents.update(scope.userId, scope.agentName, change);
  }

  private dropPending(key: string): void {
    const bucket = this.buckets.get(key);
    if (bucket?.timer) clearTimeout(bucket.timer);
    this.buckets.delete(key);
  }

  /** Takes the bucket's pending conversations and chains their extraction after any batch of the bucket already running. */
  private processBucket(key: string): Promise<void> {
    const bucket = this.buckets.get(key);
    if (!bucket) return this.running.get(key) ?? Promise.resolve();
    this.dropPending(key);
    const previous = this.running.get(key) ?? Promise.resolve();
    const next = previous.then(() => this.extract(bucket)).catch((err) => {
      getLogger().warn({ agent: bucket.scope.agentName, err: (err as Error).message }, "memory update failed");
    });
    this.running.set(key, next);
    void next.then(() => {
      if (this.running.get(key) === next) this.running.delete(key);
    });
    return next;
  }

  /** The turns of each thread not extracted yet (all of them when the history was rewritten, e.g. summarised). */
  private newTurns(bucket: Bucket): { batch: ConversationTurns[]; marks: [string, { count: number; last: string }][] } {
    const batch: ConversationTurns[] = [];
    const marks: [string, { count: number; last: string }][] = [];
    for (const [threadId, messages] of bucket.threads) {
      const wk = `${bucketKey(bucket.scope)}\u0000${threadId}`;
      const mark = this.watermarks.get(wk);
      const fresh = mark && mark.count <= messages.length && identity(messages[mark.count - 1]) === mark.last ? messages.slice(mark.count) : messages;
      if (!fresh.length) continue;
      batch.push({ threadId, messages: fresh });
      marks.push([wk, { count: messages.length, last: identity(messages.at(-1)!) }]);
    }
    return { batch, marks };
  }

  private async extract(bucket: Bucket): Promise<void> {
    const { scope } = bucket;
    const { batch, marks } = this.newTurns(bucket);
    if (!batch.length) return;
    const cfg = this.config;
    const appConfig = this.init.getAppConfig();
    const model = await extractionModel(cfg, appConfig);
    const prompt = buildUpdatePrompt(await this.read(scope), batch);
    // Outside any run's async context: the extraction must not stream into, or be traced as part of, the run whose
    // turn queued it (a timer keeps the async context of the code that set it).
    const answer = await AsyncLocalStorageProviderSingleton.getInstance().run(undefined, () => model.invoke(prompt, { runName: "memory_update", tags: ["memory"] }));
    const update = parseUpdate(textOf(answer));
    const source = batch.map((c) => c.threadId).join(",");
    let report: ReturnType<typeof applyUpdate> | undefined;
    await this.write(scope, (doc) => {
      report = applyUpdate(doc, update, source, { maxFacts: cfg.max_facts, factConfidenceThreshold: cfg.fact_confidence_threshold });
    });
    for (const [wk, mark] of marks) {
      this.watermarks.delete(wk);
      this.watermarks.set(wk, mark);
      if (this.watermarks.size > WATERMARK_MAX_KEYS) this.watermarks.delete(this.watermarks.keys().next().value!);
    }
    getLogger().debug({ agent: scope.agentName, threads: batch.length, ...report }, "memory updated");
  }
}

let processDefault: DeerMemManager | undefined;

/**
 * The process-wide default backend for code that runs outside the gateway (SDK embeds of `createDeerflowAgent`
 * without a run context): a {@link DeerMemManager} over the global config (`getAppConfig`), created on first use.
 */
export function defaultMemoryManager(): DeerMemManager {
  return (processDefault ??= new DeerMemManager({ backendConfig: {}, mode: "middleware", getAppConfig }));
}
