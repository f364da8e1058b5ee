// Port of DeerFlow agents/thread_state.py: the lead agent's state schema and its reducers.
import { MessagesValue, ReducedValue, StateSchema } from "@langchain/langgraph";
import { z } from "zod";

/** `{sandbox_id}` recorded when a sandbox is acquired for the thread. */
export const SandboxStateSchema = z.object({ sandbox_id: z.string() });
/** Sandbox state: `{sandbox_id}`. */
export type SandboxState = z.infer<typeof SandboxStateSchema>;

/** Per-thread directories (host paths) computed by ThreadDataMiddleware. */
export const ThreadDataSchema = z.object({
  workspace_path: z.string(),
  uploads_path: z.string(),
  outputs_path: z.string(),
});
/** Thread data: `{workspace_path, uploads_path, outputs_path}` (host paths). */
export type ThreadData = z.infer<typeof ThreadDataSchema>;

/** A file announced to the model by UploadsMiddleware. `size` is in bytes. */
export const UploadedFileSchema = z.looseObject({ filename: z.string(), size: z.number().optional(), path: z.string().optional() });
/** An uploaded file entry. */
export type UploadedFile = z.infer<typeof UploadedFileSchema>;

/** An image loaded by `view_image`: metadata only, never base64. `size` is in bytes. */
export const ViewedImageSchema = z.looseObject({ mime_type: z.string(), size: z.number(), actual_path: z.string() });
/** A viewed image entry. */
export type ViewedImage = z.infer<typeof ViewedImageSchema>;

/** A todo item of plan mode (`write_todos`). */
export const TodoSchema = z.looseObject({ content: z.string(), status: z.string() });
/** A todo entry. */
export type Todo = z.infer<typeof TodoSchema>;

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

/** Last-write-wins reducer for plain fields (`thread_data`, `title`, `uploaded_files`). */
function lastValue<T>(schema: z.ZodType<T>) {
  return new ReducedValue(schema.nullable().optional().default(null), {
    inputSchema: schema.nullable().optional(),
    reducer: (current: T | null | undefined, next: T | null | undefined) => (next === undefined ? (current ?? null) : next),
  });
}

/**
 * The lead agent's state (`ThreadState` in DeerFlow): `messages` (add-messages reducer) plus the
 * DeerFlow channels `sandbox`, `thread_data`, `title`, `artifacts`, `todos`, `uploaded_files`,
 * `viewed_images`, each with the reducer named in spec/agent-factory.md section 5.
 */
export const ThreadState = new StateSchema({
  messages: MessagesValue,
  sandbox: new ReducedValue(SandboxStateSchema.nullable().optional().default(null), {
    inputSchema: SandboxStateSchema.nullable().optional(),
    reducer: (c: SandboxState | null | undefined, n: SandboxState | null | undefined) => mergeSandbox(c, n),
  }),
  thread_data: lastValue(ThreadDataSchema),
  title: lastValue(z.string()),
  artifacts: new ReducedValue(z.array(z.string()).default(() => []), {
    inputSchema: z.array(z.string()).nullable().optional(),
    reducer: (c: string[], n: string[] | null | undefined) => mergeArtifacts(c, n),
  }),
  todos: new ReducedValue(z.array(TodoSchema).nullable().optional().default(null), {
    inputSchema: z.array(TodoSchema).nullable().optional(),
    reducer: (c: Todo[] | null | undefined, n: Todo[] | null | undefined) => mergeTodos(c, n),
  }),
  uploaded_files: lastValue(z.array(UploadedFileSchema)),
  viewed_images: new ReducedValue(z.record(z.string(), ViewedImageSchema).default(() => ({})), {
    inputSchema: z.record(z.string(), ViewedImageSchema).nullable().optional(),
    reducer: (c: Record<string, ViewedImage>, n: Record<string, ViewedImage> | null | undefined) => mergeViewedImages(c, n),
  }),
});

/** The names of ThreadState's channels, in declaration order (used to validate state updates). */
export const THREAD_STATE_FIELDS = ["messages", "sandbox", "thread_data", "title", "artifacts", "todos", "uploaded_files", "viewed_images"] as const;
