// Port of DeerFlow agents/middlewares/view_image_middleware.py (ViewImageMiddleware).
import { AIMessage, HumanMessage, ToolMessage, type BaseMessage } from "@langchain/core/messages";
import { StateSchema } from "@langchain/langgraph";
import type { ModelRequest } from "langchain";
import { z } from "zod";
import { inspectImage } from "../../tools/builtins/view-image.js";
import { ThreadStateFields, type ThreadData, type ViewedImage } from "../thread-state.js";
import { threadDirsOf } from "../../sandbox/thread-dirs.js";
import { DeerflowMiddleware } from "./base.js";

/** Id prefix of the injected image message. */
export const IMAGE_CONTEXT_ID_PREFIX = "view-image-context:";
type Block = { type: "text"; text: string } | { type: "image_url"; image_url: { url: string } };

/**
 * The content blocks showing `images` to the model: "Here are the images you've viewed:", then per image a line
 * with its path and MIME type and an `image_url` block with a base64 data URL. Each image is re-resolved from its
 * virtual path in the thread's directories `dirs` (recomputed by the caller from the run's ids) with every check of
 * `view_image` (no symlinks, type, size, magic bytes) on the same open file it then reads; a recorded `actual_path` is never read. An
 * image that is missing, changed size, fails a check or cannot be read gets an "unavailable or changed" note.
 * No images: one "No images have been viewed." block.
 */
export function imageContextBlocks(images: Record<string, ViewedImage>, dirs: ThreadData | null): Block[] {
  const entries = Object.entries(images);
  if (!entries.length) return [{ type: "text", text: "No images have been viewed." }];
  const blocks: Block[] = [{ type: "text", text: "Here are the images you've viewed:" }];
  for (const [virtualPath, img] of entries) {
    try {
      // Checked and read through one open file, so the bytes shown are the bytes checked.
      const found = inspectImage(virtualPath, dirs, { read: true });
      if ("error" in found || found.size !== img.size || found.mime_type !== img.mime_type || !found.data) throw new Error("changed");
      const data = found.data.toString("base64");
      blocks.push({ type: "text", text: `- ${virtualPath} (${found.mime_type})` }, { type: "image_url", image_url: { url: `data:${found.mime_type};base64,${data}` } });
    } catch {
      blocks.push({ type: "text", text: `- ${virtualPath}: image unavailable or changed since it was viewed` });
    }
  }
  return blocks;
}

/** State keys of ViewImageMiddleware (one instance for every build: zod compiles a parser per instance). */
const ViewImageStateSchema = new StateSchema({ viewed_images: ThreadStateFields.viewed_images });
const ViewImageContextSchema = z.looseObject({ thread_id: z.string().optional(), user_id: z.string().optional() });

/**
 * Shows viewed images to the model. When the newest AI message called `view_image`, every tool call of that
 * message has its result, and no image message follows yet, the request gets a hidden human message (id
 * `view-image-context:<ai id>`, `additional_kwargs.deerflow_view_image_context: true`) with the images of
 * `viewed_images` as base64 data URLs ({@link imageContextBlocks}). The message exists only in the request, so
 * checkpoints never hold base64 (DeerFlow adds it in before_model and removes it in after_model); `viewed_images`
 * is not cleared. Hook: wrapModelCall. Register it only for vision-capable models.
 */
export class ViewImageMiddleware extends DeerflowMiddleware {
  readonly name = "ViewImageMiddleware";
  readonly stateSchema = ViewImageStateSchema;
  /** Context keys this middleware reads: the run's ids, from which the thread's directories are recomputed. */
  readonly contextSchema = ViewImageContextSchema;

  /** @param options.baseDir Root of thread directories; default `DEER_FLOW_HOME`. */
  constructor(private readonly options: { baseDir?: string } = {}) {
    super();
  }

  /**
   * The image message for `messages`, or null when none is due.
   * @param dirs The thread's host directories (recomputed from the run's ids), or null when unknown.
   */
  imageContextFor(messages: readonly BaseMessage[], images: Record<string, ViewedImage>, dirs: ThreadData | null): HumanMessage | null {
    let idx = -1;
    for (let i = messages.length - 1; i >= 0 && idx < 0; i--) if (AIMessage.isInstance(messages[i])) idx = i;
    if (idx < 0) return null;
    const ai = messages[idx] as AIMessage;
    const calls = ai.tool_calls ?? [];
    if (!calls.some((c) => c.name === "view_image")) return null;
    const after = messages.slice(idx + 1);
    const answered = new Set(after.filter((m) => ToolMessage.isInstance(m)).map((m) => (m as ToolMessage).tool_call_id));
    if (!calls.every((c) => c.id && answered.has(c.id))) return null;
    if (after.some((m) => m.additional_kwargs?.deerflow_view_image_context)) return null;
    return new HumanMessage({
      id: `${IMAGE_CONTEXT_ID_PREFIX}${ai.id ?? idx}`,
      content: imageContextBlocks(images, dirs),
      additional_kwargs: { hide_from_ui: true, deerflow_view_image_context: true },
    });
  }

  wrapModelCall(request: ModelRequest, handler: (r: ModelRequest) => unknown) {
    const images = ((request.state as { viewed_images?: Record<string, ViewedImage> } | undefined)?.viewed_images ?? {}) as Record<string, ViewedImage>;
    const runtime = request.runtime as { context?: Record<string, unknown>; configurable?: Record<string, unknown> } | undefined;
    const extra = this.imageContextFor(request.messages, images, threadDirsOf(runtime, this.options.baseDir));
    return (extra ? handler({ ...request, messages: [...request.messages, extra] }) : handler(request)) as never;
  }
}
