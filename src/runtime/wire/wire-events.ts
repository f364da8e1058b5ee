// LangGraph stream chunks -> LangGraph API wire events (SSE frames as `@langchain/langgraph-api` sends them): a pure async generator, so the
// worker, tests and any other consumer share one conversion.
import { isBaseMessage } from "@langchain/core/messages";
import type { StreamModeName } from "../runs/run-request.js";
import { serializeMessage, serializeValues, toWire } from "./serialization.js";
import { UpdatesFrameWriter } from "./updates-frames.js";

/** One SSE event before framing: `event` is the SSE event name, `data` its JSON payload. */
export interface WireEvent {
  event: string;
  data: unknown;
  /** `JSON.stringify(data)`, when the conversion made it anyway (token frames: see {@link serializeChunk}). */
  json?: string;
}

/**
 * A token frame's metadata converted and serialized once per model call: LangGraph hands every token of one call
 * the same metadata object (run ids, the run's metadata, `langgraph_*` keys: about 1 KB of JSON), so converting it
 * per token was most of a token frame's cost. Treated as immutable, as LangGraph does.
 */
const tokenMetadata = new WeakMap<object, { wire: unknown; json: string }>();

function wireMetadata(meta: unknown): { wire: unknown; json: string } {
  if (!meta || typeof meta !== "object") return { wire: {}, json: "{}" };
  let cached = tokenMetadata.get(meta);
  if (!cached) {
    const wire = toWire(meta) ?? {};
    cached = { wire, json: JSON.stringify(wire) };
    tokenMetadata.set(meta, cached);
  }
  return cached;
}

/** A `messages` chunk `[message, metadata]` as wire data and its JSON (the metadata part converted once per call). */
function messagesFrame(payload: unknown[]): { data: unknown; json: string } {
  const [chunk, meta] = payload;
  const message = isBaseMessage(chunk) ? serializeMessage(chunk) : toWire(chunk);
  const m = wireMetadata(meta);
  return { data: [message, m.wire], json: `[${JSON.stringify(message ?? null)},${m.json}]` };
}

/** Graph stream modes for the public ones (`messages-tuple` -> `messages`), de-duplicated. */
export function graphStreamModes(modes: readonly StreamModeName[]): string[] {
  return [...new Set(modes.map((m) => (m === "messages-tuple" ? "messages" : m)))];
}

/** The SSE event name of a graph chunk: the mode; subgraph frames get `|ns1|ns2`. */
export function eventName(mode: string, namespace: readonly string[]): string {
  return namespace.length ? `${mode}|${namespace.join("|")}` : mode;
}

/** Serializes one chunk's payload for its mode (messages flattened, values as whole-state snapshots). */
export function serializeChunk(mode: string, payload: unknown): unknown {
  if (mode === "values") return serializeValues(payload);
  if (mode === "messages" && Array.isArray(payload)) return messagesFrame(payload).data;
  return toWire(payload) ?? null;
}

/**
 * Converts a graph stream (`agent.stream(..., {streamMode: [...]})`, chunks `[mode, payload]`, or
 * `[namespace, mode, payload]` with `subgraphs`) to wire events. Stops when the source ends; never buffers. An
 * `updates` chunk with nothing new (only messages sent before) yields no event.
 * @param options.subgraphs Whether the source was started with `subgraphs: true` (chunks carry a namespace).
 */
export async function* toWireEvents(chunks: AsyncIterable<unknown>, options: { subgraphs?: boolean } = {}): AsyncGenerator<WireEvent> {
  // `updates` frames: one object per node, each message once per stream (per namespace), see UpdatesFrameWriter.
  const updates = new Map<string, UpdatesFrameWriter>();
  for await (const chunk of chunks) {
    const parts = chunk as unknown[];
    const [namespace, mode, payload] = options.subgraphs ? (parts as [string[], string, unknown]) : ([[], ...parts] as unknown as [string[], string, unknown]);
    const event = eventName(mode, namespace);
    if (mode === "updates") {
      let writer = updates.get(event);
      if (!writer) updates.set(event, (writer = new UpdatesFrameWriter()));
      const data = writer.frame(payload);
      if (data !== null) yield { event, data };
      continue;
    }
    if (mode === "messages" && Array.isArray(payload)) {
      yield { event, ...messagesFrame(payload) };
      continue;
    }
    yield { event, data: serializeChunk(mode, payload) };
  }
}
