// The one run-creation path shared by every run route, and the worker that executes a run in the background
// (DeerFlow gateway services.start_run + runtime/runs/worker.run_agent).
import { randomUUID } from "node:crypto";
import { coerceMessageLikeToMessage, isBaseMessage, type BaseMessage } from "@langchain/core/messages";
import { Command, type CheckpointTuple } from "@langchain/langgraph";
import type { Logger } from "pino";
import type { AppConfig } from "../config/schema.js";
import type { MemoryUpdateQueue } from "../agents/memory/memory-queue.js";
import { buildRunContext, DEFAULT_USER_ID, type RunSandboxProvider } from "../agents/run-context.js";
import { BadRequestError, NotFoundError, ValidationError } from "../errors.js";
import type { AgentFactory } from "./agent-factory.js";
import type { Persistence } from "./persistence.js";
import { buildRunConfig, type RunConfig } from "./run-config.js";
import type { ActiveRun, RunManager, RunRecord, RunStatus } from "./run-manager.js";
import { latestCheckpoint, rollbackThread } from "./rollback.js";
import { readThreadState } from "./thread-state-reader.js";
import type { ThreadStatus } from "./thread-store.js";
import { parseRunRequest, type RunRequest, type StreamModeName } from "./run-request.js";
import { serializeMessage, serializeValues, toWire } from "./serialization.js";
import type { StreamBridge } from "./stream-bridge.js";

/** Resolves on the next turn of the event loop (after pending I/O callbacks). */
const yieldToEventLoop = () => new Promise<void>((resolve) => setImmediate(resolve));

/** DeerFlow's thread-id rule (gateway.md 3.1). */
export const THREAD_ID_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;
/** `additional_kwargs` keys only the server may set on incoming messages. */
const SERVER_OWNED_MESSAGE_KWARGS = ["original_user_content", "dynamic_context_reminder", "view_image_marker", "run_id", "timestamp"];

/** What {@link RunService} needs. */
export interface RunServiceDeps {
  bridge: StreamBridge;
  runs: RunManager;
  persistence: Persistence;
  agentFactory: AgentFactory;
  getAppConfig: () => AppConfig;
  logger: Logger;
  /** How long a finished run's events stay replayable, in ms (default 60000). */
  cleanupDelayMs?: number;
  /** The process's memory update queue, handed to every run through its context (`memory_queue`). */
  memoryQueue?: MemoryUpdateQueue;
  /** The process's sandbox provider, handed to every run through its context (`sandbox_provider`) for the sandbox tools. */
  sandboxProvider?: RunSandboxProvider;
}

/** A started run and the request it came from. */
export interface StartedRun {
  run: ActiveRun;
  request: RunRequest;
}

/**
 * Validates a thread id.
 * @throws ValidationError "Invalid thread_id ..." unless it matches `^[A-Za-z0-9_-]{1,64}$`.
 */
export function assertThreadId(threadId: unknown): asserts threadId is string {
  if (typeof threadId !== "string" || !THREAD_ID_PATTERN.test(threadId)) {
    throw new ValidationError(`Invalid thread_id ${JSON.stringify(threadId)}: must match ${THREAD_ID_PATTERN.source}`);
  }
}

/** Why `content` is not a message content (a string, or a list of strings / `{type, ...}` blocks), or null. */
function contentProblem(content: unknown): string | null {
  if (typeof content === "string") return null;
  if (content === undefined) return "content is required";
  if (!Array.isArray(content)) return `content must be a string or a list of content blocks, got ${content === null ? "null" : typeof content}`;
  const bad = content.findIndex((b) => typeof b !== "string" && !(b && typeof b === "object" && !Array.isArray(b) && typeof (b as { type?: unknown }).type === "string"));
  return bad === -1 ? null : `content[${bad}] must be a string or an object with a string "type"`;
}

