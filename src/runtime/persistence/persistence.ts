// Durable runtime state: LangGraph checkpoints and the thread and run tables; one SQLite file by default,
// PostgreSQL when several gateway processes share them.
import { mkdirSync } from "node:fs";
import path from "node:path";
import { MemorySaver, type BaseCheckpointSaver } from "@langchain/langgraph";
import { GroupCommit } from "./sqlite/group-commit.js";
import { GroupCommitSqliteSaver } from "./sqlite/group-commit-saver.js";
import { withStatementCache } from "./sqlite/statement-cache.js";
import { openSqlite } from "./sqlite/sqlite.js";
import Database from "better-sqlite3";
import type { AppConfig } from "../../config/schema.js";
import type { ApiKeyRepository, LoginCounterStore, SessionRepository, UserRepository } from "../../auth/repositories.js";
import { SqliteApiKeyRepository, SqliteLoginCounterStore, SqliteSessionRepository, SqliteUserRepository } from "../../auth/sqlite-repositories.js";
import { SqliteOidcIdentityRepository, type OidcIdentityRepository } from "../../auth/oidc-identities.js";
import type { RunRepository, ThreadRepository } from "./repositories.js";
import { RunStore } from "./sqlite/run-store.js";
import { ThreadStore } from "./sqlite/thread-store.js";
import { UsageLedger, type TokenLedger } from "../limits/usage-ledger.js";
import { LocalRunSlots, type RunSlots } from "../limits/run-slots.js";
import { FeedbackStore, type FeedbackRepository } from "../webapp/feedback-store.js";
import { SqliteResumeStore, type ResumeStore } from "./sqlite/resume-store.js";
import type { ScheduledTaskStore } from "../scheduler/task-store.js";
import { SqliteTaskStore } from "../scheduler/sqlite-task-store.js";
import type { RunEventStore } from "./run-event-store.js";
import { SqliteRunEventStore } from "./sqlite/run-event-store.js";
import type { MemoryDocuments } from "../../agents/memory/memory-store.js";

/** The checkpointer, the thread and run repositories, and how to close them. */
export interface Persistence {
  checkpointer: BaseCheckpointSaver;
  threads: ThreadRepository;
  runs: RunRepository;
  /** Accounts (same database as the thread table). */
  users: UserRepository;
  /** API keys, stored hashed (same database). */
  apiKeys: ApiKeyRepository;
  /** Server-side sessions (same database: shared by every process on PostgreSQL). */
  sessions: SessionRepository;
  /** Login lockout counters (same database). */
  loginCounters: LoginCounterStore;
  /** SSO identity links (same database). */
  oidcIdentities: OidcIdentityRepository;
  /** Token usage per user and UTC day (the `token_usage` table, same database: shared by every process on PostgreSQL). */
  usage: TokenLedger;
  /** Runs in flight per user, for `limits.max_concurrent_runs_per_user` (process memory; PostgreSQL when shared). */
  runSlots: RunSlots;
  /** Run feedback (JSON files under `<home>/data/feedback`; the `run_feedback` table on PostgreSQL). */
  feedback: FeedbackRepository;
  /** Scheduled tasks and their run history (src/runtime/scheduler/; same database as the thread table). */
  scheduledTasks: ScheduledTaskStore;
  /** Each run's stored events (the `run_events` table; same database as the run table). */
  runEvents: RunEventStore;
  /**
   * Resume specs of in-flight runs (the gateway's SQLite file, or PostgreSQL's `run_resumes` table for one process
   * without Redis): a run a crash cut short is resumed when the process starts again (docs/durable-runs.md). Absent:
   * such runs are interrupted on open (or, with Redis, resumed by the coordinator).
   */
  resumes?: ResumeStore;
  /**
   * Memory documents shared by every process on the database (the `memory_documents` table; PostgreSQL only), with
   * the one-time import of a home's memory files. Absent: memory stays in files under the home.
   */
  memory?: MemoryDocuments & { adoptFiles(root: string): Promise<number> };
  /** Human-readable location (file path, `memory` or `postgres`), for logs. Never holds credentials. */
  location: string;
  /** True when threads, runs and checkpoints live in a database other processes can share (PostgreSQL). */
  shared: boolean;
  /** A round trip to a database server (PostgreSQL only; a local SQLite file has none): rejects while it is down. For readiness (`GET /readyz`). */
  ping?(): Promise<void>;
  close(): Promise<void>;
}

