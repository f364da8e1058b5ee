// The one way a built agent is run: the gateway worker and the `task` subagent runtime both call streamAgent(), so
// the context, metadata, tracing callbacks, recursion limit and abort signal reach LangGraph the same way.
import type { Callbacks } from "@langchain/core/callbacks/manager";
import { ensureConfig, type RunnableConfig } from "@langchain/core/runnables";
import { AsyncGeneratorWithSetup } from "@langchain/core/utils/stream";
import { getConfig } from "@langchain/langgraph";
import { Pregel } from "@langchain/langgraph/pregel";
import type { RunContext } from "./run-context.js";

/** A graph that can be streamed (a `createAgent` result, or any LangGraph compiled graph). */
export interface StreamableAgent {
  stream(input: unknown, options: Record<string, unknown>): Promise<AsyncIterable<unknown>>;
}

/** What one run passes to LangGraph. */
export interface StreamAgentOptions {
  /** The run's context ({@link buildRunContext}). */
  context: RunContext | Record<string, unknown>;
  configurable?: Record<string, unknown>;
  metadata?: Record<string, unknown>;
  /** Tracing handlers attached once at the graph root. */
  callbacks?: Callbacks;
  /** Supersteps before GraphRecursionError (LangGraph's default is 25; runs set it explicitly). */
  recursionLimit: number;
  tags?: string[];
  runName?: string;
  /** LangGraph stream modes (`values`, `messages`, `updates`, `custom`, ...). */
  streamMode: string | string[];
  subgraphs?: boolean;
  signal?: AbortSignal;
  interruptBefore?: "*" | string[];
  interruptAfter?: "*" | string[];
}

/**
 * Starts streaming `agent` on `input`. Options left undefined are not passed (LangGraph treats a present
 * `undefined` differently from an absent key for some options).
 * @returns the graph's chunk iterator. @throws what `agent.stream` throws synchronously (e.g. a bad input).
 */
export function streamAgent(agent: StreamableAgent, input: unknown, options: StreamAgentOptions): Promise<AsyncIterable<unknown>> {
  const config: Record<string, unknown> = {
    context: options.context,
    configurable: options.configurable ?? {},
    metadata: options.metadata ?? {},
    recursionLimit: options.recursionLimit,
    streamMode: options.streamMode,
  };
  for (const key of ["callbacks", "tags", "runName", "subgraphs", "signal", "interruptBefore", "interruptAfter"] as const) {
    if (options[key] !== undefined && options[key] !== null) config[key] = options[key];
  }
  // A `createAgent` result streams through its compiled graph, as the LangGraph API server runs it: the agent's own
  // `stream` first reads the thread's whole state (`getState`, a checkpoint load and parse) to merge it into the
  // input for middleware state defaults, which none of the DeerFlow middlewares has (their input schemas are
  // optional). That read grew with the thread, and re-wrote every channel's current value through its reducer.
  // The compiled graph carries the agent's static config (`withConfig`), so nothing else changes.
  const graph = (agent as { graph?: unknown }).graph;
  const target = isStreamable(graph) ? graph : agent;
  return target instanceof Pregel ? streamPregel(target as unknown as GraphChunks, input, config) : target.stream(input, config);
}

/** The part of a compiled graph (`Pregel`) that {@link streamPregel} uses. */
interface GraphChunks {
  config?: { recursionLimit?: number };
  _streamIterator(input: unknown, options: unknown): AsyncGenerator<unknown>;
}

/**
 * What `Pregel.stream()` returns, without its two web streams. LangGraph 1.7's `stream()` wraps the graph's chunk
 * generator (`_streamIterator`) in `Runnable.stream`'s `IterableReadableStream` and then in an
 * `IterableReadableStreamWithAbortSignal` that pumps the first into itself: every chunk crossed three web streams
 * (the loop's own, then these two), each a chain of promises, and building the two streams per run cost Node 20's
 * transferable set-up. Iterating the generator directly, with everything else `stream()` does kept, cut the
 * lead agent's CPU per run by 8-10% (in process, 64 runs in flight, paired batches in one process).
 *
 * Kept, in `Pregel.stream()`'s order: the configurable of an enclosing graph run when called from inside one (a
 * subagent in a tool call); the graph's own recursion limit as default; a run-local abort controller joined to
 * `options.signal`, aborted when the consumer stops early so the loop does not run on unread; `ensureConfig`; and
 * `AsyncGeneratorWithSetup`, which runs the graph to its first chunk before returning (a failure before it rejects
 * here, as `stream()` does) and every step inside the run's async-local config; and, when the consumer stops early,
 * the graph's own error handling, which reports the aborted root run to the callbacks (`stream()`'s web stream always
 * had a read in flight, so its generator met the abort). One difference: the listener joining `options.signal` is
 * removed when the run ends, where `stream()` left it on the caller's signal.
 */
async function streamPregel(graph: GraphChunks, input: unknown, options: Record<string, unknown>): Promise<AsyncIterableIterator<unknown>> {
  let config = options as RunnableConfig & { signal?: AbortSignal };
  // A call from inside a running graph (its task config carries `__pregel_read`) joins that run's configurable.
  const ambient = getConfig()?.configurable;
  if (ambient?.__pregel_read !== undefined && config.configurable?.__pregel_read === undefined) {
    config = { ...config, configurable: { ...ambient, ...config.configurable } };
  }
  const abort = new AbortController();
  const caller = config.signal;
  const onCallerAbort = () => abort.abort(caller?.reason);
  if (caller?.aborted) abort.abort(caller.reason);
  else caller?.addEventListener("abort", onCallerAbort, { once: true });
  const release = () => caller?.removeEventListener("abort", onCallerAbort);
  const runConfig = ensureConfig({ recursionLimit: graph.config?.recursionLimit, ...config, signal: abort.signal });
  const generator = graph._streamIterator(input, runConfig);
  const chunks = new AsyncGeneratorWithSetup<unknown, unknown>({ generator, config: runConfig });
  // Stopping early (the consumer's break, an abort between two reads, an error downstream) must still run the
  // generator's own `catch` and `finally`: they report the root run's error to the callbacks (tracers close it)
  // and wait for the loop. `return()` would skip the `catch`, and an abort makes `chunks.next()` throw without
  // resuming the generator. So the loop is aborted and the generator read to its end, its chunks dropped.
  let finishing: Promise<void> | undefined;
  const finish = (): Promise<void> =>
    (finishing ??= (async () => {
      abort.abort();
      release();
      try {
        while (!(await generator.next()).done);
      } catch {
        // The abort (or the failure already thrown to the consumer), now reported to the callbacks.
      }
    })());
  try {
    await chunks.setup;
  } catch (err) {
    release();
    throw err;
  }
  const iterator: AsyncIterableIterator<unknown> = {
    next: () =>
      chunks.next().then(
        (result) => {
          if (result.done) release();
          return result;
        },
        async (err: unknown) => {
          await finish();
          throw err;
        },
      ),
    return: async (value?: unknown) => {
      await finish();
      return { done: true, value };
    },
    throw: async (err?: unknown) => {
      await finish();
      throw err;
    },
    [Symbol.asyncIterator]: () => iterator,
  };
  return iterator;
}

function isStreamable(value: unknown): value is StreamableAgent {
  return typeof value === "object" && value !== null && typeof (value as { stream?: unknown }).stream === "function";
}
