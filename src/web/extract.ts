// HTML -> Markdown for the research tools, shared by every fetch provider (the direct fetcher, Jina, and the
// third-party readers): Readability picks the article out of the page (DeerFlow utils/readability.py does the
// same with readabilipy), linkedom is the DOM it runs on, turndown writes the Markdown. The result is capped as
// upstream caps it (`article.to_markdown()[:4096]`), with a note when cut.
import { Readability } from "@mozilla/readability";
import { parseHTML } from "linkedom";
import TurndownService from "turndown";

/** Characters of Markdown one fetch returns (upstream's `[:4096]`). */
export const MAX_MARKDOWN_CHARS = 4096;
/**
 * Deepest element nesting handed to the DOM. Readability, turndown and linkedom walk the tree recursively in
 * places; a page nested deeper (100k `<div>`s is an attack, not an article) is reduced to its text instead.
 */
export const MAX_NESTING_DEPTH = 512;
/** HTML larger than this (characters) is not parsed into a DOM; its text is used (bounds CPU per fetch). */
export const MAX_DOM_CHARS = 3_000_000;

/** HTML characters of the article converted first (enough for MAX_MARKDOWN_CHARS of Markdown on any real page). */
const TURNDOWN_PREFIX_CHARS = 64 * 1024;

const VOID_ELEMENTS = new Set(["area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source", "track", "wbr"]);
/** Elements whose content is never article text. */
const SKIPPED_ELEMENTS = new Set(["script", "style", "svg", "noscript", "template"]);

/** One tag met by {@link scanTags}: its lower-case name, whether it closes, and whether it opens a nesting level. */
interface ScannedTag {
  name: string;
  closing: boolean;
  opens: boolean;
}

/**
 * Walks an HTML string once, in linear time whatever the input (no backtracking regex: a page of 1 MB of `<`
 * or of unclosed `<script>` costs one pass): text runs go to `onText`, tags to `onTag` (return false to stop);
 * comments and the content of script/style/svg/noscript/template are skipped.
 */
function scanTags(html: string, onText: (text: string) => void, onTag: (tag: ScannedTag) => boolean | void): void {
  // Every search runs on one flat lower-case copy: searching a rope string (a page built by concatenation) from
  // optimized code can re-flatten it per call, which turns the linear scan quadratic.
  const lower = html.toLowerCase();
  let i = 0;
  while (i < lower.length) {
    const lt = lower.indexOf("<", i);
    if (lt < 0) return onText(html.slice(i));
    if (lt > i) onText(html.slice(i, lt));
    if (lower.startsWith("<!--", lt)) {
      const end = lower.indexOf("-->", lt + 4);
      if (end < 0) return;
      i = end + 3;
      continue;
    }
    const gt = lower.indexOf(">", lt + 1);
    if (gt < 0) return;
    const name = tagNameAt(lower, lt + 1, gt);
    i = gt + 1;
    if (!name) continue;
    const closing = lower.charCodeAt(lt + 1) === 47; // "/"
    const selfClosing = lower.charCodeAt(gt - 1) === 47;
    if (!closing && SKIPPED_ELEMENTS.has(name) && !selfClosing) {
      const close = lower.indexOf(`</${name}`, i);
      if (close < 0) return;
      i = close;
      continue;
    }
    if (onTag({ name, closing, opens: !closing && !VOID_ELEMENTS.has(name) && !selfClosing }) === false) return;
  }
}

/** The tag name starting at `from` (after an optional `/`), or "" when the `<` opens no tag. */
function tagNameAt(lower: string, from: number, end: number): string {
  let start = from;
  if (lower.charCodeAt(start) === 47) start++;
  let stop = start;
  while (stop < end && stop - start < 32) {
    const c = lower.charCodeAt(stop);
    const letter = c >= 97 && c <= 122;
    if (!(letter || (stop > start && ((c >= 48 && c <= 57) || c === 45)))) break;
    stop++;
  }
  return lower.slice(start, stop);
}

/** The deepest element nesting of an HTML string, by a linear tag scan (no DOM); stops counting at `limit`. */
export function nestingDepth(html: string, limit = MAX_NESTING_DEPTH + 1): number {
  let depth = 0;
  let max = 0;
  scanTags(html, () => {}, (tag) => {
    if (tag.closing) depth = Math.max(0, depth - 1);
    else if (tag.opens) max = Math.max(max, ++depth);
    return max < limit;
  });
  return max;
}

