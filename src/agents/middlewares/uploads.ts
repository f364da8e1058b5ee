// Port of DeerFlow agents/middlewares/uploads_middleware.py (UploadsMiddleware).
import { statSync } from "node:fs";
import path from "node:path";
import { HumanMessage, type BaseMessage } from "@langchain/core/messages";
import { StateSchema } from "@langchain/langgraph";
import { ThreadStateFields, type UploadedFile } from "../thread-state.js";
import { RunStartMiddleware, type RunStartRuntime, type RunStartUpdate } from "./run-start.js";
import { textOf } from "./message-utils.js";
import { neutralizeTags } from "../prompt-text.js";
import { threadDirsOf } from "../../sandbox/thread-dirs.js";
import { readUploadOutline } from "../../sandbox/upload-outline.js";

/** Where uploads appear inside the sandbox. */
export const VIRTUAL_UPLOADS_DIR = "/mnt/user-data/uploads";
const STAGING = /^\.upload-|\.(part|partial|uploading)$/i;

/** Options of {@link UploadsMiddleware}. */
export interface UploadsOptions {
  /** Files listed one by one in the `<current_uploads>` block; the rest are summarized. Default 10, must be >= 1. */
  maxFilesPerContextSection?: number;
  /** Root used to find the thread's uploads dir when `thread_data` is not in state; default `DEER_FLOW_HOME`. */
  baseDir?: string;
  /**
   * Whether the middleware declares the `uploaded_files` channel (its `stateSchema`); default true. Pass false when
   * the agent's state schema already has it (ThreadState does): langchain re-parses the state against a middleware's
   * schema on every model call it wraps, and this middleware reads nothing from state but the messages.
   */
  declareState?: boolean;
}

/** `n` bytes as KB (under 1 MiB) or MB, one decimal. */
export function formatSize(bytes: number): string {
  return bytes < 1024 * 1024 ? `${(bytes / 1024).toFixed(1)} KB` : `${(bytes / (1024 * 1024)).toFixed(1)} MB`;
}

/** Lines describing a listed upload's document outline (or its first lines when it has no headings). */
function outlineLines(dir: string, filename: string): string[] {
  const { outline, outline_preview } = readUploadOutline(dir, filename);
  if (outline) {
    const visible = outline.filter((e): e is { title: string; line: number } => "title" in e);
    const lines = ["  Document outline (use `read_file` with line ranges to read sections):", ...visible.map((e) => `    L${e.line}: ${neutralizeTags(e.title)}`)];
    if (visible.length < outline.length) lines.push(`    ... (showing first ${visible.length} headings; use \`read_file\` to explore further)`);
    return lines;
  }
  if (outline_preview) return ["  No structural headings detected. Document begins with:", ...outline_preview.map((t) => `    > ${neutralizeTags(t)}`)];
  return [];
}

/**
 * The `<current_uploads>` block for `files` (at most `max` listed, the rest counted by extension). With the
 * thread's uploads directory `dir`, each listed file with a Markdown version also gets its outline (DeerFlow
 * `_format_file_entry`), so the model can read the section it needs by line range.
 */
export function formatUploadsBlock(files: UploadedFile[], max: number, dir?: string | null): string {
  const listed = files.slice(0, max);
  const lines = ["<current_uploads>", "The user attached these files to this message:"];
  for (const f of listed) {
    lines.push(`- ${neutralizeTags(f.filename)} (${formatSize(f.size ?? 0)}) at ${neutralizeTags(String(f.path))}`);
    if (dir) lines.push(...outlineLines(dir, f.filename));
  }
  const rest = files.slice(max);
  if (rest.length) {
    const byExt = new Map<string, number>();
    for (const f of rest) {
      const ext = path.extname(f.filename).toLowerCase() || "(no extension)";
      byExt.set(ext, (byExt.get(ext) ?? 0) + 1);
    }
    lines.push(`- ...and ${rest.length} more file(s): ${[...byExt].map(([ext, n]) => `${n} ${neutralizeTags(ext)}`).join(", ")}`);
  }
  lines.push("Read them with the file tools using the paths above; they are in the thread's uploads directory.", "</current_uploads>");
  return lines.join("\n");
}

