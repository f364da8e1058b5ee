// Port of DeerFlow tools/builtins/list_uploaded_files_tool.py and utils/file_outline.py (historical uploads on demand).
import { lstat, readdir } from "node:fs/promises";
import path from "node:path";
import { tool } from "langchain";
import { z } from "zod";
import { neutralizeTags } from "../../agents/prompt-text.js";
import { TEMP_FILE } from "../../sandbox/local-sandbox.js";
import { VIRTUAL_ROOT } from "../../sandbox/paths.js";
import { readUploadOutline, type OutlineEntry } from "../../sandbox/upload-outline.js";
import { hostSandbox, toolErrorText, type ToolRuntimeConfig } from "../sandbox/runtime.js";
import { compareCodePoints } from "../../code-point-order.js";

/** Files listed when the model does not say (DeerFlow `_DEFAULT_MAX_RESULTS`). */
export const DEFAULT_MAX_UPLOAD_RESULTS = 20;
/** Most files one call lists (DeerFlow `_MAX_MAX_RESULTS`). */
export const MAX_UPLOAD_RESULTS = 100;
/** One historical upload as the tool reports it. `size` in bytes. */
export interface HistoricalUpload {
  filename: string;
  size: number;
  path: string;
  extension: string;
  outline?: OutlineEntry[];
  outline_preview?: string[];
}

/** What `list_uploaded_files` returns (serialized as JSON for the model). */
export interface ListUploadedFilesResult {
  files: HistoricalUpload[];
  total_count?: number;
  truncated?: true;
  /** Omitted files counted by extension, e.g. "2 .csv, 1 .pdf". */
  omitted_summary?: string;
  message: string;
}

/** The outline of an upload with every title tag-neutralized. */
function neutralizedOutline(dir: string, filename: string): Pick<HistoricalUpload, "outline" | "outline_preview"> {
  const { outline, outline_preview } = readUploadOutline(dir, filename);
  if (outline) return { outline: outline.map((e) => ("title" in e ? { ...e, title: neutralizeTags(e.title) } : e)) };
  return outline_preview ? { outline_preview: outline_preview.map(neutralizeTags) } : {};
}

const extLabel = (name: string) => neutralizeTags(path.extname(name).toLowerCase()) || "(no extension)";

/**
 * Lists the thread's historical uploads: regular files in its uploads directory (no symlinks, no staging files),
 * minus the files attached in the current run (`state.uploaded_files`, already in `<current_uploads>`) and minus a
 * converted document's Markdown twin (`report.md` beside `report.pdf`), newest first, at most `maxResults` (clamped
 * to 1..100); the rest are counted by extension. Names are tag-neutralized.
 */
export async function listHistoricalUploads(uploadsDir: string, currentRun: ReadonlySet<string>, maxResults: number, includeOutline: boolean | readonly string[]): Promise<ListUploadedFilesResult> {
  const entries = await readdir(uploadsDir, { withFileTypes: true });
  const names = entries.filter((e) => e.isFile() && !TEMP_FILE.test(e.name)).map((e) => e.name);
  const all = new Set(names);
  const candidates: { name: string; size: number; mtimeMs: number }[] = [];
  for (const name of names) {
    if (currentRun.has(name)) continue;
    if (name.endsWith(".md")) {
      const stem = name.slice(0, -3);
      if ([...all].some((n) => n !== name && n.slice(0, n.length - path.extname(n).length) === stem)) continue;
    }
    const info = await lstat(path.join(uploadsDir, name)).catch(() => null);
    if (info?.isFile()) candidates.push({ name, size: info.size, mtimeMs: info.mtimeMs });
  }
  if (!candidates.length) return { files: [], message: "No historical uploaded files in this thread." };
  candidates.sort((a, b) => b.mtimeMs - a.mtimeMs || compareCodePoints(a.name, b.name));
  const limit = Math.max(1, Math.min(Math.trunc(maxResults) || DEFAULT_MAX_UPLOAD_RESULTS, MAX_UPLOAD_RESULTS));
  const wanted = typeof includeOutline === "boolean" ? null : new Set(includeOutline);
  const files: HistoricalUpload[] = [];
  for (const c of candidates.slice(0, limit)) {
    const file: HistoricalUpload = { filename: neutralizeTags(c.name), size: c.size, path: neutralizeTags(`${VIRTUAL_ROOT}/uploads/${c.name}`), extension: neutralizeTags(path.extname(c.name)) };
    if (includeOutline === true || wanted?.has(c.name)) Object.assign(file, neutralizedOutline(uploadsDir, c.name));
    files.push(file);
  }
  const result: ListUploadedFilesResult = { files, total_count: candidates.length, message: `Found ${candidates.length} historical file(s).` };
  const omitted = candidates.slice(limit);
  if (omitted.length) {
    const counts = new Map<string, number>();
    for (const o of omitted) counts.set(extLabel(o.name), (counts.get(extLabel(o.name)) ?? 0) + 1);
    result.truncated = true;
    result.omitted_summary = [...counts].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([ext, n]) => `${n} ${ext}`).join(", ");
  }
  return result;
}

