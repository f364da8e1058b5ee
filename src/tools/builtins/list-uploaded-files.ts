// Port of DeerFlow tools/builtins/list_uploaded_files_tool.py and utils/file_outline.py (historical uploads on demand).
import { lstat, readdir, readFile } from "node:fs/promises";
import path from "node:path";
import { tool } from "langchain";
import { z } from "zod";
import { neutralizeTags } from "../../agents/middlewares/uploads.js";
import { TEMP_FILE } from "../../sandbox/local-sandbox.js";
import { VIRTUAL_ROOT } from "../../sandbox/paths.js";
import { threadSandbox, toolErrorText, type ToolRuntimeConfig } from "../sandbox/runtime.js";

/** Files listed when the model does not say (DeerFlow `_DEFAULT_MAX_RESULTS`). */
export const DEFAULT_MAX_UPLOAD_RESULTS = 20;
/** Most files one call lists (DeerFlow `_MAX_MAX_RESULTS`). */
export const MAX_UPLOAD_RESULTS = 100;
/** Most outline entries per file; one more adds a `{truncated: true}` sentinel (DeerFlow `MAX_OUTLINE_ENTRIES`). */
export const MAX_OUTLINE_ENTRIES = 50;
const PREVIEW_LINES = 5;
/** Markdown twins larger than this are not scanned for an outline (bytes); keeps one call cheap. */
const MAX_OUTLINE_SOURCE_BYTES = 8 * 1024 * 1024;

// Bold headings converters emit when they cannot promote them to `#` (DeerFlow file_outline.py, same shapes).
const BOLD_HEADING = /^\*\*((ITEM|PART|SECTION|SCHEDULE|EXHIBIT|APPENDIX|ANNEX|CHAPTER)\b[A-Z0-9 .,\-]*)\*\*\s*$/;
const SPLIT_BOLD_HEADING = /^\*\*[\dA-Z][\d.]*\*\*\s+\*\*(?!\d[\d\s.,\-–—/:()%]*\*\*)[^*]+\*\*(?:\s+\*\*[^*]+\*\*){0,2}\s*$/;

/** One outline entry: a heading's text and its 1-based line, or the truncation sentinel. */
export type OutlineEntry = { title: string; line: number } | { truncated: true };

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

function cleanBoldTitle(raw: string): string {
  const merged = raw.replace(/\*\*\s*\*\*/g, " ").trim();
  const whole = /^\*\*([\s\S]+?)\*\*$/.exec(merged);
  return whole ? whole[1].trim() : merged;
}

/**
 * The outline of a Markdown text: `#` headings, bold structural headings (`**PART II**`) and split-bold numbered
 * headings (`**3.2** **Attention**`), at most {@link MAX_OUTLINE_ENTRIES} then a `{truncated: true}` sentinel.
 */
export function extractOutline(markdown: string): OutlineEntry[] {
  const out: OutlineEntry[] = [];
  const lines = markdown.split(/\r?\n/);
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i].trim();
    if (!line) continue;
    let title = "";
    if (line.startsWith("#")) title = cleanBoldTitle(line.replace(/^#+/, "").trim());
    else if (BOLD_HEADING.test(line)) title = BOLD_HEADING.exec(line)![1].trim();
    else if (SPLIT_BOLD_HEADING.test(line)) title = [...line.matchAll(/\*\*([^*]+)\*\*/g)].map((m) => m[1]).join(" ");
    if (!title) continue;
    if (out.length === MAX_OUTLINE_ENTRIES) {
      out.push({ truncated: true });
      break;
    }
    out.push({ title, line: i + 1 });
  }
  return out;
}

/** Outline of `file`'s Markdown twin `<stem>.md` (or of `file` itself when it is Markdown), else its first lines. */
async function outlineFor(dir: string, filename: string): Promise<Pick<HistoricalUpload, "outline" | "outline_preview">> {
  const ext = path.extname(filename);
  const twin = path.join(dir, `${filename.slice(0, filename.length - ext.length)}.md`);
  const info = await lstat(twin).catch(() => null);
  if (!info?.isFile() || info.size > MAX_OUTLINE_SOURCE_BYTES) return {};
  const text = await readFile(twin, "utf8").catch(() => "");
  const outline = extractOutline(text);
  if (outline.length) return { outline: outline.map((e) => ("title" in e ? { ...e, title: neutralizeTags(e.title) } : e)) };
  const preview = text.split(/\r?\n/).map((l) => l.trim()).filter(Boolean).slice(0, PREVIEW_LINES).map(neutralizeTags);
  return preview.length ? { outline_preview: preview } : {};
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
  candidates.sort((a, b) => b.mtimeMs - a.mtimeMs || a.name.localeCompare(b.name));
  const limit = Math.max(1, Math.min(Math.trunc(maxResults) || DEFAULT_MAX_UPLOAD_RESULTS, MAX_UPLOAD_RESULTS));
  const wanted = typeof includeOutline === "boolean" ? null : new Set(includeOutline);
  const files: HistoricalUpload[] = [];
  for (const c of candidates.slice(0, limit)) {
    const file: HistoricalUpload = { filename: neutralizeTags(c.name), size: c.size, path: neutralizeTags(`${VIRTUAL_ROOT}/uploads/${c.name}`), extension: neutralizeTags(path.extname(c.name)) };
    if (includeOutline === true || wanted?.has(c.name)) Object.assign(file, await outlineFor(uploadsDir, c.name));
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
        sandbox = await threadSandbox(runtime, { record: false, baseDir: options.baseDir });
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
      schema: z.object({
        include_outline: z
          .union([z.boolean(), z.array(z.string())])
          .optional()
          .describe("false (default): no outlines; true: the document outline (headings) or a preview for every file with a Markdown version; a list of file names: outlines only for those."),
        max_results: z.number().int().optional().describe(`Most files to return (default ${DEFAULT_MAX_UPLOAD_RESULTS}, max ${MAX_UPLOAD_RESULTS}).`),
      }),
    },
  );
}
