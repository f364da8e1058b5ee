// Thread operations beyond plain rows: state updates through the graph, history, and deletion of everything a
// thread owns (checkpoints, runs, directories).
import { rmSync } from "node:fs";
import type { BaseCheckpointSaver } from "@langchain/langgraph";
import { THREAD_STATE_FIELDS } from "../../agents/thread-state.js";
import { buildRunContext, type RunSandboxProvider } from "../../agents/run-context.js";
import { threadDir } from "../../config/paths.js";
import { refuseServerOwnedState } from "../../agents/server-owned-state.js";
import type { AppConfig } from "../../config/schema.js";
import { ConflictError, DeerflowError, NotFoundError, ValidationError } from "../../errors.js";
import type { AgentFactory } from "../runs/agent-factory.js";
import type { Persistence } from "../persistence/persistence.js";
import type { RunManager } from "../runs/run-manager.js";
import { toMessages } from "../runs/run-service.js";
import type { ThreadRecord } from "../persistence/repositories.js";
import { checkpointToState, readThreadState, type ThreadStateResponse } from "./thread-state-reader.js";

/** What {@link ThreadService} needs. */
export interface ThreadServiceDeps {
  persistence: Persistence;
  runs: RunManager;
  agentFactory: AgentFactory;
  getAppConfig: () => AppConfig;
  /** Runtime home: thread directories live under `<home>/users/<user>/threads/<id>`. */
  home: string;
  /** Sandbox provider whose per-thread state is dropped when a thread is deleted. */
  sandboxProvider?: RunSandboxProvider & { removeThread(threadId: string, userId?: string): void };
}

/** Body of `POST /threads/{id}/state`. */
export interface StateUpdate {
  values?: Record<string, unknown> | null;
  as_node?: string | null;
  checkpoint_id?: string | null;
  checkpoint?: { checkpoint_id?: string } | null;
}

interface UpdatableGraph {
  updateState(config: Record<string, unknown>, values: unknown, asNode?: string): Promise<unknown>;
  nodes?: Record<string, unknown>;
}

/** Thread state updates, history and deletion. */
export class ThreadService {
  constructor(private readonly deps: ThreadServiceDeps) {}

  /** The thread (routes have already checked the caller owns it). @throws NotFoundError for an unknown thread. */
  private async requireThread(threadId: string): Promise<ThreadRecord> {
    const thread = await this.deps.persistence.threads.get(threadId);
    if (!thread) throw new NotFoundError(`Thread ${threadId} not found`);
    return thread;
  }

  /**
   * Applies `values` to the thread's state as a graph update (each channel's reducer applies: messages are
   * appended or replaced by id), optionally from `checkpoint_id`. `as_node` is honoured when it names a node of the
   * lead-agent graph; otherwise LangGraph picks the writer (so a rename after a finished run leaves `next` empty).
   * @throws NotFoundError for an unknown thread or checkpoint; ConflictError while a run is in flight;
   *   ValidationError "Unknown thread-state field(s): ..." for keys that are not ThreadState channels, or
 *   "Invalid state values: ..." for values a channel refuses; 422 `server_owned_field` for server-owned channels.
   */
  async updateState(threadId: string, update: StateUpdate): Promise<ThreadStateResponse> {
    const thread = await this.requireThread(threadId);
    if (await this.deps.runs.hasInFlight(threadId)) throw new ConflictError(`Thread ${threadId} has a run in flight; wait for it or cancel it first`);
    const values = { ...(update.values ?? {}) };
    const unknown = Object.keys(values).filter((k) => !(THREAD_STATE_FIELDS as readonly string[]).includes(k));
    if (unknown.length) throw new ValidationError(`Unknown thread-state field(s): ${unknown.join(", ")}`);
    refuseServerOwnedState(values, ["body", "values"]);
    if (Array.isArray(values.messages)) values.messages = toMessages(values.messages as Record<string, unknown>[], "values.messages");
    const { checkpointer } = this.deps.persistence;
    const checkpointId = update.checkpoint_id ?? update.checkpoint?.checkpoint_id;
    const configurable: Record<string, unknown> = { thread_id: threadId, checkpoint_ns: "" };
    if (checkpointId) {
      if (!(await checkpointer.getTuple({ configurable: { ...configurable, checkpoint_id: checkpointId } }))) throw new NotFoundError(`Checkpoint ${checkpointId} not found`);
      configurable.checkpoint_id = checkpointId;
    }
    const appConfig = this.deps.getAppConfig();
    const agent = await this.deps.agentFactory({ configurable: { thread_id: threadId }, context: buildRunContext({ threadId, userId: thread.owner_id, appConfig, sandboxProvider: this.deps.sandboxProvider }) });
    agent.checkpointer = checkpointer;
    const graph = ((agent as { graph?: UpdatableGraph }).graph ?? agent) as UpdatableGraph;
    const asNode = update.as_node && graph.nodes && update.as_node in graph.nodes ? update.as_node : undefined;
    try {
      await graph.updateState({ configurable }, values, asNode);
    } catch (err) {
      if (DeerflowError.isInstance(err)) throw err;
      // A value the channel's schema or reducer refuses (a number for `title`, a second sandbox id, ...).
      throw new ValidationError(`Invalid state values: ${String((err as Error).message).split("\n")[0]}`);
    }
    return readThreadState(checkpointer, threadId);
  }

  /**
   * The thread's checkpoints, newest first, each in ThreadState shape; `before` (a checkpoint id or config)
   * pages backwards, `metadata` filters by checkpoint metadata. An unknown thread has no history (`[]`).
   */
  async history(threadId: string, options: { limit: number; before?: unknown; metadata?: Record<string, unknown> }): Promise<ThreadStateResponse[]> {
    const { checkpointer } = this.deps.persistence;
    const beforeId =
      typeof options.before === "string"
        ? options.before
        : ((options.before as { configurable?: { checkpoint_id?: string } } | undefined)?.configurable?.checkpoint_id ?? undefined);
    const out: ThreadStateResponse[] = [];
    const iterator = (checkpointer as BaseCheckpointSaver).list(
      { configurable: { thread_id: threadId, checkpoint_ns: "" } },
      { limit: options.limit, ...(beforeId ? { before: { configurable: { checkpoint_id: beforeId } } } : {}), ...(options.metadata ? { filter: options.metadata } : {}) },
    );
    for await (const tuple of iterator) out.push(checkpointToState(threadId, tuple));
    return out;
  }

  /**
   * Deletes a thread and everything it owns: checkpoints, run records, its sandbox (provider state and
   * `user-data` files), its directories under the runtime home.
   * @throws NotFoundError for an unknown thread; ConflictError while a run is in flight (the thread survives).
   */
  async delete(threadId: string): Promise<void> {
    const thread = await this.requireThread(threadId);
    if (await this.deps.runs.hasInFlight(threadId)) throw new ConflictError(`Thread ${threadId} has work in flight; cancel its runs before deleting it`);
    await this.deps.persistence.checkpointer.deleteThread(threadId);
    await this.deps.runs.forgetThread(threadId);
    await this.deps.persistence.threads.delete(threadId);
    this.deps.sandboxProvider?.removeThread(threadId, thread.owner_id);
    rmSync(threadDir(this.deps.home, thread.owner_id, threadId), { recursive: true, force: true });
  }
}