/** Arguments of `list_uploaded_files` (built once: a zod schema compiles its parser per instance). */
const ListUploadedFilesSchema = z.object({
  include_outline: z
    .union([z.boolean(), z.array(z.string())])
    .optional()
    .describe("false (default): no outlines; true: the document outline (headings) or a preview for every file with a Markdown version; a list of file names: outlines only for those."),
  max_results: z.number().int().optional().describe(`Most files to return (default ${DEFAULT_MAX_UPLOAD_RESULTS}, max ${MAX_UPLOAD_RESULTS}).`),
});

/**
 * Creates `list_uploaded_files`: lets the agent discover files uploaded in earlier turns of the thread (the current
 * run's attachments are already in `<current_uploads>`). The thread and user come from the server-set runtime
 * context; the uploads directory is recomputed and confined by the thread's sandbox. Answers a JSON object
 * `{files: [{filename, size, path, extension, outline?, outline_preview?}], total_count, truncated?,
 * omitted_summary?, message}`; no thread or no uploads directory yields `files: []` with a message. Lead agent only
 * (subagents do not get it). Mirrors DeerFlow `list_uploaded_files`.
 */
export function createListUploadedFilesTool(options: { baseDir?: string } = {}) {
  return tool(
    async ({ include_outline, max_results }, config) => {
      const runtime = config as ToolRuntimeConfig;
      let sandbox;
      try {
        sandbox = await hostSandbox(runtime, { baseDir: options.baseDir });
      } catch {
        return JSON.stringify({ files: [], message: "Thread not found." });
      }
      const uploaded = (runtime.state as { uploaded_files?: unknown } | undefined)?.uploaded_files;
      const currentRun = new Set(Array.isArray(uploaded) ? uploaded.map((f) => (f as { filename?: unknown })?.filename).filter((n): n is string => typeof n === "string") : []);
      try {
        const dir = await sandbox.resolve(`${VIRTUAL_ROOT}/uploads`, "list");
        return JSON.stringify(await listHistoricalUploads(dir, currentRun, max_results ?? DEFAULT_MAX_UPLOAD_RESULTS, include_outline ?? false));
      } catch (err) {
        if ((err as NodeJS.ErrnoException)?.code === "ENOENT") return JSON.stringify({ files: [], message: "No uploads directory for this thread." });
        return toolErrorText(err, `${VIRTUAL_ROOT}/uploads`, { notFound: "Directory not found", doing: "listing uploaded files" }, sandbox);
      }
    },
    {
      name: "list_uploaded_files",
      description:
        "Discover files uploaded in PREVIOUS turns of this thread (files attached to the current message are already listed in <current_uploads>). " +
        "Use it when the user refers to earlier uploads without naming them or you need an overview of the thread's files; " +
        "if the user names a file, read it directly with read_file or grep.",
      schema: ListUploadedFilesSchema,
    },
  );
}
