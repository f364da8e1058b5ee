// Port of DeerFlow tools/builtins/view_image_tool.py (view_image).
import { closeSync, fstatSync, readSync } from "node:fs";
import path from "node:path";
import { ToolMessage } from "@langchain/core/messages";
import { Command } from "@langchain/langgraph";
import { tool } from "langchain";
import { z } from "zod";
import { openBeneathSync } from "../../sandbox/safe-fs.js";
import { threadDirsOf } from "../../sandbox/thread-dirs.js";
import type { ThreadData } from "../../agents/thread-state.js";
import { toolCallIdOf } from "./write-todos.js";

/** Largest image `view_image` accepts, in bytes (20 MiB). */
export const MAX_IMAGE_BYTES = 20 * 1024 * 1024;
const VIRTUAL_ROOT = "/mnt/user-data";
const AREAS = { workspace: "workspace_path", uploads: "uploads_path", outputs: "outputs_path" } as const;
/** Accepted extensions and their MIME types. */
export const IMAGE_MIME_TYPES: Record<string, string> = { ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".png": "image/png", ".webp": "image/webp", ".gif": "image/gif" };

/** True when the first bytes of a file match the image type its MIME type names. */
export function matchesMagic(mime: string, head: Buffer): boolean {
  switch (mime) {
    case "image/png":
      return head.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]));
    case "image/jpeg":
      return head[0] === 0xff && head[1] === 0xd8 && head[2] === 0xff;
    case "image/gif":
      return head.subarray(0, 4).toString("latin1") === "GIF8";
    case "image/webp":
      return head.subarray(0, 4).toString("latin1") === "RIFF" && head.subarray(8, 12).toString("latin1") === "WEBP";
    default:
      return false;
  }
}

/** Options of {@link createViewImageTool}. */
export interface ViewImageToolOptions {
  /** Root of thread directories (recomputed from the run's thread and user ids); default `DEER_FLOW_HOME`. */
  baseDir?: string;
}

type ToolConfig = { context?: Record<string, unknown>; configurable?: Record<string, unknown> };

/**
 * Checks a virtual `/mnt/user-data/{workspace,uploads,outputs}/...` image in the thread's directories and, with
 * `read`, returns its bytes from the same open file, or returns the error text for the model. Checks, in order:
 * location, existence, no symlink in any component (the file is opened beneath the thread's `user-data`, so a swap
 * during the check cannot lead elsewhere), is-a-file, extension (jpg, jpeg, png, webp, gif), size (at most 20 MiB),
 * magic bytes.
 */
export function inspectImage(virtualPath: string, dirs: ThreadData | null, options: { read?: boolean } = {}): { error: string } | { mime_type: string; size: number; data?: Buffer } {
  const normalized = path.posix.normalize(virtualPath);
  const [, mnt, userData, area, ...rest] = normalized.split("/");
  const key = AREAS[area as keyof typeof AREAS];
  if (`/${mnt}/${userData}` !== VIRTUAL_ROOT || !key || rest.length === 0 || rest.some((r) => !r || r === "." || r === "..")) {
    return { error: `Error: Only images under ${VIRTUAL_ROOT}/{workspace,uploads,outputs} can be viewed: ${virtualPath}` };
  }
  if (!dirs) return { error: "Error: Thread data is not available: no thread id in the runtime context" };
  const ext = path.extname(normalized).toLowerCase();
  const mime = IMAGE_MIME_TYPES[ext];
  let fd: number;
  try {
    // The area directories live in the thread's user-data, which sandboxed code can change: start above them.
    fd = openBeneathSync(path.dirname(dirs[key]), [path.basename(dirs[key]), ...rest]);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "ELOOP" || code === "ENOTDIR") return { error: `Error: Image path leaves the thread's directories (symlinks are not followed): ${virtualPath}` };
    if (code === "EISDIR") return { error: `Error: Path is not a file: ${virtualPath}` };
    return { error: `Error: Image file not found: ${virtualPath}` };
  }
  try {
    const stat = fstatSync(fd);
    if (!stat.isFile()) return { error: `Error: Path is not a file: ${virtualPath}` };
    if (!mime) return { error: `Error: Unsupported image type '${ext || "(none)"}': use jpg, jpeg, png, webp or gif` };
    if (stat.size > MAX_IMAGE_BYTES) return { error: `Error: Image is too large (${stat.size} bytes; the limit is 20 MiB): ${virtualPath}` };
    const head = Buffer.alloc(12);
    readSync(fd, head, 0, 12, 0);
    if (!matchesMagic(mime, head)) return { error: `Error: File content does not match its ${ext} extension: ${virtualPath}` };
    if (!options.read) return { mime_type: mime, size: stat.size };
    const data = Buffer.alloc(stat.size);
    const n = readSync(fd, data, 0, stat.size, 0);
    return { mime_type: mime, size: stat.size, data: data.subarray(0, n) };
  } finally {
    closeSync(fd);
  }
}

/** Arguments of `view_image` (built once: a zod schema compiles its parser per instance). */
const ViewImageSchema = z.object({ image_path: z.string().describe("Absolute virtual path, e.g. /mnt/user-data/uploads/chart.png") });

/**
 * Creates `view_image`: validates an image in the thread's directories and records it in `viewed_images`
 * (`{mime_type, size}` keyed by the virtual path; never base64 or a host path) with the result "Successfully read image"; ViewImageMiddleware
 * then shows the pixels to the model on its next call. Each failure is an "Error: ..." result (status `error`)
 * without a state change.
 */
export function createViewImageTool(options: ViewImageToolOptions = {}) {
  return tool(
    async ({ image_path }, config) => {
      const id = toolCallIdOf(config);
      let result;
      try {
        result = inspectImage(image_path, threadDirsOf(config as ToolConfig, options.baseDir));
      } catch (err) {
        result = { error: `Error: ${(err as Error).message}` };
      }
      if ("error" in result) return new ToolMessage({ content: result.error, tool_call_id: id, name: "view_image", status: "error" });
      return new Command({
        update: {
          // Only what the model needs: the host path is recomputed (and confined again) when the image is shown.
          viewed_images: { [image_path]: { mime_type: result.mime_type, size: result.size } },
          messages: [new ToolMessage({ content: "Successfully read image", tool_call_id: id, name: "view_image" })],
        },
      });
    },
    {
      name: "view_image",
      description: "Look at an image file (jpg, jpeg, png, webp, gif; up to 20 MiB) under /mnt/user-data/{workspace,uploads,outputs}. The image is shown to you on your next turn.",
      schema: ViewImageSchema,
    },
  );
}