/** Options of {@link openPersistence}. */
export interface OpenPersistenceOptions {
  /**
   * Marks runs left `pending`/`running` as interrupted and `busy` threads as idle on open (default true): right
   * for a single process, where nothing runs yet. Off when other live processes share the database (the Redis
   * coordinator reaps only the runs of dead processes).
   */
  recoverOrphans?: boolean;
}

/** The PostgreSQL URL of the `database` section, or null when its backend is not postgres. */
export function databaseUrl(appConfig: AppConfig): string | null {
  const db = appConfig.database;
  if (db?.backend !== "postgres") return null;
  const url = db.url ?? db.postgres_url;
  if (!url) throw new Error("database.backend postgres needs database.url (or database.postgres_url)");
  return url;
}

async function openCheckpointer(connectionString: string): Promise<BaseCheckpointSaver & { end(): Promise<void> }> {
  const { PostgresSaver } = await import("@langchain/langgraph-checkpoint-postgres");
  const { default: pg } = await import("pg");
  // Our own pool (what fromConnString builds, plus a listener): an idle client whose server went away emits
  // 'error' on its pool, and with no listener that killed the process when PostgreSQL restarted.
  const pool = new pg.Pool({ connectionString });
  pool.on("error", () => undefined);
  const saver = new PostgresSaver(pool);
  await saver.setup();
  return saver;
}

/**
 * Opens persistence (restart-only).
 * - `database.backend: postgres` (`url`): threads and runs in PostgreSQL (migrations applied, idempotent);
 *   checkpoints there too unless a `checkpointer` section says otherwise.
 * - Otherwise the `checkpointer` section: default and `type: sqlite`: one SQLite file (`connection_string`
 *   relative to `home`, default `<home>/data/deerflow.sqlite`, WAL mode) holding the checkpoints and the `threads`
 *   and `runs` tables; `type: memory`: all in memory (lost on restart); `type: postgres`: PostgresSaver on
 *   `connection_string`, threads and runs in SQLite under `home`.
 * A SQLite file's checkpoint, thread, run and token-usage writes go through one {@link GroupCommit}: those of one event-loop turn
 * share a transaction, each caller answered after it commits.
 * @param home The runtime home (`DEER_FLOW_HOME`).
 * @throws Error when a database cannot be opened or a section lacks its URL.
 */
