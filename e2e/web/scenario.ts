// The browser walk-through of `npm run e2e:web`: each step drives the app like a user and checks what it shows.
import path from "node:path";
import type { Browser, Page } from "puppeteer-core";

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
const EXPECTED_FAILURES: { method?: string; path: RegExp; status: number }[] = [];

export async function runScenario(browser: Browser, baseUrl: string, shotsDir: string, _workDir: string): Promise<ScenarioResult> {
  const problems: string[] = [];
  const screenshots: string[] = [];
  const steps: StepResult[] = [];
  const page = await browser.newPage();
  page.on("response", (res) => {
    const url = new URL(res.url());
    if (res.status() < 400 || url.origin !== baseUrl) return;
    const method = res.request().method();
    if (EXPECTED_FAILURES.some((e) => e.status === res.status() && e.path.test(url.pathname) && (!e.method || e.method === method))) return;
    problems.push(`${method} ${url.pathname}${url.search} -> ${res.status()}`);
  });
  page.on("console", (msg) => {
    if (msg.type() === "error") problems.push(`console error: ${msg.text().slice(0, 400)}`);
  });
  page.on("pageerror", (err) => problems.push(`page error: ${String((err as Error).message ?? err).slice(0, 400)}`));

  let shot = 0;
  const snap = async (name: string) => {
    const file = path.join(shotsDir, `${String(++shot).padStart(2, "0")}-${name}.png`);
    await page.screenshot({ path: file as `${string}.png`, fullPage: false });
    screenshots.push(file);
  };
  const step = async (name: string, fn: (p: Page) => Promise<void>) => {
    try {
      await fn(page);
      steps.push({ name, ok: true });
    } catch (err) {
      steps.push({ name, ok: false, error: (err as Error).message.split("\n")[0] });
    }
    await snap(name.replace(/[^a-z0-9]+/gi, "-").toLowerCase()).catch(() => undefined);
  };

  await step("open a new chat", async (p) => {
    await p.goto(`${baseUrl}/workspace/chats/new`, { waitUntil: "networkidle2", timeout: 60_000 });
    await p.waitForSelector("textarea", { timeout: 30_000 });
  });
  return { steps, problems, screenshots };
}
