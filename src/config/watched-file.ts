// One helper for every config file the gateway re-reads while it runs (config.yaml, extensions_config.json):
// content signature, a read that is only trusted when the file did not change under it, the last good value
// kept on a failed reload, and each distinct failure logged once.
import { createHash } from "node:crypto";
import { readFileSync, statSync } from "node:fs";

/** `(mtimeMs, size, sha256-hex)` of a file; the hash always covers the whole file. */
export interface FileSignature {
  mtimeMs: number;
  size: number;
  sha256: string;
}

/** Two signatures of the same content and stat. */
export function sameSignature(a: FileSignature | null | undefined, b: FileSignature): boolean {
  return !!a && a.mtimeMs === b.mtimeMs && a.size === b.size && a.sha256 === b.sha256;
}

/**
 * Default stability period of config.yaml, in ms: a changed file is adopted only once its last modification is at
 * least this old (and it parses). An in-place edit (truncate, then write in pieces) passes through states that are
 * valid YAML but lack sections; a pause between two writes shorter than this is never adopted. Meanwhile the last
 * good config is served and health reports `reloading`. Set with `DEER_FLOW_CONFIG_STABLE_MS`.
 */
export const CONFIG_QUIET_MS = 1000;

/**
 * The config stability period from `DEER_FLOW_CONFIG_STABLE_MS` (a non-negative integer, ms), else
 * {@link CONFIG_QUIET_MS}; an invalid value falls back to the default (this runs on every config read).
 */
export function configStableMs(env: NodeJS.ProcessEnv = process.env): number {
  const raw = env.DEER_FLOW_CONFIG_STABLE_MS?.trim();
  const n = raw ? Number(raw) : NaN;
  return Number.isInteger(n) && n >= 0 ? n : CONFIG_QUIET_MS;
}

/**
 * Whether a file's last modification is too recent to trust ({@link CONFIG_QUIET_MS}). An mtime more than a second
 * in the future (clock skew, a tool that sets it) is not treated as recent; within a second it is, since mtimes carry
 * sub-millisecond parts that `Date.now()` does not.
 */
export function recentlyModified(mtimeMs: number, now = Date.now(), quietMs = CONFIG_QUIET_MS): boolean {
  const age = now - mtimeMs;
  return age > -1000 && age < quietMs;
}

/** The error of a read that never saw the file hold still (an edit in progress), not of a broken file. */
export class FileInFlux extends Error {}

/** How many times a read is retried when the file changes while it is read (an in-place edit in progress). */
const STABLE_READ_ATTEMPTS = 5;

/**
 * Reads a file with its signature, and only trusts the read when the file's stat is the same before and after
 * it: a read that raced an in-place edit (valid YAML, half the models) is retried, and after
 * {@link STABLE_READ_ATTEMPTS} unstable reads it throws instead of serving a torn file.
 * @throws the fs error of a missing or unreadable file; Error "<path> is being written" when it never settles.
 */
export function readStable(path: string): { text: string; signature: FileSignature } {
  for (let attempt = 0; attempt < STABLE_READ_ATTEMPTS; attempt++) {
    const before = statSync(path);
    const buf = readFileSync(path);
    const after = statSync(path);
    if (before.mtimeMs === after.mtimeMs && before.ctimeMs === after.ctimeMs && before.size === after.size && buf.length === after.size && before.ino === after.ino) {
      return { text: buf.toString("utf8"), signature: { mtimeMs: after.mtimeMs, size: after.size, sha256: createHash("sha256").update(buf).digest("hex") } };
    }
  }
  throw new FileInFlux(`${path} is being written; try again`);
}

/** The parts of a stat that change whenever a file's content can have changed. */
interface StatKey {
  ino: number;
  size: number;
  mtimeMs: number;
  ctimeMs: number;
}

/** Two stats of the same file version. */
function sameStat(a: StatKey, b: StatKey): boolean {
  return a.ino === b.ino && a.size === b.size && a.mtimeMs === b.mtimeMs && a.ctimeMs === b.ctimeMs;
}

/**
 * How old, in ms, the last change of a file or directory must be before its stat alone can stand for its content
 * (a config file) or its entries (a skills directory). Timestamps are coarse (a few ms on most file systems, 2 s
 * for FAT's mtime): two changes within one step can share them, so a read soon after a change is followed by full
 * reads until the change is this old. A trusted read then costs one stat instead of two stats, a read and a SHA-256
 * (getAppConfig runs several times per request), or of a stat, an open, the reads of the entries and a close.
 */
export const STAT_TRUST_MS = 2000;

/**
 * Whether `stat`, taken now, can stand for what it describes ({@link STAT_TRUST_MS}): the later of its ctime (which
 * every write, rename and `utimes` moves and no caller can set back) and its mtime (which `utimes` can set ahead)
 * is at least that old.
 * @param stat A `fs.Stats` (or its two timestamps, ms since the epoch).
 * @param now The current time, ms since the epoch.
 */
export function statSettled(stat: { ctimeMs: number; mtimeMs: number }, now = Date.now()): boolean {
  return now - Math.max(stat.ctimeMs, stat.mtimeMs) >= STAT_TRUST_MS;
}

/** Options of {@link WatchedFile}. */
export interface WatchedFileOptions<T> {
  /**
   * Parses the file's text. `previous` is the value served so far (null on the first load), for rules that
   * depend on it (restart-only fields, refusing an emptied file).
   * @throws any error to reject the content (the last good value stays in service).
   */
  parse(text: string, path: string, previous: T | null): T;
  /** Called once per distinct failure message (log it); a success clears the memory of past failures. */
  onFailure(message: string): void;
  /** Called after a successful reload that replaced an earlier value (log it). */
  onReload?(path: string): void;
  /** Served before the first successful load (and then the reads never throw); without it the first failure throws. */
  fallback?: T;
  /**
   * Stability period (ms, or a function read on each call): a changed file modified less than this long ago keeps
   * the last good value served and the status `pending` (0, the default, reads at once; config.yaml uses
   * {@link configStableMs} because editors write it in place).
   */
  quietMs?: number | (() => number);
}