const ENTITIES: Record<string, string> = { amp: "&", lt: "<", gt: ">", quot: '"', apos: "'", nbsp: " " };
const BLOCK_TAGS = new Set(["p", "div", "br", "li", "tr", "h1", "h2", "h3", "h4", "h5", "h6", "section", "article", "table", "ul", "ol", "title"]);

/** The text of an HTML string without a DOM (linear time): scripts and styles dropped, tags removed, basic entities decoded. */
export function htmlToText(html: string): string {
  const parts: string[] = [];
  scanTags(html, (t) => parts.push(t), (tag) => {
    parts.push(BLOCK_TAGS.has(tag.name) ? "\n" : " ");
  });
  return parts
    .join("")
    .replace(/&(amp|lt|gt|quot|apos|nbsp);/g, (_, e: string) => ENTITIES[e])
    .replace(/[ \t\r\f\v]+/g, " ")
    .replace(/ ?\n[\n ]*/g, "\n")
    .trim();
}

let turndown: TurndownService | undefined;
function turndownService(): TurndownService {
  turndown ??= new TurndownService({ headingStyle: "atx", codeBlockStyle: "fenced", bulletListMarker: "-" });
  return turndown;
}

/** An extracted page: its title (may be empty) and its Markdown (uncapped). */
export interface ExtractedArticle {
  title: string;
  markdown: string;
}

/**
 * Picks the readable article out of an HTML page and writes it as Markdown. Falls back to the whole body when
 * Readability finds no article, and to plain text ({@link htmlToText}) for pages nested deeper than
 * {@link MAX_NESTING_DEPTH} or larger than {@link MAX_DOM_CHARS}.
 * @param url the page's URL (resolves relative links in the output).
 */
export function htmlToMarkdown(html: string, url?: string): ExtractedArticle {
  if (html.length > MAX_DOM_CHARS || nestingDepth(html) > MAX_NESTING_DEPTH) {
    const at = html.slice(0, 65536).toLowerCase().indexOf("<title");
    const title = at < 0 ? "" : htmlToText(html.slice(at, at + 400)).split("\n")[0].trim();
    return { title, markdown: htmlToText(html) };
  }
  const { document } = parseHTML(html);
  if (url) {
    try {
      const base = document.createElement("base");
      base.setAttribute("href", url);
      document.head?.prepend(base);
    } catch {
      // A page without a head keeps its links as written.
    }
  }
  const pageTitle = document.title?.trim() ?? "";
  const article = new Readability(document as unknown as Document, { charThreshold: 200 }).parse();
  const content = article?.content ?? document.body?.innerHTML ?? html;
  // Only the first MAX_MARKDOWN_CHARS reach the model: convert a prefix (the HTML parser closes what the cut
  // leaves open), and the whole article only when the prefix was too short.
  let markdown = turndownService().turndown(content.slice(0, TURNDOWN_PREFIX_CHARS)).trim();
  if (content.length > TURNDOWN_PREFIX_CHARS && markdown.length <= MAX_MARKDOWN_CHARS) markdown = turndownService().turndown(content).trim();
  return { title: (article?.title ?? pageTitle ?? "").trim(), markdown };
}

/**
 * Formats an article for the model as upstream's `Article.to_markdown()` does (`# <title>` then the body) and
 * caps it at {@link MAX_MARKDOWN_CHARS}, appending a note with the full length when cut.
 */
export function formatArticle(article: ExtractedArticle, maxChars = MAX_MARKDOWN_CHARS): string {
  const full = `${article.title ? `# ${article.title}\n\n` : ""}${article.markdown}`.trim() || "No content available";
  if (full.length <= maxChars) return full;
  return `${full.slice(0, maxChars)}\n\n[Truncated: only the first ${maxChars} characters of the page's Markdown are shown.]`;
}

/** True when a body labelled as text is binary: a NUL byte, or many control bytes, in its first 8 KiB. */
export function looksBinary(body: Buffer): boolean {
  const head = body.subarray(0, 8192);
  let control = 0;
  for (const byte of head) {
    if (byte === 0) return true;
    if (byte < 9 || (byte > 13 && byte < 32)) control++;
  }
  return head.length > 0 && control / head.length > 0.1;
}

/** Decodes a text body with the charset of its `content-type` (UTF-8 when absent or unknown). */
export function decodeText(body: Buffer, contentType: string | null): string {
  const charset = /charset=["']?([\w-]+)/i.exec(contentType ?? "")?.[1];
  try {
    return new TextDecoder(charset ?? "utf-8").decode(body);
  } catch {
    return new TextDecoder("utf-8").decode(body);
  }
}
