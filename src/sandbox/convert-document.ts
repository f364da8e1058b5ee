// Port of DeerFlow utils/file_conversion.py (convert_file_to_markdown, upstream uses markitdown/pymupdf4llm): uploaded
// documents get a Markdown twin next to the original so the agent can read them with read_file. Our converters:
// mammoth (DOCX -> HTML) and turndown (HTML -> Markdown), pdfjs-dist (PDF text per page), exceljs (XLSX sheets as
// Markdown tables), jszip (PPTX slide text from the slide XML).
import { readFile, stat, type FileHandle } from "node:fs/promises";
import path from "node:path";
import { getLogger } from "../logger.js";
import { createExclusiveBeneath, fdPath, openBeneath, openTrustedDir, withHandle } from "./safe-fs.js";

/** Extensions converted to Markdown (upstream's list, minus the legacy binary .doc/.ppt/.xls, plus HTML). */
export const CONVERTIBLE_EXTENSIONS = new Set([".pdf", ".docx", ".pptx", ".xlsx", ".html", ".htm"]);

/** Limits of one conversion. */
export interface ConversionLimits {
  /** Larger inputs are not converted (bytes). */
  maxInputBytes: number;
  /** PDF pages and PPTX slides read at most; the rest is noted as omitted. */
  maxPages: number;
  /** Rows per XLSX sheet rendered at most. */
  maxSheetRows: number;
  /** Markdown longer than this is cut (characters), with a note. */
  maxOutputChars: number;
}

/** Defaults: 20 MiB in, 200 pages or slides, 1,000 rows per sheet, 1,000,000 characters out. */
export const DEFAULT_CONVERSION_LIMITS: ConversionLimits = { maxInputBytes: 20 * 1024 * 1024, maxPages: 200, maxSheetRows: 1000, maxOutputChars: 1_000_000 };

/** A document that cannot be converted (unsupported, too large, corrupt); the message is shown to the client. */
export class ConversionError extends Error {
  override readonly name = "ConversionError";
}

/** Inputs at least this large (bytes) are converted in a worker thread (DeerFlow `_ASYNC_THRESHOLD_BYTES`). */
export const WORKER_THRESHOLD_BYTES = 1024 * 1024;

/**
 * {@link convertToMarkdown} in a worker thread, so a large document's parsing does not block the event loop.
 * The worker loads this module through tsx when the gateway runs from TypeScript sources.
 * @throws ConversionError / Error with the worker's message.
 */
export async function convertInWorker(file: string, limits: ConversionLimits, ext = path.extname(file)): Promise<string> {
  const { Worker } = await import("node:worker_threads");
  const entry = new URL(`./convert-worker.${import.meta.url.endsWith(".ts") ? "ts" : "js"}`, import.meta.url).href;
  // From TypeScript sources the worker registers tsx's loader before importing its entry (worker execArgv cannot
  // carry `--import`); a compiled build imports the .js entry directly.
  const boot = entry.endsWith(".ts") ? `import("tsx/esm/api").then((m) => { m.register(); return import(${JSON.stringify(entry)}); })` : `import(${JSON.stringify(entry)})`;
  const worker = new Worker(boot, { eval: true, workerData: { file, limits, ext } });
  try {
    return await new Promise<string>((resolve, reject) => {
      worker.once("message", (m: { markdown?: string; error?: string; conversion?: boolean }) =>
        m.error !== undefined ? reject(m.conversion ? new ConversionError(m.error) : new Error(m.error)) : resolve(m.markdown ?? ""),
      );
      worker.once("error", reject);
      worker.once("exit", (code) => reject(new Error(`the converter stopped (exit code ${code})`)));
    });
  } finally {
    void worker.terminate();
  }
}

const cell = (v: unknown) => String(v ?? "").replace(/\|/g, "\\|").replace(/\r?\n/g, " ").trim();

