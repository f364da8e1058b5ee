// Streams a compiled LangGraph graph through its internal chunk generator (`Pregel._streamIterator`), skipping the
// two web streams `Pregel.stream()` wraps it in. Not a monkey patch, but a call into a LangGraph internal: it is
// fenced like one (src/perf/patches.ts decides whether it is on; `streamAgent` uses `graph.stream()` otherwise).
import { ensureConfig, type RunnableConfig } from "@langchain/core/runnables";
import { AsyncGeneratorWithSetup } from "@langchain/core/utils/stream";
import { getConfig } from "@langchain/langgraph";
import { Pregel } from "@langchain/langgraph/pregel";

/**
 * Whether LangGraph's `Pregel` still has the internal this file calls: `_streamIterator` as an async generator
 * function on the prototype, and `stream` (what it stands in for). The shape guard of the `pregel-stream` patch.
 */
export function pregelStreamShapeOk(): boolean {
  const proto = Pregel.prototype as unknown as Record<string, unknown>;
  const iterator = proto._streamIterator;
  return typeof proto.stream === "function" && typeof iterator === "function" && iterator.constructor?.name === "AsyncGeneratorFunction";
}

/** The part of a compiled graph (`Pregel`) that {@link streamPregel} uses (`_streamIterator` is LangGraph-internal). */
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
export async function streamPregel(graph: GraphChunks, input: unknown, options: Record<string, unknown>): Promise<AsyncIterableIterator<unknown>> {
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
