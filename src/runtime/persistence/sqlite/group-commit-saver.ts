// LangGraph's SQLite checkpointer with group commit: the checkpoints and task writes of every run that reach the
// saver in one event-loop turn are committed in one transaction, and each caller's promise settles after the commit
// that holds its rows. The rows, tables and reads are the library's own.
import type { RunnableConfig } from "@langchain/core/runnables";
import { copyCheckpoint, WRITES_IDX_MAP, type Checkpoint, type CheckpointListOptions, type CheckpointMetadata, type CheckpointTuple, type PendingWrite, type SerializerProtocol } from "@langchain/langgraph-checkpoint";
import { SqliteSaver } from "@langchain/langgraph-checkpoint-sqlite";
import type Database from "better-sqlite3";
import { GroupCommit } from "./group-commit.js";

const INSERT_CHECKPOINT =
  "INSERT OR REPLACE INTO checkpoints (thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, type, checkpoint, metadata) VALUES (?, ?, ?, ?, ?, ?, ?)";
const WRITE_COLUMNS = "INTO writes (thread_id, checkpoint_ns, checkpoint_id, task_id, idx, channel, type, value) VALUES (?, ?, ?, ?, ?, ?, ?, ?)";
/** Special channels (errors, interrupts, resumes) keep the latest value per index; task outputs keep the first. */
const REPLACE_WRITE = `INSERT OR REPLACE ${WRITE_COLUMNS}`;
const IGNORE_WRITE = `INSERT OR IGNORE ${WRITE_COLUMNS}`;

/**
 * `SqliteSaver` (`@langchain/langgraph-checkpoint-sqlite`) that commits in groups. Upstream, every `put` and every
 * `putWrites` is its own SQLite transaction: about six commits a run, each taking and releasing the WAL locks and
 * writing the same few B-tree pages again (32 `fcntl` and 37 `pwrite64` system calls a run, measured). Here the
 * rows are queued once serialized and written by the connection's {@link GroupCommit}: one transaction at the end of
 * the event-loop turn (`setImmediate`), shared by concurrent runs and by the other writes queued on the connection
 * (the run and thread rows).
 *
 * Guarantees, as upstream:
 * - a `put` / `putWrites` / `deleteThread` promise resolves only once its rows are committed (LangGraph awaits
 *   these promises before a run ends, so a finished run's checkpoints are stored before its status says so);
 * - reads (`getTuple`, `list`) first commit what is queued, so they see every write made before them;
 * - one call's rows are atomic. When a group's transaction fails, each call is retried alone and only the calls
 *   that fail again are rejected, with SQLite's error.
 *
 * Same table layout as upstream: files written by either class are read by the other.
 */
export class GroupCommitSqliteSaver extends SqliteSaver {
  /**
   * @param db Open connection; the saver creates its tables on first use. Other code may share the connection:
   *   the saver's transactions are synchronous and never span an `await`. Pass it through `withStatementCache`:
   *   the saver prepares its statements on every call, as upstream does.
   * @param commits The connection's write queue, shared with the other stores on `db` (a queue of its own if omitted).
   * @param serde Serializer (LangGraph's JSON-plus by default).
   */
  constructor(
    db: Database.Database,
    private readonly commits: GroupCommit = new GroupCommit(db),
    serde?: SerializerProtocol,
  ) {
    super(db, serde);
  }

  /**
   * Stores `checkpoint` with its `metadata` under the thread and namespace of `config`.
   * @returns The config addressing the stored checkpoint.
   * @throws Error when `config.configurable.thread_id` is missing, or SQLite's error when the row cannot be stored.
   */
  override async put(config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata): Promise<RunnableConfig> {
    this.setup();
    const threadId = config.configurable?.thread_id as string | undefined;
    if (!threadId) throw new Error('Missing "thread_id" field in passed "config.configurable".');
    const namespace = (config.configurable?.checkpoint_ns as string | undefined) ?? "";
    const [[type, blob], [metadataType, metadataBlob]] = await Promise.all([this.serde.dumpsTyped(copyCheckpoint(checkpoint)), this.serde.dumpsTyped(metadata)]);
    if (type !== metadataType) throw new Error("Failed to serialize the checkpoint and its metadata to the same type.");
    const parentId = config.configurable?.checkpoint_id as string | undefined;
    await this.enqueue(INSERT_CHECKPOINT, [[threadId, namespace, checkpoint.id, parentId, type, blob, metadataBlob]]);
    return { configurable: { thread_id: threadId, checkpoint_ns: namespace, checkpoint_id: checkpoint.id } };
  }

  /**
   * Stores the writes a task made against the checkpoint `config` addresses.
   * @throws Error when `thread_id` or `checkpoint_id` is missing from `config.configurable`, or SQLite's error.
   */
  override async putWrites(config: RunnableConfig, writes: PendingWrite[], taskId: string): Promise<void> {
    this.setup();
    const configurable = config.configurable;
    if (!configurable?.thread_id) throw new Error("Missing thread_id field in config.configurable.");
    if (!configurable.checkpoint_id) throw new Error("Missing checkpoint_id field in config.configurable.");
    if (writes.length === 0) return;
    const rows = await Promise.all(
      writes.map(async ([channel, value], idx) => {
        const [type, blob] = await this.serde.dumpsTyped(value);
        return [configurable.thread_id, configurable.checkpoint_ns ?? "", configurable.checkpoint_id, taskId, WRITES_IDX_MAP[channel] ?? idx, channel, type, blob];
      }),
    );
    await this.enqueue(writes.every(([channel]) => channel in WRITES_IDX_MAP) ? REPLACE_WRITE : IGNORE_WRITE, rows);
  }

  /** The checkpoint `config` addresses (the thread's latest without a `checkpoint_id`), after committing the queue. */
  override async getTuple(config: RunnableConfig): Promise<CheckpointTuple | undefined> {
    this.flush();
    return super.getTuple(config);
  }

  /** The thread's checkpoints, newest first, after committing the queue. */
  override async *list(config: RunnableConfig, options?: CheckpointListOptions): AsyncGenerator<CheckpointTuple> {
    this.flush();
    yield* super.list(config, options);
  }

  /** Deletes every checkpoint and write of the thread, after committing the queue (so nothing queued outlives it). */
  override async deleteThread(threadId: string): Promise<void> {
    this.flush();
    return super.deleteThread(threadId);
  }

  /** Commits everything queued on the connection now, synchronously (reads, shutdown). Never throws. */
  flush(): void {
    this.commits.flush();
  }

  /** Queues `rows` of `sql` as one write; resolves once committed. */
  private enqueue(sql: string, rows: unknown[][]): Promise<void> {
    return this.commits.run(() => {
      const statement = this.db.prepare(sql);
      for (const row of rows) statement.run(...row);
    });
  }
}
