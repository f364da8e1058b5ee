// Port of DeerFlow agents/thread_state.py: the lead agent's state schema and its reducers.
import { MessagesValue, ReducedValue, StateSchema } from "@langchain/langgraph";
import { z } from "zod";
import {
  DelegationSchema, mergeDelegations, mergeGoal, mergePromoted, mergeSkillContext, PromotedSchema, SkillContextEntrySchema,
  type Delegation, type Goal, type Promoted, type SkillContextEntry,
} from "./thread-state-reducers.js";

export * from "./thread-state-reducers.js";

/** `{sandbox_id}` recorded when a sandbox is acquired for the thread. */
export const SandboxStateSchema = z.object({ sandbox_id: z.string() });
/** Sandbox state: `{sandbox_id}`. */
export type SandboxState = z.infer<typeof SandboxStateSchema>;

/** Per-thread directories recorded by ThreadDataMiddleware: the virtual `/mnt/user-data/...` paths. */
export const ThreadDataSchema = z.object({
  workspace_path: z.string(),
  uploads_path: z.string(),
  outputs_path: z.string(),
});
/** Thread data: `{workspace_path, uploads_path, outputs_path}` (virtual paths in state; host paths when recomputed). */
export type ThreadData = z.infer<typeof ThreadDataSchema>;

/** A file announced to the model by UploadsMiddleware. `size` is in bytes. */
export const UploadedFileSchema = z.looseObject({ filename: z.string(), size: z.number().optional(), path: z.string().optional() });
/** An uploaded file entry. */
export type UploadedFile = z.infer<typeof UploadedFileSchema>;

/**
 * An image loaded by `view_image`, keyed by its virtual path: metadata only, never base64 or a host path (an
 * `actual_path` from an older checkpoint is ignored: the file is always re-resolved in the thread's directories).
 * `size` is in bytes.
 */
export const ViewedImageSchema = z.looseObject({ mime_type: z.string(), size: z.number(), actual_path: z.string().optional() });
/** A viewed image entry. */
export type ViewedImage = z.infer<typeof ViewedImageSchema>;

/** A todo item of plan mode (`write_todos`). */
export const TodoSchema = z.looseObject({ content: z.string(), status: z.string() });
/** A todo entry. */
export type Todo = z.infer<typeof TodoSchema>;

/** A background task record (last write wins; DeerFlow's MCP task runtime fills it). */
export const BackgroundTaskSchema = z.looseObject({});

/**
 * Merges sandbox updates. Mirrors DeerFlow `merge_sandbox`: a null update keeps the current value, a first
 * value is taken, the same id is kept (idempotent concurrent lazy acquisition).
 * @throws Error "Conflicting sandbox state updates: 'a' != 'b'" when two different ids meet.
 */
export function mergeSandbox(current: SandboxState | null | undefined, next: SandboxState | null | undefined): SandboxState | null {
  if (next == null) return current ?? null;
  if (current == null) return next;
  if (current.sandbox_id === next.sandbox_id) return current;
  throw new Error(`Conflicting sandbox state updates: '${current.sandbox_id}' != '${next.sandbox_id}'`);
}

/**
 * Merges artifact path lists. Mirrors DeerFlow `merge_artifacts`: concatenation de-duplicated, first
 * occurrence order kept; a null update keeps the current list.
 */
export function mergeArtifacts(current: string[] | null | undefined, next: string[] | null | undefined): string[] {
  if (current == null) return next ? [...new Set(next)] : [];
  if (next == null) return current;
  return [...new Set([...current, ...next])];
}

/** Merges todo lists. Mirrors DeerFlow `merge_todos`: null keeps, any list (even `[]`) replaces. */
export function mergeTodos(current: Todo[] | null | undefined, next: Todo[] | null | undefined): Todo[] | null {
  return next == null ? (current ?? null) : next;
}

/**
 * Merges viewed images. Mirrors DeerFlow `merge_viewed_images`: null keeps, `{}` clears, otherwise a
 * shallow merge where the update wins per key.
 */
export function mergeViewedImages(
  current: Record<string, ViewedImage> | null | undefined,
  next: Record<string, ViewedImage> | null | undefined,
): Record<string, ViewedImage> {
  if (next == null) return current ?? {};
  if (Object.keys(next).length === 0) return {};
  return { ...(current ?? {}), ...next };
}

