// The pieces every part of the browser walk-through shares: a page watched for unexpected responses and console
// errors, named steps that record pass/fail and take a screenshot, and the few interactions with the app's composer.
import path from "node:path";
import type { BrowserContext, Page } from "puppeteer-core";

/** Outcome of one step. */
export interface StepResult {
  name: string;
  ok: boolean;
  error?: string;
}

/** Everything the run saw. */
export interface ScenarioResult {
  steps: StepResult[];
  /** Unexpected responses >= 400, console errors, page errors. */
  problems: string[];
  screenshots: string[];
}

/** Responses >= 400 the app asks for on purpose and handles (method, path regexp, status). */
const EXPECTED_FAILURES: { method?: string; path: RegExp; status: number }[] = [
  // The login page asks who is signed in before anyone is.
  { method: "GET", path: /^\/api\/v1\/auth\/me$/, status: 401 },
  // The Scheduled tasks page refetches the selected task's runs once more right after Delete.
  { method: "GET", path: /^\/api\/scheduled-tasks\/[^/]+\/runs$/, status: 404 },
];

/** Marks the walk's own API calls from a page, so their expected 4xx are not reported as the app's problems. */
const PROBE_HEADER = "x-e2e-probe";

/** A run of named steps over pages of one browser; results accumulate across pages and users. */
export class Walk {
  readonly result: ScenarioResult = { steps: [], problems: [], screenshots: [] };
  /** Other hosts' resources the offline machine could not load (noted, not failures). */
  readonly external = new Set<string>();
  private shot = 0;

  constructor(readonly baseUrl: string, readonly shotsDir: string) {}

  /** Opens a page in `context` that records unexpected responses, console errors and page errors as problems. */
  async newPage(context: BrowserContext, label: string): Promise<Page> {
    const page = await context.newPage();
    const problems = this.result.problems;
    page.on("response", (res) => {
      const url = new URL(res.url());
      if (res.status() < 400 || url.origin !== this.baseUrl) return;
      const method = res.request().method();
      // The walk's own API probes (`api()`) check their statuses themselves.
      if (res.request().headers()[PROBE_HEADER]) return;
      if (EXPECTED_FAILURES.some((e) => e.status === res.status() && e.path.test(url.pathname) && (!e.method || e.method === method))) return;
      problems.push(`[${label}] ${method} ${url.pathname}${url.search} -> ${res.status()}`);
    });
    page.on("console", (msg) => {
      if (msg.type() !== "error") return;
      // This machine has no internet: resources the app loads from other hosts (fonts, images) cannot resolve.
      // Those are noted, not failures; anything from the app's own origin is.
      const source = msg.location()?.url ?? "";
      if (source && !source.startsWith(this.baseUrl) && /net::ERR_/.test(msg.text())) {
        this.external.add(source);
        return;
      }
      // A failed request is already reported (or expected) by the response handler above.
      if (/^Failed to load resource: the server responded with a status of/.test(msg.text()) && source.startsWith(this.baseUrl)) return;
      problems.push(`[${label}] console error: ${msg.text().slice(0, 400)}${source ? ` (${source})` : ""}`);
    });
    page.on("pageerror", (err) => problems.push(`[${label}] page error: ${String((err as Error).message ?? err).slice(0, 400)}`));
    return page;
  }

  /** Saves a screenshot of `page` named `<n>-<name>.png`. */
  async snap(page: Page, name: string): Promise<void> {
    const file = path.join(this.shotsDir, `${String(++this.shot).padStart(2, "0")}-${name.replace(/[^a-z0-9]+/gi, "-").toLowerCase()}.png`);
    await page.screenshot({ path: file as `${string}.png`, fullPage: false });
    this.result.screenshots.push(file);
  }

  /** Runs one named step on `page`: a thrown error fails the step (first line kept); a screenshot either way. */
  async step(page: Page, name: string, fn: (p: Page) => Promise<void>): Promise<boolean> {
    let ok = true;
    try {
      // A page behind another (the second user's, a popup) gets no animation frames: the waits that poll on
      // them (waitForFunction's default) would never look again.
      await page.bringToFront();
      await fn(page);
      this.result.steps.push({ name, ok });
    } catch (err) {
      ok = false;
      this.result.steps.push({ name, ok, error: (err as Error).message.split("\n")[0] });
    }
    await this.snap(page, name).catch(() => undefined);
    return ok;
  }
}

/** The composer's text area. */
export const COMPOSER = "textarea";

/** Waits until `text` is shown somewhere in the page (default 30 s). */
export const waitText = (p: Page, text: string, timeout = 30_000) =>
  p.waitForFunction((t) => document.body.innerText.includes(t), { timeout, polling: 200 }, text);