async function htmlToMarkdown(html: string): Promise<string> {
  const { default: TurndownService } = await import("turndown");
  const service = new TurndownService({ headingStyle: "atx", codeBlockStyle: "fenced", bulletListMarker: "-" });
  service.remove(["script", "style", "noscript"]);
  return service.turndown(html);
}

async function docxToMarkdown(buf: Buffer): Promise<string> {
  const mammoth = await import("mammoth");
  const { value } = await mammoth.convertToHtml({ buffer: buf });
  return htmlToMarkdown(value);
}

async function pdfToMarkdown(buf: Buffer, limits: ConversionLimits): Promise<string> {
  const pdfjs = await import("pdfjs-dist/legacy/build/pdf.mjs");
  const doc = await pdfjs.getDocument({ data: new Uint8Array(buf), isEvalSupported: false, useSystemFonts: false, verbosity: 0 }).promise;
  try {
    const pages: string[] = [];
    const count = Math.min(doc.numPages, limits.maxPages);
    for (let i = 1; i <= count; i++) {
      const page = await doc.getPage(i);
      const content = await page.getTextContent();
      let text = "";
      for (const item of content.items as { str?: string; hasEOL?: boolean }[]) {
        if (typeof item.str !== "string") continue;
        text += item.str + (item.hasEOL ? "\n" : "");
      }
      pages.push(`## Page ${i}\n\n${text.trim()}`);
    }
    if (doc.numPages > count) pages.push(`*(${doc.numPages - count} more pages not converted: the limit is ${limits.maxPages})*`);
    return pages.join("\n\n");
  } finally {
    await doc.destroy();
  }
}

async function xlsxToMarkdown(buf: Buffer, limits: ConversionLimits): Promise<string> {
  const { default: ExcelJS } = await import("exceljs");
  const wb = new ExcelJS.Workbook();
  await wb.xlsx.load(buf as unknown as ArrayBuffer);
  const out: string[] = [];
  wb.eachSheet((sheet) => {
    const rows: string[][] = [];
    sheet.eachRow({ includeEmpty: false }, (row) => {
      if (rows.length > limits.maxSheetRows) return;
      const values = (row.values as unknown[]).slice(1).map((v) => cell(typeof v === "object" && v !== null && "result" in v ? (v as { result: unknown }).result : typeof v === "object" && v !== null && "text" in v ? (v as { text: unknown }).text : v));
      rows.push(values);
    });
    out.push(`## ${sheet.name}`);
    if (!rows.length) {
      out.push("*(empty sheet)*");
      return;
    }
    const width = Math.max(...rows.map((r) => r.length));
    const pad = (r: string[]) => `| ${Array.from({ length: width }, (_, i) => r[i] ?? "").join(" | ")} |`;
    const shown = rows.slice(0, limits.maxSheetRows);
    out.push([pad(shown[0]), `|${" --- |".repeat(width)}`, ...shown.slice(1).map(pad)].join("\n"));
    if (rows.length > limits.maxSheetRows) out.push(`*(more rows not converted: the limit is ${limits.maxSheetRows} per sheet)*`);
  });
  return out.join("\n\n");
}

const XML_ENTITIES: Record<string, string> = { amp: "&", lt: "<", gt: ">", quot: '"', apos: "'" };
const unescapeXml = (s: string) => s.replace(/&(amp|lt|gt|quot|apos);/g, (_, e: string) => XML_ENTITIES[e]);