/** Last-write-wins channel for plain fields (`thread_data`, `title`, `uploaded_files`, ...); `undefined` keeps. */
function lastValue<T>(schema: z.ZodType<T>) {
  return new ReducedValue(schema.nullable().optional().default(null), {
    inputSchema: schema.nullable().optional(),
    reducer: (current: T | null | undefined, next: T | null | undefined) => (next === undefined ? (current ?? null) : next),
  });
}

/** A nullable channel merged by `merge` (updates may be null/undefined, meaning "keep"). */
function reduced<T>(schema: z.ZodType<T>, merge: (c: T | null | undefined, n: T | null | undefined) => T | null) {
  return new ReducedValue(schema.nullable().optional().default(null), { inputSchema: schema.nullable().optional(), reducer: merge });
}

/**
 * The channels of {@link ThreadState}, one definition each. Middlewares that read or write a channel declare it
 * in their own `stateSchema` from here, so they see it in `wrapModelCall` and still work with a custom
 * `stateSchema` (langchain keeps the agent's definition when both declare the same key).
 */
export const ThreadStateFields = {
  messages: MessagesValue,
  sandbox: reduced(SandboxStateSchema, mergeSandbox),
  thread_data: lastValue(ThreadDataSchema),
  title: lastValue(z.string()),
  artifacts: new ReducedValue(z.array(z.string()).default(() => []), {
    inputSchema: z.array(z.string()).nullable().optional(),
    reducer: (c: string[], n: string[] | null | undefined) => mergeArtifacts(c, n),
  }),
  todos: reduced(z.array(TodoSchema), mergeTodos),
  goal: reduced(z.record(z.string(), z.unknown()) as z.ZodType<Goal>, mergeGoal),
  uploaded_files: lastValue(z.array(UploadedFileSchema)),
  viewed_images: new ReducedValue(z.record(z.string(), ViewedImageSchema).default(() => ({})), {
    inputSchema: z.record(z.string(), ViewedImageSchema).nullable().optional(),
    reducer: (c: Record<string, ViewedImage>, n: Record<string, ViewedImage> | null | undefined) => mergeViewedImages(c, n),
  }),
  promoted: reduced(PromotedSchema as z.ZodType<Promoted>, mergePromoted),
  delegations: new ReducedValue(z.array(DelegationSchema).default(() => []) as z.ZodType<Delegation[]>, {
    inputSchema: z.array(DelegationSchema).nullable().optional() as z.ZodType<Delegation[] | null | undefined>,
    reducer: (c: Delegation[], n: Delegation[] | null | undefined) => mergeDelegations(c, n),
  }),
  skill_context: new ReducedValue(z.array(SkillContextEntrySchema).default(() => []) as z.ZodType<SkillContextEntry[]>, {
    inputSchema: z.array(z.looseObject({})).nullable().optional() as z.ZodType<Record<string, unknown>[] | null | undefined>,
    reducer: (c: Record<string, unknown>[], n: Record<string, unknown>[] | null | undefined) => mergeSkillContext(c, n),
  }),
  summary_text: lastValue(z.string()),
  background_tasks: lastValue(z.array(BackgroundTaskSchema)),
};

/**
 * The lead agent's state (`ThreadState` in DeerFlow): `messages` (add-messages reducer) plus the DeerFlow
 * channels, each with the reducer of DeerFlow's `thread_state.py`: `sandbox` (mergeSandbox),
 * `thread_data`, `title` (last write), `artifacts` (mergeArtifacts), `todos` (mergeTodos), `goal` (mergeGoal),
 * `uploaded_files` (last write), `viewed_images` (mergeViewedImages), `promoted` (mergePromoted), `delegations`
 * (mergeDelegations), `skill_context` (mergeSkillContext), `summary_text`, `background_tasks` (last write).
 */
export const ThreadState = new StateSchema(ThreadStateFields);

/** The names of ThreadState's channels, in declaration order (used to validate state updates). */
export const THREAD_STATE_FIELDS = Object.keys(ThreadStateFields) as (keyof typeof ThreadStateFields)[];
