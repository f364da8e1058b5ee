// The one way a built agent is run: the gateway worker and the `task` subagent runtime both call streamAgent(), so
// the context, metadata, tracing callbacks, recursion limit and abort signal reach LangGraph the same way.
import type { Callbacks } from "@langchain/core/callbacks/manager";
import { Pregel } from "@langchain/langgraph/pregel";
import { perfPatchOn } from "../perf/state.js";
import { streamPregel } from "../perf/pregel-stream.js";
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
  // The server streams a compiled graph through LangGraph's internal chunk generator (src/perf/pregel-stream.ts, a
  // fenced speed patch); anyone else, or with the patch off, gets the graph's public stream().
  return target instanceof Pregel && perfPatchOn("pregel-stream") ? streamPregel(target as never, input, config) : target.stream(input, config);
}

function isStreamable(value: unknown): value is StreamableAgent {
  return typeof value === "object" && value !== null && typeof (value as { stream?: unknown }).stream === "function";
}
