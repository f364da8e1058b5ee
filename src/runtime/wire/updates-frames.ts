// `updates` stream frames in the LangGraph wire shape: one object per node, and each message sent once per run.
import { toWire } from "./serialization.js";

/**
 * Builds a run's `updates` frames. A node whose step wrote more than once (a middleware's `wrapModelCall` returning
 * a Command next to the model's message) arrives from LangGraph as a list of updates: it is merged into one object
 * (`messages` concatenated, other keys last-wins). A message already sent in an earlier `updates` frame of the run
 * (same id, e.g. the dispatching AI message when TokenUsageMiddleware folds a subagent's usage into it) is not sent
 * again: the `values` frames carry the thread's whole state. One instance per run.
 */
export class UpdatesFrameWriter {
  private readonly sent = new Set<string>();

  /**
   * The wire payload of one `updates` chunk (`{node: update | update[]}`), or null when nothing new is left
   * (the frame is then not published).
   */
  frame(payload: unknown): Record<string, unknown> | null {
    if (!payload || typeof payload !== "object" || Array.isArray(payload)) return (toWire(payload) as Record<string, unknown>) ?? null;
    const out: Record<string, unknown> = {};
    for (const [node, raw] of Object.entries(payload as Record<string, unknown>)) {
      const parts = Array.isArray(raw) ? raw : [raw];
      if (!parts.every((p) => p === null || p === undefined || (typeof p === "object" && !Array.isArray(p)))) {
        out[node] = toWire(raw);
        continue;
      }
      const merged: Record<string, unknown> = {};
      let messages: unknown[] | null = null;
      for (const part of parts as (Record<string, unknown> | null | undefined)[]) {
        for (const [key, value] of Object.entries(part ?? {})) {
          if (key === "messages") messages = [...(messages ?? []), ...(Array.isArray(value) ? value : [value])];
          else merged[key] = value;
        }
      }
      const wire = toWire(merged) as Record<string, unknown>;
      if (messages) {
        const fresh = (toWire(messages) as Record<string, unknown>[]).filter((m) => {
          const id = m && typeof m === "object" ? m.id : undefined;
          if (typeof id !== "string") return true;
          if (this.sent.has(id)) return false;
          this.sent.add(id);
          return true;
        });
        if (fresh.length) wire.messages = fresh;
      }
      if (Object.keys(wire).length) out[node] = wire;
      // A node that wrote nothing keeps its empty update; one that only re-sent messages is left out.
      else if (messages === null) out[node] = parts.length === 1 ? (toWire(parts[0]) ?? null) : {};
    }
    return Object.keys(out).length ? out : null;
  }
}
