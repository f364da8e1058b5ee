// The LangGraph API's enumerations, defined once: the TypeScript types and the zod schemas of the routes both
// derive from these lists, so a value cannot be accepted by one and unknown to the other.
import { z } from "zod";

/** Run statuses (LangGraph API `RunStatus`). */
export const RUN_STATUSES = ["pending", "running", "success", "error", "timeout", "interrupted"] as const;
/** A run status. */
export type RunStatus = (typeof RUN_STATUSES)[number];
/** Schema of a run status. */
export const RunStatusSchema = z.enum(RUN_STATUSES);

/** Thread statuses (LangGraph API `ThreadStatus`). */
export const THREAD_STATUSES = ["idle", "busy", "interrupted", "error"] as const;
/** A thread status. */
export type ThreadStatus = (typeof THREAD_STATUSES)[number];
/** Schema of a thread status. */
export const ThreadStatusSchema = z.enum(THREAD_STATUSES);

/** What to do with a new run on a thread that already has one in flight (LangGraph `multitask_strategy`). */
export const MULTITASK_STRATEGIES = ["reject", "interrupt", "rollback", "enqueue"] as const;
/** A multitask strategy. */
export type MultitaskStrategy = (typeof MULTITASK_STRATEGIES)[number];
/** Schema of a multitask strategy. */
export const MultitaskStrategySchema = z.enum(MULTITASK_STRATEGIES);

/** How a cancel stops a run: keep its checkpoints (`interrupt`) or restore the pre-run state (`rollback`). */
export const CANCEL_ACTIONS = ["interrupt", "rollback"] as const;
/** A cancel action. */
export type CancelAction = (typeof CANCEL_ACTIONS)[number];
/** Schema of a cancel action. */
export const CancelActionSchema = z.enum(CANCEL_ACTIONS);

/** What a client disconnect does to its run (LangGraph `on_disconnect`). */
export const ON_DISCONNECT_ACTIONS = ["cancel", "continue"] as const;
/** Schema of an `on_disconnect` value. */
export const OnDisconnectSchema = z.enum(ON_DISCONNECT_ACTIONS);

/** Stream modes a client may request; `messages-tuple` is streamed as the graph's `messages` mode. */
export const STREAM_MODES = ["values", "messages-tuple", "updates", "debug", "tasks", "checkpoints", "custom"] as const;
/** A public stream mode. */
export type StreamModeName = (typeof STREAM_MODES)[number];