async function pptxToMarkdown(buf: Buffer, limits: ConversionLimits): Promise<string> {
  const { default: JSZip } = await import("jszip");
  const zip = await JSZip.loadAsync(buf);
  const slideNo = (name: string) => Number(/slide(\d+)\.xml$/.exec(name)?.[1] ?? 0);
  const slides = Object.keys(zip.files).filter((n) => /^ppt\/slides\/slide\d+\.xml$/.test(n)).sort((a, b) => slideNo(a) - slideNo(b));
  if (!slides.length) throw new ConversionError("no slides found (not a PowerPoint .pptx file?)");
  const out: string[] = [];
  for (const name of slides.slice(0, limits.maxPages)) {
    const xml = await zip.file(name)!.async("string");
    // Each <a:p> is a paragraph; its runs' <a:t> elements hold the text (DrawingML).
    const paragraphs = [...xml.matchAll(/<a:p\b[^>]*>([\s\S]*?)<\/a:p>/g)]
      .map((p) => [...p[1].matchAll(/<a:t>([^<]*)<\/a:t>/g)].map((t) => unescapeXml(t[1])).join(""))
      .filter((t) => t.trim());
    out.push(`## Slide ${slideNo(name)}\n\n${paragraphs.join("\n\n")}`.trim());
  }
  if (slides.length > limits.maxPages) out.push(`*(${slides.length - limits.maxPages} more slides not converted: the limit is ${limits.maxPages})*`);
  return out.join("\n\n");
}

/**
 * Converts one document to Markdown by its extension (`ext`, default the file's own; given when `file` is a
 * `/proc/self/fd/<n>` path of an opened upload). @throws ConversionError for an unsupported extension or an
 * input over `maxInputBytes`; whatever the library throws for a corrupt file.
 */
export async function convertToMarkdown(file: string, limits: ConversionLimits = DEFAULT_CONVERSION_LIMITS, extension = path.extname(file)): Promise<string> {
  const ext = extension.toLowerCase();
  if (!CONVERTIBLE_EXTENSIONS.has(ext)) throw new ConversionError(`${ext || "files without an extension"} cannot be converted`);
  const size = (await stat(file)).size;
  if (size > limits.maxInputBytes) throw new ConversionError(`file is ${size} bytes; documents over ${limits.maxInputBytes} bytes are not converted`);
  const buf = await readFile(file);
  let md: string;
  switch (ext) {
    case ".pdf":
      md = await pdfToMarkdown(buf, limits);
      break;
    case ".docx":
      md = await docxToMarkdown(buf);
      break;
    case ".xlsx":
      md = await xlsxToMarkdown(buf, limits);
      break;
    case ".pptx":
      md = await pptxToMarkdown(buf, limits);
      break;
    default:
      md = await htmlToMarkdown(buf.toString("utf8"));
  }
  md = md.trim();
  if (md.length > limits.maxOutputChars) md = `${md.slice(0, limits.maxOutputChars)}\n\n*(truncated: the converted text is longer than ${limits.maxOutputChars} characters)*`;
  return `${md}\n`;
}

/** What conversion added to one uploaded file's entry (DeerFlow's `markdown_*` fields, or our `conversion_error`). */
export type ConversionResult = { markdown_file: string } | { conversion_error: string } | null;

/** Most `<stem>_<n>.md` names tried for a twin before giving up (each one exists already). */
const MAX_TWIN_TRIES = 1000;

/**
 * Converts upload `filename` of the held directory `dir` and writes its Markdown twin next to it. The source is
 * opened without following symlinks and converted through its descriptor; the twin is `<stem>.md`, or
 * `<stem>_1.md`, `<stem>_2.md`, ... when that name is taken: it is created exclusively (link(2)), so it never
 * replaces a file the user uploaded, another document's twin, or anything else. Never throws: a failure is
 * logged as a warning and returned as `{conversion_error}` so the upload itself still succeeds.
 * @returns null for a file that is not a convertible document; else the twin's name or the error.
 */
