// The one SSE writer: streams a run's bridge events in the LangGraph wire format.
import type { FastifyReply } from "fastify";
import type { ActiveRun } from "../src/runtime/runs/run-manager.js";
import type { StreamBridge } from "../src/runtime/stream/stream-bridge.js";

/** A payload already serialized to JSON (a bridge event's `json`): {@link sseSerializer} writes it as it is. */
export class SerializedJson {
  constructor(readonly json: string) {}
}

/** The SSE `data:` serializer (registered with @fastify/sse): JSON, except {@link SerializedJson} passes through. */
export function sseSerializer(data: unknown): string {
  return data instanceof SerializedJson ? data.json : JSON.stringify(data);
}

/** Options of {@link streamRunEvents}. */
export interface StreamRunOptions {
  /** Resume after this event id (`Last-Event-ID`). */
  lastEventId?: string | null;
  /** Cancel the run (interrupt) when the client goes away before its end. */
  cancelOnDisconnect: boolean;
}

/** The part of a run the SSE writer needs: its id, and its control object while it is in flight. */
export type StreamableRun = Pick<ActiveRun, "record"> & Partial<Pick<ActiveRun, "controller" | "finished" | "cancelAction">>;

/**
 * Writes a run's events to an SSE reply: `id:` / `event:` / `data:` frames (string ids, JSON data), then `end`
 * (`data: null`, no id) or `gap`. The headers (with `Content-Location`) are flushed at once, before the run has an
 * event. Heartbeat comments come from @fastify/sse once the headers are sent. Each send ends when the frame is
 * written or the connection closes, whichever comes first, so a client that stops reading and disconnects never leaves the handler stuck (@fastify/sse
 * 0.6 does not end a send when the socket closes).
 */
export async function streamRunEvents(reply: FastifyReply, bridge: StreamBridge, run: StreamableRun, options: StreamRunOptions): Promise<void> {
  const sse = reply.sse;
  const stop = new AbortController();
  const connection: Connection = { closed: false, pumping: true, onClose: null };
  sse.onClose(() => {
    connection.closed = true;
    connection.onClose?.();
    // A stream that ended normally closes too: aborting then would only build an AbortError nobody reads.
    if (connection.pumping) stop.abort();
  });
  sse.sendHeaders();
  // Node holds written headers until the first body byte: a pending or enqueued run would keep its client (and the
  // Content-Location naming the run) waiting for the first event or heartbeat. Send them now.
  reply.raw.flushHeaders();
  const openStreams = reply.server.metrics?.openStreams;
  openStreams?.inc();
  try {
    await pump(reply, bridge, run, options, stop, connection);
  } finally {
    connection.pumping = false;
    openStreams?.dec();
  }
}

/** The client connection as the pump sees it: closed yet, and the wake-up of the send in flight. */
interface Connection {
  closed: boolean;
  /** True until the pump returns. */
  pumping: boolean;
  /** Resolves the send in flight as `closed` when the connection closes. */
  onClose: (() => void) | null;
}

/**
 * Sends one frame; resolves `sent` once @fastify/sse has written it, or `closed` when the connection closes first
 * (or already has). One promise per frame: racing each send against a shared "closed" promise would leave a
 * reaction on that promise per frame until the stream ends.
 */
function sendFrame(sse: FastifyReply["sse"], message: Parameters<FastifyReply["sse"]["send"]>[0], connection: Connection): Promise<"sent" | "closed"> {
  if (connection.closed) return Promise.resolve("closed");
  return new Promise((resolve) => {
    connection.onClose = () => resolve("closed");
    sse.send(message).then(
      () => resolve("sent"),
      () => resolve("closed"),
    );
  });
}

/** Writes the bridge events until `end`, a gap or the client going away; cancels the run when the policy says so. */
async function pump(reply: FastifyReply, bridge: StreamBridge, run: StreamableRun, options: StreamRunOptions, stop: AbortController, connection: Connection): Promise<void> {
  const sse = reply.sse;
  // Shutdown of a process that shares its runs (Redis bridge): cut the stream without `end`, so the client
  // reconnects with Last-Event-ID to another process and follows the run there.
  const closing = reply.server.deerflow.distributed ? reply.server.deerflow.closing.signal : undefined;
  const cut = () => {
    stop.abort();
    reply.raw.destroy();
  };
  closing?.addEventListener("abort", cut, { once: true });
  if (closing?.aborted) cut();
  let clientGone = false;
  // Frames written in one event-loop turn leave in one socket write: the socket is corked at the first frame of a
  // turn and uncorked in the check phase. A run streams its tokens in bursts (the worker yields every 2 ms), and a
  // write per frame was one writev system call per token (6% of the CPU of a 300-token answer).
  const raw = reply.raw;
  let corked = false;
  const uncork = () => {
    corked = false;
    raw.uncork();
  };
  for await (const item of bridge.subscribe(run.record.run_id, { lastEventId: options.lastEventId, signal: stop.signal })) {
    if (!corked) {
      corked = true;
      raw.cork();
      setImmediate(uncork);
    }
    const message =
      item.kind === "event"
        ? { id: item.event.id, event: item.event.event, data: new SerializedJson(item.event.json) }
        : item.kind === "end"
          ? { event: "end", data: null }
          : { event: "gap", data: item.data };
    const outcome = await sendFrame(sse, message, connection);
    if (outcome === "closed") {
      clientGone = true;
      break;
    }
    if (item.kind !== "event") break;
  }
  closing?.removeEventListener("abort", cut);
  if (closing?.aborted) return;
  if ((clientGone || stop.signal.aborted) && options.cancelOnDisconnect && run.finished === false && !run.cancelAction) {
    await reply.server.deerflow.runs.cancel(run.record.thread_id, run.record.run_id).catch(() => undefined);
  }
}
