// A file-backed stand-in for DeerFlow's memory manager storage (agents/memory/storage.py: memory.json per agent).
import { mkdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { randomUUID } from "node:crypto";
import { atomicWriteFile } from "../../config/atomic-write.js";
import { getRuntimeHome } from "../../config/paths.js";

const SAFE_SEGMENT = /^[A-Za-z0-9_-]{1,128}$/;
/** Most threads whose digest a memory file keeps (the most recently updated win). */
export const MAX_MEMORY_THREADS = 100;

/** One remembered fact (managed by the memory tools or an updater). */
export interface MemoryFact {
  id: string;
  content: string;
  category?: string;
  created_at: string;
  updated_at: string;
}

/** What the store remembers of one conversation. */
export interface ThreadDigest {
  updated_at: string;
  /** Human + AI messages seen in the conversation. */
  turns: number;
  last_user_message: string;
  last_assistant_message: string;
}

/** The content of one memory file. */
export interface MemoryDocument {
  version: 1;
  updated_at: string | null;
  facts: MemoryFact[];
  threads: Record<string, ThreadDigest>;
}

/** An empty memory document. */
export const emptyMemory = (): MemoryDocument => ({ version: 1, updated_at: null, facts: [], threads: {} });

/**
 * Memory files under a root directory: `<root>/users/<user_id>/memory/<agent_name>.json` (agent `default` for the
 * default agent). Reads tolerate a missing or corrupt file (empty memory); writes are atomic (temp file + rename),
 * so a crash never leaves a torn file. The root is resolved on first use (default `DEER_FLOW_HOME`) and then kept,
 * so creating a store does no I/O and queued writes land where the first use pointed.
 */
export class FileMemoryStore {
  private root?: string;

  /** @param root Directory that holds `users/`; default `DEER_FLOW_HOME`. */
  constructor(root?: string) {
    this.root = root;
  }

  /**
   * Path of the memory file of `userId` / `agentName`.
   * @throws Error when an id is not a safe path segment (`^[A-Za-z0-9_-]{1,128}$`).
   */
  fileFor(userId: string, agentName: string): string {
    for (const [label, id] of [["user id", userId], ["agent name", agentName]] as const) {
      if (!SAFE_SEGMENT.test(id)) throw new Error(`Invalid ${label} '${id}' for memory storage`);
    }
    this.root ??= getRuntimeHome();
    return path.join(this.root, "users", userId, "memory", `${agentName}.json`);
  }

  /** The memory of `userId` / `agentName` (empty when the file is missing or unreadable). */
  load(userId: string, agentName: string): MemoryDocument {
    try {
      const doc = JSON.parse(readFileSync(this.fileFor(userId, agentName), "utf8")) as Partial<MemoryDocument>;
      return { ...emptyMemory(), ...doc, facts: Array.isArray(doc.facts) ? doc.facts : [], threads: doc.threads && typeof doc.threads === "object" ? doc.threads : {} };
    } catch (err) {
      if ((err as Error).message.startsWith("Invalid ")) throw err;
      return emptyMemory();
    }
  }

  /** Writes `doc` atomically (stamping `updated_at`). */
  save(userId: string, agentName: string, doc: MemoryDocument): void {
    const file = this.fileFor(userId, agentName);
    mkdirSync(path.dirname(file), { recursive: true });
    atomicWriteFile(file, `${JSON.stringify({ ...doc, updated_at: new Date().toISOString() }, null, 2)}\n`);
  }

  /** Loads, applies `change`, saves; returns the saved document. */
  update(userId: string, agentName: string, change: (doc: MemoryDocument) => MemoryDocument | void): MemoryDocument {
    const doc = this.load(userId, agentName);
    const next = change(doc) ?? doc;
    this.save(userId, agentName, next);
    return next;
  }

  /** Adds a fact; returns it. */
  addFact(userId: string, agentName: string, content: string, category?: string): MemoryFact {
    const now = new Date().toISOString();
    const fact: MemoryFact = { id: randomUUID().slice(0, 8), content, ...(category ? { category } : {}), created_at: now, updated_at: now };
    this.update(userId, agentName, (doc) => void doc.facts.push(fact));
    return fact;
  }
}