export async function convertBeneath(dir: FileHandle, filename: string, limits: ConversionLimits = DEFAULT_CONVERSION_LIMITS): Promise<ConversionResult> {
  const ext = path.extname(filename).toLowerCase();
  if (!CONVERTIBLE_EXTENSIONS.has(ext)) return null;
  const stem = filename.slice(0, filename.length - ext.length);
  try {
    const md = await withHandle(await openBeneath(dir, filename), async (source) => {
      const info = await source.stat();
      if (!info.isFile()) throw new ConversionError("not a regular file");
      // The worker shares this process's descriptor table, so it reads the same opened file.
      const file = fdPath(source);
      return info.size >= WORKER_THRESHOLD_BYTES ? convertInWorker(file, limits, ext) : convertToMarkdown(file, limits, ext);
    });
    for (let n = 0; n <= MAX_TWIN_TRIES; n++) {
      const twin = n === 0 ? `${stem}.md` : `${stem}_${n}.md`;
      if (twin === filename) continue;
      if (await createExclusiveBeneath(dir, twin, md)) return { markdown_file: twin };
    }
    throw new ConversionError(`every name from ${stem}.md to ${stem}_${MAX_TWIN_TRIES}.md is taken`);
  } catch (err) {
    const reason = err instanceof ConversionError ? err.message : `the file could not be read as ${ext.slice(1).toUpperCase()} (${(err as Error)?.message ?? String(err)})`;
    getLogger().warn({ file: filename, err: (err as Error)?.message }, "document conversion failed; the upload is kept without a Markdown version");
    return { conversion_error: `Could not convert ${filename} to Markdown: ${reason}` };
  }
}

/**
 * {@link convertBeneath} for a document given by host path (a directory the gateway owns; tests, tools).
 * Never throws for conversion failures.
 */
export async function convertUploadedDocument(hostPath: string, limits: ConversionLimits = DEFAULT_CONVERSION_LIMITS): Promise<ConversionResult> {
  if (!CONVERTIBLE_EXTENSIONS.has(path.extname(hostPath).toLowerCase())) return null;
  return withHandle(await openTrustedDir(path.dirname(hostPath)), (dir) => convertBeneath(dir, path.basename(hostPath), limits));
}

/**
 * Adds Markdown versions to freshly uploaded files (`uploads.auto_convert_documents`): each convertible file gets
 * `markdown_file`, `markdown_path`, `markdown_virtual_path` and `markdown_artifact_url` (DeerFlow's upload
 * response fields) naming the twin actually written (`<stem>.md`, or `<stem>_<n>.md` when that name was taken),
 * or `conversion_error` when conversion failed. Other files are returned unchanged. The uploads directory is
 * opened once, without following symlinks, and every read and write goes through it. Never throws.
 */
export async function convertUploads<T extends { filename: string; virtual_path: string }>(
  sandbox: { threadId: string; openDir(virtualPath: string, mode: "list"): Promise<FileHandle> },
  files: T[],
  limits: ConversionLimits = DEFAULT_CONVERSION_LIMITS,
): Promise<(T & Record<string, string>)[]> {
  const out: (T & Record<string, string>)[] = [];
  let dir: FileHandle | null = null;
  try {
    for (const file of files) {
      let result: ConversionResult = null;
      if (CONVERTIBLE_EXTENSIONS.has(path.extname(file.filename).toLowerCase())) {
        try {
          dir ??= await sandbox.openDir("/mnt/user-data/uploads", "list");
          result = await convertBeneath(dir, file.filename, limits);
        } catch (err) {
          result = { conversion_error: `Could not convert ${file.filename} to Markdown: ${(err as Error).message}` };
        }
      }
      if (result && "markdown_file" in result) {
        const virtual = `/mnt/user-data/uploads/${result.markdown_file}`;
        out.push({
          ...file,
          markdown_file: result.markdown_file,
          markdown_path: virtual,
          markdown_virtual_path: virtual,
          markdown_artifact_url: `/api/threads/${sandbox.threadId}/artifacts${virtual.split("/").map(encodeURIComponent).join("/")}`,
        });
      } else out.push(result ? { ...file, ...result } : (file as T & Record<string, string>));
    }
  } finally {
    await dir?.close().catch(() => undefined);
  }
  return out;
}