/**
 * Converts wire messages (`{type|role, content, ...}`) to LangChain messages; a message without an id gets a UUID
 * and server-owned `additional_kwargs` keys are removed.
 * @param where Path used in errors, e.g. `input.messages`.
 * @throws BadRequestError "Invalid message at <where>[i]: ..." for an entry that is not a message.
 */
export function toMessages(messages: Record<string, unknown>[], where = "input.messages"): BaseMessage[] {
  return messages.map((raw, i) => {
    const entry = { ...raw };
    if (entry.additional_kwargs && typeof entry.additional_kwargs === "object") {
      const kwargs = { ...(entry.additional_kwargs as Record<string, unknown>) };
      for (const k of SERVER_OWNED_MESSAGE_KWARGS) delete kwargs[k];
      entry.additional_kwargs = kwargs;
    }
    if (typeof entry.id !== "string" || !entry.id) entry.id = randomUUID();
    let message: BaseMessage;
    try {
      // Checked here: a bad content shape would be checkpointed and then break every later run of the thread.
      const problem = contentProblem(entry.content);
      if (problem) throw new Error(problem);
      message = coerceMessageLikeToMessage(entry as never);
      if (!isBaseMessage(message)) throw new Error("not a message");
    } catch (err) {
      throw new BadRequestError(`Invalid message at ${where}[${i}]: ${(err as Error).message.split("\n")[0]}`);
    }
    return message;
  });
}

/** The graph input of a run: a resume `Command`, or `input` with its messages converted (see {@link toMessages}). */
export function toGraphInput(request: RunRequest): unknown {
  if (request.command && "resume" in request.command) return new Command({ resume: request.command.resume });
  if (!request.input) return null;
  const { messages, ...rest } = request.input;
  if (!messages) return rest;
  return { ...rest, messages: toMessages(messages) };
}

/** The SSE event name of a graph chunk: `messages` for the tuple mode; subgraph frames get `|ns1|ns2`. */
export function eventName(mode: string, namespace: string[]): string {
  return namespace.length ? `${mode}|${namespace.join("|")}` : mode;
}

/** Serializes one chunk's payload for its mode. */
function serializeChunk(mode: string, payload: unknown): unknown {
  if (mode === "values") return serializeValues(payload);
  if (mode === "messages" && Array.isArray(payload)) {
    const [chunk, meta] = payload;
    return [isBaseMessage(chunk) ? serializeMessage(chunk) : toWire(chunk), meta && typeof meta === "object" ? toWire(meta) : {}];
  }
  return toWire(payload) ?? null;
}

/**
 * The error to report for a failed run: langchain wraps errors raised under a middleware in `MiddlewareError`
 * (same message, original as `cause`); the client should see the original class name.
 */
export function rootError(err: unknown): Error {
  let e = err instanceof Error ? err : new Error(String(err));
  while (e.constructor?.name === "MiddlewareError" && e.cause instanceof Error) e = e.cause;
  return e;
}

/** Graph stream modes for the public ones (`messages-tuple` -> `messages`), de-duplicated. */
export function graphStreamModes(modes: StreamModeName[]): string[] {
  return [...new Set(modes.map((m) => (m === "messages-tuple" ? "messages" : m)))];
}

/** Creates runs (validation, thread checks, admission) and executes them in the background. */
export class RunService {
  constructor(private readonly deps: RunServiceDeps) {}