/** How many times `text` occurs in the page's visible text. */
export const count = (p: Page, text: string) => p.evaluate((t) => document.body.innerText.split(t).length - 1, text);

/** Types `text` into the composer and sends it with Enter. */
export async function send(p: Page, text: string): Promise<void> {
  await p.waitForSelector(COMPOSER, { visible: true, timeout: 30_000 });
  await p.click(COMPOSER);
  // The app keeps an unsent draft per new chat (localStorage): start from an empty composer.
  await p.keyboard.down("Control");
  await p.keyboard.press("a");
  await p.keyboard.up("Control");
  await p.keyboard.press("Backspace");
  await p.type(COMPOSER, text);
  await p.keyboard.press("Enter");
}

/**
 * Types `value` into the input `selector` until it holds it: a page that is still hydrating resets what was typed
 * before React took over its inputs (seen on a loaded machine).
 */
export async function fill(p: Page, selector: string, value: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const el = await p.waitForSelector(selector, { visible: true, timeout: timeoutMs });
    await el!.click({ count: 3 });
    await p.keyboard.press("Backspace");
    await el!.type(value);
    await new Promise((r) => setTimeout(r, 300));
    if ((await p.$eval(selector, (e) => (e as HTMLInputElement).value)) === value) return;
    if (Date.now() > deadline) throw new Error(`${selector} does not keep what is typed into it`);
  }
}

/** The texts of the error toasts on screen. */
export const errorToasts = (p: Page) =>
  p.evaluate(() => [...document.querySelectorAll("[data-sonner-toast][data-type=error]")].map((t) => (t as HTMLElement).innerText));

/** Fails when an error toast is on screen. */
export async function noErrorToast(p: Page, where = ""): Promise<void> {
  const toasts = await errorToasts(p);
  if (toasts.length) throw new Error(`${where ? `${where}: ` : ""}error toast: ${toasts.join(" | ")}`);
}

/** Waits until no run is streaming (the composer's Submit button is not in its stop state). */
export const waitIdle = (p: Page, timeout = 30_000) =>
  p.waitForFunction(() => !document.querySelector('button[aria-label="Submit"] svg.lucide-square') && !document.querySelector('button[aria-label="Submit"] svg.animate-spin'), { timeout, polling: 100 });

/**
 * Opens `url` of the app: waits for the page's load event, then (up to 10 s) for the network to settle. A page whose
 * requests never settle (an offline machine: other hosts' fonts can hang) is used anyway; the steps wait for what
 * they need, and the requests still pending are printed once.
 */
export async function open(p: Page, url: string): Promise<void> {
  const pending = new Set<string>();
  const add = (r: { url(): string }) => pending.add(r.url());
  const done = (r: { url(): string }) => pending.delete(r.url());
  p.on("request", add);
  p.on("requestfinished", done);
  p.on("requestfailed", done);
  try {
    await p.goto(url, { waitUntil: "load", timeout: 60_000 });
    await p.waitForNetworkIdle({ idleTime: 500, concurrency: 2, timeout: 10_000 }).catch(() => {
      const urls = [...pending].filter((u) => !noted.has(u));
      for (const u of urls) noted.add(u);
      if (urls.length) console.log(`[e2e] note: requests still pending 10 s after load of ${new URL(url).pathname}: ${urls.slice(0, 5).join(", ")}`);
    });
  } finally {
    p.off("request", add);
    p.off("requestfinished", done);
    p.off("requestfailed", done);
  }
}
const noted = new Set<string>();

/** Calls the gateway from the page (its cookies, its CSRF header as the app sends it); resolves to status and JSON. */
export async function api(p: Page, method: string, url: string, body?: unknown): Promise<{ status: number; json: any }> {
  return p.evaluate(async (m, u, b) => {
    const csrf = document.cookie.split("; ").find((c) => c.startsWith("csrf_token="))?.slice("csrf_token=".length);
    const headers: Record<string, string> = { "content-type": "application/json", "x-e2e-probe": "1" };
    if (csrf) headers["x-csrf-token"] = decodeURIComponent(csrf);
    const res = await fetch(u, { method: m, headers, credentials: "include", body: b === undefined ? undefined : JSON.stringify(b) });
    const text = await res.text();
    let json: unknown = text;
    try {
      json = JSON.parse(text);
    } catch {
      // not JSON: the text is the answer
    }
    return { status: res.status, json };
  }, method, url, body as never);
}

/** The thread id of the chat page `p` shows. */
export const threadIdOf = (p: Page) => new URL(p.url()).pathname.split("/").pop() ?? "";

/** Waits until the page shows a saved chat (its URL names a thread, not `/new`). */
export const waitThreadUrl = (p: Page) =>
  p.waitForFunction(() => location.pathname.startsWith("/workspace/chats/") && !location.pathname.endsWith("/new"), { timeout: 20_000 });
