// The gateway's own web fetcher (`use: deerflow-gateway/web:web_fetch_tool`), needing no third party: a GET
// through the SSRF-guarded client (redirects followed by hand, each hop re-checked, 5 MB cap, the tool's timeout),
// then by content type: HTML to the shared extractor, PDF and office files through the document converter the
// uploads use, text as is; anything else (images, archives, binaries) is refused with a clear error.
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { ConversionError, convertToMarkdown, DEFAULT_CONVERSION_LIMITS } from "../../sandbox/convert-document.js";
import { decodeText, looksBinary } from "../extract.js";
import { guardedFetch } from "../ssrf-guard.js";
import type { FetchedPage, WebFetchProvider } from "../types.js";
import { WebToolError } from "../web-error.js";

/** Document types converted to Markdown, by MIME type, with the extension the converter dispatches on. */
const DOCUMENT_TYPES: Record<string, string> = {
  "application/pdf": ".pdf",
  "application/vnd.openxmlformats-officedocument.wordprocessingml.document": ".docx",
  "application/vnd.openxmlformats-officedocument.presentationml.presentation": ".pptx",
  "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": ".xlsx",
};
const TEXT_TYPES = /^(text\/|application\/(json|xml|ld\+json|rss\+xml|atom\+xml|javascript|x-yaml|yaml|markdown))/;

/** Converts a fetched document with the uploads' converter, through a private temp file removed afterwards. */
async function convertDocument(body: Buffer, ext: string): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), "deerflow-web-"));
  try {
    const file = path.join(dir, `page${ext}`);
    await writeFile(file, body, { mode: 0o600 });
    return await convertToMarkdown(file, { ...DEFAULT_CONVERSION_LIMITS, maxPages: 50 }, ext);
  } catch (err) {
    if (err instanceof ConversionError) throw new WebToolError("bad_response", `the ${ext.slice(1).toUpperCase()} file could not be read: ${err.message}`);
    throw new WebToolError("bad_response", `the ${ext.slice(1).toUpperCase()} file could not be converted`);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** Shapes a fetched body by content type. @throws WebToolError `unsupported` / `bad_response`. */
export async function pageFromBody(url: string, body: Buffer, contentType: string | null): Promise<FetchedPage> {
  const mime = (contentType ?? "").split(";")[0].trim().toLowerCase();
  const docExt = DOCUMENT_TYPES[mime] ?? (mime === "application/octet-stream" && /\.(pdf|docx|pptx|xlsx)$/i.exec(new URL(url).pathname)?.[0]?.toLowerCase());
  if (docExt) return { url, markdown: await convertDocument(body, docExt) };
  const isHtml = mime === "text/html" || mime === "application/xhtml+xml" || (!mime && /^\s*<(!doctype|html)/i.test(body.subarray(0, 256).toString("latin1")));
  if (isHtml || TEXT_TYPES.test(mime) || !mime) {
    if (looksBinary(body)) throw new WebToolError("bad_response", `the response is labelled ${mime || "without a type"} but holds binary data`);
    const text = decodeText(body, contentType);
    return isHtml ? { url, html: text } : { url, markdown: text };
  }
  throw new WebToolError("unsupported", `content type ${mime} is not supported (HTML, text, PDF and office documents are)`);
}

/** The direct fetcher. `allow_private_addresses` on its entry lets it reach private hosts (every hop still checked). */
export const directFetch: WebFetchProvider = {
  name: "direct",
  async fetchPage(url, ctx) {
    const res = await guardedFetch(url, { signal: ctx.signal, allowPrivateAddresses: ctx.entry.allow_private_addresses === true });
    return pageFromBody(res.url, res.body, res.headers.get("content-type"));
  },
};
