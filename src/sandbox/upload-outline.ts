// Port of DeerFlow utils/file_outline.py: the headings of an upload's Markdown version, so the agent can read the
// section it needs by line range (used by `<current_uploads>` and `list_uploaded_files`).
import { closeSync, fstatSync, readFileSync } from "node:fs";
import path from "node:path";
import { openBeneathSync } from "./safe-fs.js";

/** Most outline entries per file; one more adds a `{truncated: true}` sentinel (DeerFlow `MAX_OUTLINE_ENTRIES`). */
export const MAX_OUTLINE_ENTRIES = 50;
/** Non-empty lines shown when a document has no headings (DeerFlow `_OUTLINE_PREVIEW_LINES`). */
export const OUTLINE_PREVIEW_LINES = 5;
/** Markdown versions larger than this are not scanned (bytes): an outline must stay cheap to build per run. */
const MAX_OUTLINE_SOURCE_BYTES = 8 * 1024 * 1024;

// Bold headings converters emit when they cannot promote them to `#` (DeerFlow file_outline.py, same shapes).
const BOLD_HEADING = /^\*\*((ITEM|PART|SECTION|SCHEDULE|EXHIBIT|APPENDIX|ANNEX|CHAPTER)\b[A-Z0-9 .,\-]*)\*\*\s*$/;
const SPLIT_BOLD_HEADING = /^\*\*[\dA-Z][\d.]*\*\*\s+\*\*(?!\d[\d\s.,\-–—/:()%]*\*\*)[^*]+\*\*(?:\s+\*\*[^*]+\*\*){0,2}\s*$/;

/** One outline entry: a heading's text and its 1-based line, or the truncation sentinel. */
export type OutlineEntry = { title: string; line: number } | { truncated: true };

/** An upload's outline (headings) or, when it has none, the first lines of its Markdown version. */
export interface UploadOutline {
  outline?: OutlineEntry[];
  outline_preview?: string[];
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

/**
 * The outline of upload `filename` in `dir`, read from its Markdown version `<stem>.md` (the converted twin of a
 * document, or the file itself when it is Markdown); when that has no headings, its first
 * {@link OUTLINE_PREVIEW_LINES} non-empty lines. `{}` when there is no regular Markdown file or it cannot be read.
 * The twin is opened beneath `dir`'s parent with no symlink followed (sandboxed code can swap `uploads` or the twin
 * for a link between turns), then checked and read through that one descriptor. Texts are returned raw: callers
 * neutralize tags for the prompt.
 */
export function readUploadOutline(dir: string, filename: string): UploadOutline {
  const ext = path.extname(filename);
  const twin = `${filename.slice(0, filename.length - ext.length)}.md`;
  let text: string;
  let fd: number | undefined;
  try {
    fd = openBeneathSync(path.dirname(dir), [path.basename(dir), twin]);
    const info = fstatSync(fd);
    if (!info.isFile() || info.size > MAX_OUTLINE_SOURCE_BYTES) return {};
    text = readFileSync(fd, "utf8");
  } catch {
    return {};
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
  const outline = extractOutline(text);
  if (outline.length) return { outline };
  const preview = text.split(/\r?\n/).map((l) => l.trim()).filter(Boolean).slice(0, OUTLINE_PREVIEW_LINES);
  return preview.length ? { outline_preview: preview } : {};
}