export async function openPersistence(appConfig: AppConfig, home: string, options: OpenPersistenceOptions = {}): Promise<Persistence> {
  const recover = options.recoverOrphans ?? true;
  const section = appConfig.checkpointer ?? null;
  const pgUrl = databaseUrl(appConfig);
  if (pgUrl) return openPostgres(pgUrl, section, recover, home);
  if (section?.type === "memory" || appConfig.database?.backend === "memory") {
    const db = new Database(":memory:");
    return { checkpointer: new MemorySaver(), threads: new ThreadStore(db), runs: new RunStore(db), ...accountStores(db), usage: new UsageLedger(db), ...localStores(home), scheduledTasks: new SqliteTaskStore(db), runEvents: new SqliteRunEventStore(db), location: "memory", shared: false, close: async () => void db.close() };
  }
  const file = section?.type === "sqlite" && section.connection_string ? path.resolve(home, section.connection_string) : path.join(home, "data", "deerflow.sqlite");
  mkdirSync(path.dirname(file), { recursive: true });
  // WAL + NORMAL: no fsync per commit. Measured +15% runs/s at concurrency 1 over FULL (bench/runs.bench.ts).
  // The WAL is copied back into the database (with two fsyncs, on the event loop) every WAL_AUTOCHECKPOINT_PAGES
  // instead of SQLite's 1,000: a run writes ~15 small statements that touch the same few B-tree pages, so a longer
  // interval copies each page fewer times and syncs less often.
  const db = openSqlite(file, { walAutocheckpointPages: WAL_AUTOCHECKPOINT_PAGES });
  // One write queue for the file: a turn's checkpoints, run rows and thread rows share one commit.
  const commits = new GroupCommit(db);
  const threads = new ThreadStore(db, commits);
  const runs = new RunStore(db, commits);
  const resumes = new SqliteResumeStore(db, commits);
  if (recover) {
    // Nothing runs yet in this process: a busy thread or a running run is left over from a crash. A run with a
    // resume spec stays in flight: the app resumes it once it is built (resumeLocalRuns).
    await threads.resetBusy();
    await runs.interruptOrphans(await resumes.withoutSpec());
  }
  if (section?.type === "postgres") {
    if (!section.connection_string) throw new Error("checkpointer.type postgres needs checkpointer.connection_string");
    const saver = await openCheckpointer(section.connection_string);
    return { checkpointer: saver, threads, runs, usage: new UsageLedger(db, commits), ...localStores(home), ...accountStores(db), scheduledTasks: new SqliteTaskStore(db), runEvents: new SqliteRunEventStore(db, commits), resumes, location: "postgres", shared: false, close: async () => { await saver.end(); commits.flush(); db.close(); } };
  }
  const checkpointer = new GroupCommitSqliteSaver(withStatementCache(db), commits);
  const close = async () => {
    commits.flush();
    db.close();
  };
  return { checkpointer, threads, runs, usage: new UsageLedger(db, commits), ...localStores(home), ...accountStores(db), scheduledTasks: new SqliteTaskStore(db), runEvents: new SqliteRunEventStore(db, commits), resumes, location: file, shared: false, close };
}

/** The stores of one process with a local database: run slots in memory, feedback files under `home`. */
function localStores(home: string): Pick<Persistence, "runSlots" | "feedback"> {
  return { runSlots: new LocalRunSlots(), feedback: new FeedbackStore(path.join(home, "data", "feedback")) };
}

/** The account, API-key, session and login-counter stores over `db`. */
function accountStores(db: Database.Database): Pick<Persistence, "users" | "apiKeys" | "sessions" | "loginCounters" | "oidcIdentities"> {
  const users = new SqliteUserRepository(db);
  return { users, apiKeys: new SqliteApiKeyRepository(db), sessions: new SqliteSessionRepository(db), loginCounters: new SqliteLoginCounterStore(db), oidcIdentities: new SqliteOidcIdentityRepository(db) };
}

/**
 * Pages (4 KiB each) the gateway database's WAL grows to before SQLite checkpoints it: 16 MiB on disk at most
 * between checkpoints. Measured with a run's statement mix (15 statements, 5 commits, 3 checkpoint blobs; 2,000
 * runs x 6 alternating reps): 0.68 ms of blocking SQLite time per run at 1,000 pages, 0.59 at 4,000, 0.57 at
 * 10,000; CPU time unchanged (0.40-0.42 ms): what goes is time the event loop waits on fsync.
 */
export const WAL_AUTOCHECKPOINT_PAGES = 4000;

/** Advisory-lock key serialising PostgresSaver.setup() across processes. */
const CHECKPOINTER_SETUP_LOCK = 0x0de3f11;