  /**
   * Starts a run. `threadId` null means stateless: the thread comes from `config.configurable.thread_id` or is a
   * new UUID, and is created when missing. Everything that can fail is checked before the run is admitted.
   * @throws ValidationError (422) for a bad body, thread id or agent name. @throws NotFoundError (404) for an
   *   unknown thread or checkpoint. @throws BadRequestError (400) for a malformed message.
   *   @throws ConflictError (409) when the thread already has an active run.
   */
  async start(threadId: string | null, body: unknown, userId: string = DEFAULT_USER_ID): Promise<StartedRun> {
    const request = parseRunRequest(body);
    const { threads, checkpointer } = this.deps.persistence;
    let tid: string;
    if (threadId === null) {
      const fromConfig = request.config?.configurable?.thread_id;
      tid = fromConfig === undefined || fromConfig === null ? randomUUID() : (fromConfig as string);
      assertThreadId(tid);
      // A stateless run may name an existing thread only if the caller owns it; another user's reads as missing.
      const existing = threads.get(tid);
      if (existing && existing.owner_id !== userId) throw new NotFoundError(`Thread ${tid} not found`);
    } else {
      assertThreadId(threadId);
      tid = threadId;
      if (!threads.getOwned(tid, userId)) throw new NotFoundError(`Thread ${tid} not found`);
    }
    const appConfig = this.deps.getAppConfig();
    const runConfig = buildRunConfig(request, tid, { maxRecursionLimit: appConfig.max_recursion_limit, userId });
    const input = toGraphInput(request);
    const checkpointId = request.checkpoint_id ?? (request.checkpoint?.checkpoint_id as string | undefined);
    if (request.checkpoint?.thread_id !== undefined && request.checkpoint.thread_id !== tid) {
      throw new BadRequestError("checkpoint thread_id does not match request thread_id");
    }
    if (checkpointId) {
      const found = await checkpointer.getTuple({ configurable: { thread_id: tid, checkpoint_ns: "", checkpoint_id: checkpointId } });
      if (!found) throw new NotFoundError(`Checkpoint ${checkpointId} not found`);
      runConfig.configurable.checkpoint_id = checkpointId;
    }
    if (threadId === null) threads.create(tid, {}, userId);
    const run = this.deps.runs.admit({
      threadId: tid,
      assistantId: request.assistant_id ?? "lead_agent",
      metadata: runConfig.metadata,
      kwargs: { input: request.input ?? null, config: { configurable: runConfig.configurable, recursion_limit: runConfig.recursion_limit } },
      onDisconnect: request.on_disconnect ?? "cancel",
      strategy: request.multitask_strategy ?? "reject",
    });
    this.deps.bridge.open(run.record.run_id);
    void this.execute(run, input, runConfig, request);
    return { run, request };
  }

