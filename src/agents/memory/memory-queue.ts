// Port of DeerFlow agents/memory/queue.py (MemoryUpdateQueue): conversations wait here, debounced per thread,
// until they are folded into the memory file in the background.
import type { BaseMessage } from "@langchain/core/messages";
import { getLogger } from "../../logger.js";
import { textOf } from "../middlewares/message-utils.js";
import { FileMemoryStore, MAX_MEMORY_THREADS, type MemoryDocument } from "./file-memory-store.js";
import { rmSync } from "node:fs";

/** One conversation to fold into memory. */
export interface MemoryJob {
  threadId: string;
  userId: string;
  agentName: string;
  messages: BaseMessage[];
}

/** Folds a conversation into a memory document (an LLM-based updater can replace the default digest). */
export type MemoryUpdater = (doc: MemoryDocument, job: MemoryJob) => MemoryDocument | Promise<MemoryDocument>;

const clip = (s: string, n = 500) => (s.length > n ? `${s.slice(0, n - 3)}...` : s);

/**
 * The default updater: records a digest of the conversation (turn count, last user and assistant text, each at
 * most 500 chars) under `threads[threadId]`, keeping the 100 most recently updated threads. Facts are untouched.
 */
export const recordConversation: MemoryUpdater = (doc, job) => {
  const talk = job.messages.filter((m) => (m.getType() === "human" && !m.additional_kwargs?.hide_from_ui) || m.getType() === "ai");
  const lastOf = (type: string) => [...talk].reverse().find((m) => m.getType() === type && textOf(m).trim());
  doc.threads[job.threadId] = {
    updated_at: new Date().toISOString(),
    turns: talk.length,
    last_user_message: clip(lastOf("human") ? textOf(lastOf("human")!) : ""),
    last_assistant_message: clip(lastOf("ai") ? textOf(lastOf("ai")!) : ""),
  };
  const entries = Object.entries(doc.threads).sort(([, a], [, b]) => b.updated_at.localeCompare(a.updated_at));
  doc.threads = Object.fromEntries(entries.slice(0, MAX_MEMORY_THREADS));
  return doc;
};

/** Options of {@link MemoryUpdateQueue}. */
export interface MemoryQueueOptions {
  /** Wait after the last job of a thread before processing it, in ms. Default 0 (next tick). */
  debounceMs?: number;
  updater?: MemoryUpdater;
}

/**
 * Queues memory updates and applies them in the background, one at a time. Jobs for the same
 * (user, agent, thread) coalesce: only the newest conversation is processed. Failures are logged, never thrown to
 * the run. `flush()` processes everything pending now (tests, shutdown).
 */
export class MemoryUpdateQueue {
  readonly store: FileMemoryStore;
  private readonly debounceMs: number;
  private readonly updater: MemoryUpdater;
  private readonly jobs = new Map<string, MemoryJob>();
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> = Promise.resolve();

  constructor(store: FileMemoryStore = new FileMemoryStore(), options: MemoryQueueOptions = {}) {
    this.store = store;
    this.debounceMs = Math.max(0, options.debounceMs ?? 0);
    this.updater = options.updater ?? recordConversation;
  }

  /** Jobs waiting to be processed. */
  get pending(): number {
    return this.jobs.size;
  }

  /**
   * Queues `job`, replacing a pending job of the same conversation. The memory file is resolved now, so a later
   * change of `DEER_FLOW_HOME` does not redirect the write.
   * @throws Error for a user id or agent name that is not a safe path segment.
   */
  add(job: MemoryJob): void {
    this.store.fileFor(job.userId, job.agentName);
    this.jobs.set(`${job.userId}\u0000${job.agentName}\u0000${job.threadId}`, job);
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.flush(), this.debounceMs);
    this.timer.unref?.();
  }

  /**
   * Erases the memory of `userId` / `agentName`: pending jobs for it are dropped and, once any batch already being
   * written has finished, its file is removed (so a queued write cannot bring it back). Used when an agent is
   * deleted: a new agent of the same name starts with no memory.
   * @throws Error for a user id or agent name that is not a safe path segment.
   */
  async forget(userId: string, agentName: string): Promise<void> {
    const file = this.store.fileFor(userId, agentName);
    const prefix = `${userId}\u0000${agentName}\u0000`;
    for (const key of [...this.jobs.keys()]) if (key.startsWith(prefix)) this.jobs.delete(key);
    await this.running;
    rmSync(file, { force: true });
  }

  /** Processes every pending job (one write per memory file); resolves when they (and any batch already running) are written. */
  flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const batch = [...this.jobs.values()];
    this.jobs.clear();
    // One read-modify-write per memory file, however many conversations of the batch it receives: the write is
    // synchronous and fsynced, so doing it per job would stall the event loop under load.
    const byFile = new Map<string, MemoryJob[]>();
    for (const job of batch) {
      const key = `${job.userId}\u0000${job.agentName}`;
      byFile.set(key, [...(byFile.get(key) ?? []), job]);
    }
    this.running = this.running.then(async () => {
      for (const jobs of byFile.values()) {
        const { userId, agentName } = jobs[0];
        try {
          let doc = this.store.load(userId, agentName);
          for (const job of jobs) {
            try {
              doc = await this.updater(doc, job);
            } catch (err) {
              getLogger().warn({ thread_id: job.threadId, agent: agentName, err: (err as Error).message }, "memory update failed");
            }
          }
          this.store.save(userId, agentName, doc);
        } catch (err) {
          getLogger().warn({ agent: agentName, err: (err as Error).message }, "memory update failed");
        }
      }
    });
    return this.running;
  }
}
