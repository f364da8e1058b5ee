// Port of DeerFlow sandbox/local/local_sandbox_provider.py (LocalSandboxProvider): one LocalSandbox per
// (user, thread), directories under DEER_FLOW_HOME, ids `local:<user>:<thread>`, an LRU cache of instances.
import { existsSync, mkdirSync, rmSync } from "node:fs";
import path from "node:path";
import { threadDataPaths } from "../config/paths.js";
import { getRuntimeHome } from "../config/paths.js";
import { LocalSandbox } from "./local-sandbox.js";
import { userSkillMounts, type SandboxMount } from "./mounts.js";
import type { SandboxDirs } from "./paths.js";
import type { SandboxProvider } from "./provider.js";

/** Default number of per-thread sandboxes kept in memory (DeerFlow `DEFAULT_MAX_CACHED_THREAD_SANDBOXES`). */
export const DEFAULT_MAX_CACHED_THREADS = 256;
const ID_PREFIX = "local:";

/** Options of {@link LocalSandboxProvider}. */
export interface LocalSandboxProviderOptions {
  /** Runtime home holding `users/<user>/threads/<thread>/user-data`; default `DEER_FLOW_HOME`. */
  baseDir?: string;
  /** LRU bound on cached sandboxes; an evicted thread's sandbox is rebuilt on its next use. */
  maxCachedThreads?: number;
  /** Extra mounts every thread's sandbox sees (validated; see `resolveMounts`). */
  mounts?: readonly SandboxMount[];
  /**
   * Per-user skill mounts (see `userSkillMounts`): the skills root on the host (null: none) and the skills path in
   * the sandbox. They come before {@link mounts}, so their more specific host paths are mapped first.
   */
  userSkills?: { hostRoot: string | null; virtual: string };
}

/** The host directories of a thread (`.../user-data` and its three areas). @throws Error for an unsafe id. */
export function sandboxDirs(baseDir: string, userId: string, threadId: string): SandboxDirs {
  const paths = threadDataPaths(baseDir, userId, threadId);
  return { root: path.dirname(paths.workspace_path), workspace: paths.workspace_path, uploads: paths.uploads_path, outputs: paths.outputs_path };
}

/**
 * Local-filesystem sandbox provider. `acquire(thread, {userId})` creates the thread's `workspace`, `uploads` and
 * `outputs` directories (if missing) and returns `local:<user>:<thread>`; the same id every time. `release` keeps
 * everything (a thread's files outlive its runs); {@link removeThread} drops the cached sandbox and deletes the
 * files when the thread is deleted. Mirrors DeerFlow `LocalSandboxProvider` (per-thread path mappings, LRU).
 */
export class LocalSandboxProvider implements SandboxProvider {
  readonly baseDir: string;
  private readonly maxCached: number;
  readonly mounts: readonly SandboxMount[];
  private readonly userSkills: { hostRoot: string | null; virtual: string } | undefined;
  private readonly cache = new Map<string, LocalSandbox>();
  /** Which provider this is, as /health reports it (`local`; `bubblewrap` for the isolated subclass). */
  readonly kind: string = "local";

  constructor(options: LocalSandboxProviderOptions = {}) {
    this.baseDir = options.baseDir ?? getRuntimeHome();
    this.maxCached = Math.max(1, options.maxCachedThreads ?? DEFAULT_MAX_CACHED_THREADS);
    this.mounts = options.mounts ?? [];
    this.userSkills = options.userSkills;
  }

  /** The sandbox id of a thread (`local:<user>:<thread>`). */
  static idFor(threadId: string, userId = "default"): string {
    return `${ID_PREFIX}${userId}:${threadId}`;
  }

  /** Host directories of a thread (nothing is created). @throws Error for an unsafe thread or user id. */
  dirsFor(threadId: string, userId = "default"): SandboxDirs {
    return sandboxDirs(this.baseDir, userId, threadId);
  }

  /**
   * Returns the thread's sandbox id, creating its directories and caching its LocalSandbox.
   * @throws Error when the thread or user id is not a safe path segment (`^[A-Za-z0-9_-]{1,128}$`).
   */
  acquire(threadId: string, options: { userId?: string } = {}): string {
    return this.sandboxFor(threadId, options.userId ?? "default").id;
  }

  /** The thread's LocalSandbox (created on first use, like {@link acquire}). @throws Error for unsafe ids. */
  sandboxFor(threadId: string, userId = "default"): LocalSandbox {
    const id = LocalSandboxProvider.idFor(threadId, userId);
    const cached = this.cache.get(id);
    // A cached sandbox whose directories vanished (deleted by hand) is rebuilt rather than failing every call.
    if (cached && existsSync(cached.dirs.root)) {
      this.cache.delete(id);
      this.cache.set(id, cached);
      return cached;
    }
    const dirs = this.dirsFor(threadId, userId);
    for (const dir of [dirs.workspace, dirs.uploads, dirs.outputs]) mkdirSync(dir, { recursive: true });
    const sandbox = this.createSandbox(id, threadId, userId, dirs, this.userSkills ? [...userSkillMounts(this.baseDir, userId, this.userSkills.hostRoot, this.userSkills.virtual), ...this.mounts] : this.mounts);
    this.cache.set(id, sandbox);
    while (this.cache.size > this.maxCached) this.cache.delete(this.cache.keys().next().value!);
    return sandbox;
  }

  /**
   * The sandbox for an id from {@link acquire}; rebuilt when it was evicted or the process restarted.
   * @returns undefined for an id this provider does not issue.
   */
  get(sandboxId: string): LocalSandbox | undefined {
    if (!sandboxId.startsWith(ID_PREFIX)) return undefined;
    const [userId, threadId, ...rest] = sandboxId.slice(ID_PREFIX.length).split(":");
    if (!userId || !threadId || rest.length) return undefined;
    try {
      return this.sandboxFor(threadId, userId);
    } catch {
      return undefined;
    }
  }

  /** Builds a thread's sandbox object; subclasses return their own kind (the bubblewrap provider's). */
  protected createSandbox(id: string, threadId: string, userId: string, dirs: SandboxDirs, mounts: readonly SandboxMount[]): LocalSandbox {
    return new LocalSandbox(id, threadId, userId, dirs, mounts);
  }

  /** Nothing to give back: the directories belong to the thread, not to a run. */
  release(_sandboxId: string): void {}

  /** True while the thread's sandbox is cached (acquired and not evicted or removed). */
  has(threadId: string, userId = "default"): boolean {
    return this.cache.has(LocalSandboxProvider.idFor(threadId, userId));
  }

  /** Forgets the thread's sandbox and deletes its `user-data` directory (thread deletion). Idempotent. */
  removeThread(threadId: string, userId = "default"): void {
    this.cache.delete(LocalSandboxProvider.idFor(threadId, userId));
    rmSync(this.dirsFor(threadId, userId).root, { recursive: true, force: true });
  }
}