  /** The worker: waits for its predecessors, builds the agent for this run and publishes its stream. Never throws. */
  private async execute(run: ActiveRun, input: unknown, runConfig: RunConfig, request: RunRequest): Promise<void> {
    const { bridge, runs, persistence, logger } = this.deps;
    const { run_id: runId, thread_id: threadId } = run.record;
    const signal = run.controller.signal;
    const log = logger.child({ run_id: runId, thread_id: threadId });
    let status: RunStatus = "success";
    let error: string | undefined;
    let before: CheckpointTuple | undefined;
    let started = false;
    try {
      await Promise.race([run.predecessors, new Promise((resolve) => signal.addEventListener("abort", resolve, { once: true }))]);
      if (signal.aborted) {
        // Cancelled while pending: no agent is built (DeerFlow `test_pending_cancel_stops_waiting_for_prior_finalization`).
        status = "interrupted";
        return;
      }
      started = true;
      runs.setStatus(runId, "running");
      persistence.threads.setStatus(threadId, "busy");
      bridge.publish(runId, "metadata", { run_id: runId, thread_id: threadId, attempt: 1 });
      before = await latestCheckpoint(persistence.checkpointer, threadId);
      const appConfig = this.deps.getAppConfig();
      const context = buildRunContext({
        threadId,
        runId,
        userId: String(runConfig.context.user_id),
        options: runConfig.context,
        appConfig,
        memoryQueue: this.deps.memoryQueue,
        sandboxProvider: this.deps.sandboxProvider,
      });
      const metadata = { ...runConfig.metadata, run_id: runId, thread_id: threadId, assistant_id: run.record.assistant_id };
      const config = { configurable: runConfig.configurable, context, metadata, recursionLimit: runConfig.recursion_limit, tags: runConfig.tags, runName: runConfig.run_name };
      const agent = await this.deps.agentFactory(config);
      agent.checkpointer = persistence.checkpointer;
      run.record.metadata = { ...run.record.metadata, ...config.metadata };
      runs.touch(runId);
      const subgraphs = Boolean(request.stream_subgraphs);
      if (signal.aborted) throw signal.reason;
      const stream = await agent.stream(input, {
        configurable: config.configurable,
        context,
        metadata: config.metadata,
        // Tracing handlers the factory attached at the graph root (DeerFlow appends them to config["callbacks"]).
        callbacks: (config as { callbacks?: unknown }).callbacks,
        recursionLimit: config.recursionLimit,
        tags: config.tags,
        runName: config.runName,
        streamMode: graphStreamModes(request.streamModes),
        subgraphs,
        signal,
        ...(request.interrupt_before ? { interruptBefore: request.interrupt_before } : {}),
        ...(request.interrupt_after ? { interruptAfter: request.interrupt_after } : {}),
      });
      for await (const chunk of stream) {
        if (signal.aborted) break;
        const parts = chunk as unknown[];
        const [namespace, mode, payload] = subgraphs ? (parts as [string[], string, unknown]) : ([[], ...parts] as unknown as [string[], string, unknown]);
        bridge.publish(runId, eventName(mode, namespace), serializeChunk(mode, payload));
        // A run whose model answers without I/O (cached, local, scripted) would otherwise advance in one unbroken
        // microtask chain: yield so sockets (new requests, SSE writes) are served between chunks.
        await yieldToEventLoop();
      }
      if (signal.aborted) status = "interrupted";
    } catch (err) {
      if (signal.aborted) {
        status = "interrupted";
      } else {
        status = "error";
        const e = rootError(err);
        const name = e.constructor?.name && e.constructor.name !== "Error" ? e.constructor.name : e.name;
        error = e.message;
        run.errorName = name;
        log.warn({ err: e.message, name }, "run failed");
        bridge.publish(runId, "error", { message: e.message, name, error: name });
      }
    } finally {
      if (status === "interrupted" && run.cancelAction === "rollback") {
        if (started) {
          try {
            await rollbackThread(persistence.checkpointer, threadId, before);
          } catch (err) {
            log.error({ err: (err as Error).message }, "rollback failed");
          }
        }
        status = "error";
        error = "Rolled back by user";
      }
      runs.setStatus(runId, status, error);
      if (started || status === "interrupted") {
        let threadStatus: ThreadStatus = status === "error" && !run.cancelAction ? "error" : "idle";
        // A run that stopped at interrupt_before/after (or a graph interrupt) leaves nodes pending: the thread waits.
        if (status === "success" && (await readThreadState(persistence.checkpointer, threadId).catch(() => null))?.next.length) threadStatus = "interrupted";
        persistence.threads.setStatus(threadId, threadStatus);
      }
      bridge.publishEnd(runId);
      bridge.cleanup(runId, this.deps.cleanupDelayMs ?? 60_000);
      runs.finish(runId);
      log.info({ status }, "run finished");
    }
  }

  /**
   * Waits until the run has finished and returns what `/wait` and `/join` answer: the thread's final state
   * values, or `{__error__: {error, message}}` when the run failed (LangGraph API contract).
   */
  async result(run: ActiveRun): Promise<Record<string, unknown>> {
    await run.done;
    return this.resultOf(run.record, run.errorName);
  }

  /** The `/wait` answer for a finished run record (state values, or `__error__`). */
  async resultOf(record: RunRecord, errorName?: string): Promise<Record<string, unknown>> {
    if (record.status === "error") return { __error__: { error: errorName ?? "RunError", message: record.error ?? "run failed" } };
    return (await readThreadState(this.deps.persistence.checkpointer, record.thread_id)).values;
  }
}