async function openPostgres(url: string, section: AppConfig["checkpointer"], recover: boolean, home: string): Promise<Persistence> {
  const { default: pg } = await import("pg");
  const { migratePostgres, PgRunStore, PgThreadStore } = await import("./postgres/pg-stores.js");
  const { PgTaskStore } = await import("../scheduler/pg-task-store.js");
  const { PgRunEventStore } = await import("./postgres/pg-run-event-store.js");
  const { PgApiKeyRepository, PgLoginCounterStore, PgSessionRepository, PgUserRepository } = await import("../../auth/pg-repositories.js");
  const { PgOidcIdentityRepository } = await import("../../auth/oidc-identities.js");
  const { PgUsageLedger } = await import("../limits/pg-usage-ledger.js");
  const { PgRunSlots } = await import("../limits/pg-run-slots.js");
  const { PgFeedbackStore } = await import("./postgres/pg-feedback-store.js");
  const { PgResumeStore } = await import("./postgres/pg-resume-store.js");
  const { PgMemoryStore } = await import("./postgres/pg-memory-store.js");
  const pool = new pg.Pool({ connectionString: url, max: 20 });
  // An idle client that loses its server emits 'error' on the pool; without a listener that kills the process.
  pool.on("error", () => undefined);
  const scheduledTasks = new PgTaskStore(pool);
  const runEvents = new PgRunEventStore(pool);
  try {
    await migratePostgres(pool);
    await scheduledTasks.migrate();
    await runEvents.migrate();
    await Promise.all([PgUsageLedger.migrate(pool), PgRunSlots.migrate(pool), PgFeedbackStore.migrate(pool), PgResumeStore.migrate(pool), PgMemoryStore.migrate(pool)]);
  } catch (err) {
    await pool.end();
    throw new Error(`cannot open database.url: ${(err as Error).message}`);
  }
  const threads = new PgThreadStore(pool);
  const runs = new PgRunStore(pool);
  // One process (no Redis coordinator: `recover`) with durable checkpoints resumes what a crash cut short, as on
  // SQLite; with Redis the coordinator keeps the resume specs and resumes across processes, so none are kept here.
  const resumes = recover && section?.type !== "memory" ? new PgResumeStore(pool) : undefined;
  if (recover) {
    await threads.resetBusy();
    await runs.interruptOrphans(resumes ? await resumes.withoutSpec() : undefined);
  }
  let checkpointer: BaseCheckpointSaver;
  let closeCheckpointer = async () => {};
  if (section?.type === "memory") checkpointer = new MemorySaver();
  else if (section?.type === "sqlite") {
    const file = section.connection_string ? path.resolve(home, section.connection_string) : path.join(home, "data", "deerflow.sqlite");
    mkdirSync(path.dirname(file), { recursive: true });
    const db = openSqlite(file);
    const saver = new GroupCommitSqliteSaver(withStatementCache(db));
    checkpointer = saver;
    closeCheckpointer = async () => {
      saver.flush();
      db.close();
    };
  } else {
    // PostgresSaver.setup() is not safe against itself: processes starting together take turns.
    const lock = await pool.connect();
    let saver: Awaited<ReturnType<typeof openCheckpointer>>;
    try {
      await lock.query("SELECT pg_advisory_lock($1)", [CHECKPOINTER_SETUP_LOCK]);
      saver = await openCheckpointer(section?.connection_string ?? url);
    } finally {
      await lock.query("SELECT pg_advisory_unlock($1)", [CHECKPOINTER_SETUP_LOCK]).catch(() => undefined);
      lock.release();
    }
    checkpointer = saver;
    closeCheckpointer = () => saver.end();
  }
  const usage = new PgUsageLedger(pool);
  const runSlots = new PgRunSlots(pool);
  return {
    checkpointer,
    threads,
    runs,
    usage,
    runSlots,
    feedback: new PgFeedbackStore(pool),
    users: new PgUserRepository(pool),
    apiKeys: new PgApiKeyRepository(pool),
    sessions: new PgSessionRepository(pool),
    loginCounters: new PgLoginCounterStore(pool),
    scheduledTasks,
    ping: async () => void (await pool.query("SELECT 1")),
    runEvents,
    resumes,
    memory: new PgMemoryStore(pool),
    oidcIdentities: new PgOidcIdentityRepository(pool),
    location: "postgres",
    shared: section?.type !== "memory" && section?.type !== "sqlite",
    close: async () => {
      await closeCheckpointer();
      // The runs have been drained: their last token additions and slot releases go before the pool.
      await usage.flush().catch(() => undefined);
      await runSlots.close();
      await pool.end();
    },
  };
}