function isFile(p: string): boolean {
  try {
    return statSync(p).isFile();
  } catch {
    return false;
  }
}

/** The channel UploadsMiddleware writes, declared for agents built on another state schema (one instance for every build). */
const UploadsStateSchema = new StateSchema({ uploaded_files: ThreadStateFields.uploaded_files });

/**
 * Tells the model about the files uploaded with the newest user message. Reads `additional_kwargs.files`
 * (`{filename, size, path, status}`) of the last message when it is a human message; keeps entries whose
 * filename is a bare name (no directories), not an upload staging file, and present in the thread's uploads
 * directory (when it can be resolved). Prepends a `<current_uploads>` block (name, size, virtual path
 * `/mnt/user-data/uploads/<name>`, the document outline or first lines of a file's Markdown version, at most
 * `maxFilesPerContextSection` listed) and a blank line to the message
 * (same id), keeping the original text under `additional_kwargs.original_user_content`, and writes
 * `uploaded_files`. No files, or a last message that is not human: `{uploaded_files: []}`, clearing a stale list.
 * Hook: DeerFlow's before_agent, made on the run's first model call ({@link RunStartMiddleware}: no graph node).
 * @throws Error when `maxFilesPerContextSection` < 1 (at construction).
 */
export class UploadsMiddleware extends RunStartMiddleware {
  readonly name = "UploadsMiddleware";
  readonly stateSchema: typeof UploadsStateSchema | undefined;
  private readonly maxFiles: number;
  private readonly baseDir?: string;

  constructor(options: UploadsOptions = {}) {
    super();
    this.stateSchema = options.declareState === false ? undefined : UploadsStateSchema;
    this.maxFiles = options.maxFilesPerContextSection ?? 10;
    if (!(this.maxFiles >= 1)) throw new Error(`maxFilesPerContextSection must be >= 1, got ${this.maxFiles}`);
    this.baseDir = options.baseDir;
  }

  /** The thread's host uploads directory, recomputed from the run's ids (never from state a client could write). */
  private uploadsDir(runtime: RunStartRuntime): string | null {
    return threadDirsOf(runtime, this.baseDir)?.uploads_path ?? null;
  }

  /** DeerFlow's before_agent update: `uploaded_files`, and the newest human message with its uploads block. */
  runStartUpdate(state: { messages: BaseMessage[] }, runtime: RunStartRuntime = {}): RunStartUpdate {
    const last = state.messages.at(-1);
    if (!last || !HumanMessage.isInstance(last)) return { uploaded_files: [] };
    const raw = last.additional_kwargs?.files;
    if (!Array.isArray(raw) || raw.length === 0) return { uploaded_files: [] };
    const dir = this.uploadsDir(runtime);
    const files: UploadedFile[] = [];
    for (const entry of raw as Record<string, unknown>[]) {
      const filename = typeof entry?.filename === "string" ? entry.filename : "";
      if (!filename || filename !== path.basename(filename) || filename.includes("\\") || filename === "." || filename === ".." || STAGING.test(filename)) continue;
      if (dir && !isFile(path.join(dir, filename))) continue;
      files.push({ filename, size: Number(entry.size ?? 0) || 0, path: `${VIRTUAL_UPLOADS_DIR}/${filename}`, status: entry.status ?? "uploaded" });
    }
    if (files.length === 0) return { uploaded_files: [] };
    if (last.additional_kwargs?.uploads_injected) return { uploaded_files: files };
    const block = formatUploadsBlock(files, this.maxFiles, dir);
    const original = textOf(last);
    const content = typeof last.content === "string" ? `${block}\n\n${last.content}` : [{ type: "text", text: `${block}\n\n` }, ...last.content];
    const kwargs: Record<string, unknown> = { ...last.additional_kwargs, uploads_injected: true };
    if (typeof kwargs.original_user_content !== "string") kwargs.original_user_content = original;
    const updated = new HumanMessage({ id: last.id, name: last.name, content: content as string, additional_kwargs: kwargs, response_metadata: last.response_metadata });
    return { messages: [updated], uploaded_files: files };
  }
}
