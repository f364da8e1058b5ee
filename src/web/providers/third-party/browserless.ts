// Browserless (headless Chrome as a service): DeerFlow community/browserless/. Plain fetch against the documented
// REST API (POST /content for rendered HTML, POST /screenshot for an image; `?token=` auth): the browserless npm
// packages are the server itself or Puppeteer wrappers over a WebSocket, not a client of these endpoints.
import {
  baseUrl,
  CANCELLED,
  entryBool,
  entryInt,
  entrySeconds,
  entryString,
  optionalKey,
  readBody,
  sendProviderRequest,
  WebProviderError,
  type KeySource,
  type ProviderRequest,
} from "../../provider-http.js";
import type { CapturedImage, CaptureProvider, FetchedPage, ProviderCallContext, WebFetchProvider } from "../../types.js";

const PROVIDER = "Browserless";
/** Optional for a self-hosted instance, required by Browserless Cloud. */
const KEY: KeySource = { provider: PROVIDER, key: "token", env: "BROWSERLESS_TOKEN" };
/** Upstream's default instance address. */
export const BROWSERLESS_BASE_URL = "http://localhost:3032";
/** Screenshot formats and their MIME types. */
const FORMATS: Record<string, string> = { png: "image/png", jpeg: "image/jpeg", webp: "image/webp" };

/** The endpoint URL with the token as a query parameter (Browserless's documented auth), and the request options. */
function endpoint(ctx: ProviderCallContext, path: string, json: Record<string, unknown>): { url: string; req: ProviderRequest } {
  const token = optionalKey(ctx, KEY);
  const query = token ? `?${new URLSearchParams({ token })}` : "";
  // `timeout_s` is Browserless's documented key; `timeout` (the sibling providers' key) is accepted too.
  const timeoutS = entrySeconds(ctx, ["timeout_s", "timeout"], 30);
  return { url: `${baseUrl(ctx, PROVIDER, BROWSERLESS_BASE_URL)}${path}${query}`, req: { provider: PROVIDER, json, timeoutS, secrets: [token], headers: { "cache-control": "no-cache" } } };
}

/** Upstream's wait options, shared by both endpoints. */
function waits(ctx: ProviderCallContext, body: Record<string, unknown>): Record<string, unknown> {
  const selector = entryString(ctx, "wait_for_selector");
  if (selector) body.waitForSelector = { selector, timeout: entryInt(ctx, "wait_for_selector_timeout_ms", 5000) };
  const waitMs = entryInt(ctx, "wait_for_timeout_ms", 0);
  if (waitMs > 0) body.waitForTimeout = waitMs;
  return body;
}

/** The target page's own status, when Browserless says it was not 2xx/3xx (it answers 200 for the render itself). */
function targetWarning(res: Response): string {
  const code = (res.headers.get("x-response-code") ?? "").trim();
  if (!code || /^[23]/.test(code)) return "";
  return `${code} ${(res.headers.get("x-response-status") ?? "").trim()}`.trim();
}

/**
 * `web_fetch` via Browserless `/content`: the rendered HTML for the shared extractor. Entry keys: `base_url`,
 * `token`, `timeout_s` (30), `wait_for_event`, `wait_for_timeout_ms`, `wait_for_selector`. When the target page
 * answered 4xx/5xx, the title says so (upstream appends the same warning).
 */
export const browserlessFetch: WebFetchProvider = {
  name: "browserless",
  async fetchPage(url, ctx): Promise<FetchedPage> {
    const body = waits(ctx, { url });
    const event = entryString(ctx, "wait_for_event");
    if (event) body.waitForEvent = { event };
    const { url: endpointUrl, req } = endpoint(ctx, "/content", body);
    const res = await sendProviderRequest(ctx, endpointUrl, { ...req, headers: { ...req.headers, accept: "text/html" } });
    const html = await readBody(res, req, ctx);
    if (!html.trim()) throw new WebProviderError(PROVIDER, "returned an empty page");
    const warning = targetWarning(res);
    return { url: res.headers.get("x-response-url") || url, html, ...(warning ? { title: `(warning: target page responded ${warning})` } : {}) };
  },
};

/**
 * `web_capture` via Browserless `/screenshot`. Entry keys as upstream: `output_format` (png | jpeg | webp, png),
 * `full_page` (true), `viewport_width` (1280), `viewport_height` (720), `quality` (0-100, jpeg/webp only),
 * `wait_for_selector`, `wait_for_selector_timeout_ms` (5000), `wait_for_timeout_ms`, `best_attempt`. The tool
 * layer merges the model's overrides (`full_page`, `output_format`, `viewport_*`) into the entry it passes.
 * @throws WebProviderError for an unknown format, an empty body or a body that is not an image.
 */
export const browserlessCapture: CaptureProvider = {
  name: "browserless",
  async capture(url, ctx): Promise<CapturedImage> {
    const format = (entryString(ctx, "output_format") ?? "png").toLowerCase();
    const mimeType = FORMATS[format];
    if (!mimeType) throw new WebProviderError(PROVIDER, "output_format must be png, jpeg or webp", "invalid_input");
    const options: Record<string, unknown> = { fullPage: entryBool(ctx, "full_page", true), type: format };
    const quality = entryInt(ctx, "quality", -1);
    if (format !== "png" && quality >= 0 && quality <= 100) options.quality = quality;
    const body = waits(ctx, { url, options, viewport: { width: entryInt(ctx, "viewport_width", 1280), height: entryInt(ctx, "viewport_height", 720) } });
    if (entryBool(ctx, "best_attempt", false)) body.bestAttempt = true;
    const { url: endpointUrl, req } = endpoint(ctx, "/screenshot", body);
    const res = await sendProviderRequest(ctx, endpointUrl, { ...req, headers: { ...req.headers, accept: mimeType } });
    const bytes = await readBytes(res, req, ctx);
    if (bytes.length === 0) throw new WebProviderError(PROVIDER, "returned an empty screenshot");
    const type = (res.headers.get("content-type") ?? mimeType).split(";")[0]!.trim().toLowerCase();
    if (!type.startsWith("image/")) throw new WebProviderError(PROVIDER, `returned ${type || "no content type"} instead of an image`);
    return { bytes, mimeType: type };
  },
};

/** The body as bytes; a body cut off by the deadline or the tool's signal is reported as such. */
async function readBytes(res: Response, req: ProviderRequest, ctx: ProviderCallContext): Promise<Buffer> {
  try {
    return Buffer.from(await res.arrayBuffer());
  } catch {
    throw new WebProviderError(PROVIDER, ctx.signal.aborted ? CANCELLED : `request timed out after ${req.timeoutS}s`, "timeout");
  }
}