/** What a {@link WatchedFile} serves. */
export interface WatchedFileStatus {
  /** The file the served value came from. */
  path: string | null;
  /** The last failure (read or parse) since the served value was loaded, or null when the file is healthy. */
  error: string | null;
  /** A changed file is waiting out its stability period (the last good value is served meanwhile). */
  pending: boolean;
}

/**
 * A config file re-read on demand. With `quietMs`, a file modified that recently keeps the last good value served.
 * `read(path)` computes the signature on every call and returns the same value
 * object while the content is unchanged (callers may use identity as a cache key); a changed file is parsed
 * again; a failed read or parse keeps the last good value and records the error. An unchanged broken file is not
 * re-parsed.
 */
export class WatchedFile<T> {
  private value: T | null;
  private path: string | null = null;
  private signature: FileSignature | null = null;
  private failedSignature: FileSignature | null = null;
  private error: string | null = null;
  private pending = false;
  private readonly logged = new Set<string>();
  /** See {@link settledStatOf}: the stat that lets a read skip the file's content. */
  private settledStat: StatKey | null = null;
  /** The stat of the file as last read: a recent mtime with this very stat is not an edit (nothing to settle). */
  private readStat: StatKey | null = null;

  constructor(private readonly options: WatchedFileOptions<T>) {
    this.value = options.fallback ?? null;
  }

  /** The value served so far, or null before the first successful load. */
  get current(): T | null {
    return this.value;
  }

  /** The served file and its health. */
  status(): WatchedFileStatus {
    return { path: this.path, error: this.error, pending: this.pending };
  }

  /**
   * Records a failure that happened before the file could be read (e.g. the path cannot be resolved).
   * @throws `err` when nothing was ever loaded (there is no last good value to serve).
   */
  fail(err: unknown): T {
    if (this.value === null) throw err;
    this.record((err as Error).message);
    return this.value;
  }

  /**
   * The value of the file at `path` (see the class comment).
   * @throws the read or parse error only when nothing was ever loaded.
   */
  read(path: string): T {
    let text: string;
    let signature: FileSignature;
    let seen: StatKey;
    try {
      const stat = statSync(path);
      // Unchanged since a read made well after its last change: serve it without reading and hashing again.
      if (this.value !== null && this.path === path && this.error === null && this.settledStat !== null && sameStat(this.settledStat, stat)) return this.value;
      // While the file is being written the last good value is served, without reading (or reporting) it.
      const option = this.options.quietMs ?? 0;
      const quietMs = typeof option === "function" ? option() : option;
      if (quietMs > 0 && this.value !== null && this.path === path && recentlyModified(stat.mtimeMs, Date.now(), quietMs)) {
        // Written recently, but exactly as it was read (e.g. the start-up read of a file written just before):
        // nothing is being edited, so health stays as it is.
        this.pending = !(this.readStat !== null && this.error === null && sameStat(this.readStat, stat));
        return this.value;
      }
      seen = { ino: stat.ino, size: stat.size, mtimeMs: stat.mtimeMs, ctimeMs: stat.ctimeMs };
      ({ text, signature } = readStable(path));
    } catch (err) {
      // A file that never held still during the read is an edit in progress, not a failure.
      if (err instanceof FileInFlux && this.value !== null) {
        this.pending = true;
        return this.value;
      }
      this.pending = false;
      return this.fail(err);
    }
    this.pending = false;
    const settled = this.settledStatOf(path);
    if (this.value !== null && this.path === path && sameSignature(this.signature, signature)) {
      // The good file is back unchanged (e.g. moved away and back): it is healthy again.
      if (this.error !== null) this.clearError();
      this.settledStat = settled;
      this.readStat = seen;
      return this.value;
    }
    if (this.value !== null && this.error !== null && sameSignature(this.failedSignature, signature)) return this.value;
    try {
      const previous = this.value;
      const next = this.options.parse(text, path, previous);
      Object.assign(this, { value: next, path, signature, failedSignature: null });
      this.clearError();
      this.settledStat = settled;
      this.readStat = seen;
      if (previous !== null) this.options.onReload?.(path);
      return next;
    } catch (err) {
      if (this.value === null) throw err;
      this.failedSignature = signature;
      this.record((err as Error).message);
      return this.value;
    }
  }

  /**
   * The file's stat after a good read, when that stat can stand for the content ({@link statSettled}): no further
   * write can share its timestamps. Null otherwise (the next read reads and hashes the file again).
   */
  private settledStatOf(path: string): StatKey | null {
    try {
      const stat = statSync(path);
      return statSettled(stat) ? { ino: stat.ino, size: stat.size, mtimeMs: stat.mtimeMs, ctimeMs: stat.ctimeMs } : null;
    } catch {
      return null;
    }
  }

  /** Forgets everything (tests, `resetAppConfig`). */
  reset(): void {
    this.settledStat = null;
    this.readStat = null;
    this.pending = false;
    Object.assign(this, { value: this.options.fallback ?? null, path: null, signature: null, failedSignature: null });
    this.clearError();
  }

  private record(message: string): void {
    this.error = message;
    if (this.logged.has(message)) return;
    this.logged.add(message);
    this.options.onFailure(message);
  }

  private clearError(): void {
    this.error = null;
    this.logged.clear();
  }
}
