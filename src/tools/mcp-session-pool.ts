// Port of DeerFlow mcp/session_pool.py (MCPSessionPool): persistent MCP sessions keyed by (server, scope), the
// scope being `<user_id>:<thread_id>`, so a stateful server (a browser, a REPL, a counter) keeps its state across
// the tool calls and turns of one thread, and two threads or two users never share it.

/** Upstream `MCPSessionPool.MAX_SESSIONS`: sessions kept at most; the least recently used one is closed first. */
export const MAX_POOLED_SESSIONS = 256;
/**
 * How long an unused session is kept, in ms. Upstream keeps a session until LRU eviction or shutdown; a Node
 * process may run for weeks, so an idle one (a stdio subprocess, a server-side browser) is closed after 10 minutes,
 * upstream's idle timeout for pooled sandboxes.
 */
export const POOLED_SESSION_IDLE_MS = 600_000;

/** One open session: its tools by raw MCP name, and how to close it. */
export interface PooledSession {
  tools: Map<string, unknown>;
  close(): Promise<void>;
}

interface Entry {
  server: string;
  session: Promise<PooledSession>;
  lastUsed: number;
  /** Calls in flight: a session is never closed for idleness under one. */
  active: number;
}

/**
 * Sessions by (server, scope). Concurrent first calls of one scope share one opening; an opening that fails is
 * forgotten (the next call tries again). Closing is never awaited by a caller that did not ask for it.
 */
export class McpSessionPool {
  private readonly entries = new Map<string, Entry>();
  private readonly timer: NodeJS.Timeout;

  constructor(private readonly opts: { maxSessions?: number; idleMs?: number; now?: () => number } = {}) {
    this.timer = setInterval(() => this.sweep(), Math.min(this.idleMs, 60_000));
    this.timer.unref?.();
  }

  private get idleMs(): number {
    return this.opts.idleMs ?? POOLED_SESSION_IDLE_MS;
  }

  private now(): number {
    return (this.opts.now ?? Date.now)();
  }

  /** Open sessions (openings in flight included). */
  get size(): number {
    return this.entries.size;
  }

  /**
   * Runs `fn` on the scope's session of `server`, opened with `open` when there is none.
   * @throws what `open` or `fn` throws.
   */
  async use<T>(server: string, scope: string, open: () => Promise<PooledSession>, fn: (session: PooledSession) => Promise<T>): Promise<T> {
    this.sweep();
    const key = `${server}\u0000${scope}`;
    let entry = this.entries.get(key);
    if (entry) this.entries.delete(key);
    else {
      while (this.entries.size >= (this.opts.maxSessions ?? MAX_POOLED_SESSIONS)) this.evict(this.entries.keys().next().value as string);
      const created: Entry = { server, session: open(), lastUsed: this.now(), active: 0 };
      created.session.catch(() => this.entries.get(key) === created && this.entries.delete(key));
      entry = created;
    }
    // Map order is recency: the entry goes last.
    this.entries.set(key, entry);
    entry.active++;
    try {
      return await fn(await entry.session);
    } finally {
      entry.active--;
      entry.lastUsed = this.now();
    }
  }

  private evict(key: string): void {
    const entry = this.entries.get(key);
    if (!entry) return;
    this.entries.delete(key);
    void entry.session.then((s) => s.close()).catch(() => undefined);
  }

  /** Closes the sessions idle for longer than the idle time. */
  sweep(): void {
    const cutoff = this.now() - this.idleMs;
    for (const [key, entry] of this.entries) if (entry.active === 0 && entry.lastUsed <= cutoff) this.evict(key);
  }

  /** Closes every session of one server (its entry was edited or removed). */
  closeServer(server: string): void {
    for (const [key, entry] of this.entries) if (entry.server === server) this.evict(key);
  }

  /** Closes every session and waits for them (shutdown). */
  async closeAll(): Promise<void> {
    const sessions = [...this.entries.values()].map((e) => e.session);
    this.entries.clear();
    await Promise.all(sessions.map((s) => s.then((x) => x.close()).catch(() => undefined)));
  }

  /** Stops the idle sweep timer and closes every session. */
  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.closeAll();
  }
}
