// The browser walk-through of `npm run e2e:web`, first part: the signed-in admin chats, uploads, regenerates,
// branches, edits an artifact, stops a run and opens every Settings tab; then the feature steps
// (scenario-features.ts) and a second user signing in with SSO (scenario-sso.ts).
import path from "node:path";
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import type { Browser, ElementHandle, Page } from "puppeteer-core";
import { COMPOSER as composer, count, errorToasts, fill, open, send, waitIdle, waitText, Walk, type ScenarioResult } from "./walk.js";
import { createEverMinuteTask, checkScheduledTask, runFeatureSteps } from "./scenario-features.js";
import { runSecondUser, type SsoSetup } from "./scenario-sso.js";

export type { ScenarioResult, StepResult } from "./walk.js";

/**
 * Drives the whole walk-through: signs in as `account` (when auth is on), runs every step, then (with `sso`) a
 * second user signs in through the IdP and must see none of the first user's threads or tasks.
 * @returns the steps, the problems seen (unexpected >= 400 responses, console and page errors) and screenshots.
 */
export async function runScenario(browser: Browser, baseUrl: string, shotsDir: string, workDir: string, account: { email: string; password: string } | null, sso: SsoSetup | null = null): Promise<ScenarioResult> {
  const walk = new Walk(baseUrl, shotsDir);
  const page = await walk.newPage(browser.defaultBrowserContext(), "admin");
  const step = (name: string, fn: (p: Page) => Promise<void>) => walk.step(page, name, fn);
  const snap = (name: string) => walk.snap(page, name);
  let threadUrl = "";

  if (account) {
    const signedIn = await step("sign in", async (p) => {
      await open(p, `${baseUrl}/workspace/chats/new`);
      await p.waitForSelector('input[type="email"]', { visible: true, timeout: 30_000 });
      await fill(p, 'input[type="email"]', account.email);
      await fill(p, 'input[type="password"]', account.password);
      // Both again: the first may have been typed before hydration and reset with the second.
      await fill(p, 'input[type="email"]', account.email);
      await p.click('button[type="submit"]');
      await p.waitForFunction(() => location.pathname.startsWith("/workspace"), { timeout: 30_000 });
    });
    // Every later step needs the session: stop here rather than time out in each.
    if (!signedIn) return walk.result;
  }

  // Created first so its every-minute firings happen while the other steps run.
  const task = await createEverMinuteTask(walk, page);

  await step("new chat with an attached file, reply streamed", async (p) => {
    await open(p, `${baseUrl}/workspace/chats/new`);
    const input = await p.waitForSelector("input[type=file]", { timeout: 30_000 });
    const file = path.join(workDir, "notes.txt");
    writeFileSync(file, "The launch is on Friday.\n");
    await (input as ElementHandle<HTMLInputElement>).uploadFile(file);
    await waitText(p, "notes.txt");
    await send(p, "Please summarise the attached notes for the whole team in a few short sentences today");
    // Streamed: the answer is seen part-way before it is complete.
    // The user's text shows once; the echo shows it a second time only when the answer is complete.
    const partial = await p.waitForFunction(() => {
      const text = document.body.innerText;
      return text.includes("You said:") && text.split("sentences today").length === 2 ? text.slice(text.indexOf("You said:"), text.indexOf("You said:") + 80) : false;
    }, { timeout: 30_000, polling: 20 });
    if (!(await partial.jsonValue())) throw new Error("no partial answer seen");
    await p.waitForFunction(() => document.body.innerText.split("sentences today").length === 3, { timeout: 30_000 });
    await p.waitForFunction(() => location.pathname.startsWith("/workspace/chats/") && !location.pathname.endsWith("/new"), { timeout: 15_000 });
    threadUrl = p.url();
  });

  await step("reopen the thread without an error toast", async (p) => {
    await open(p, threadUrl);
    await waitText(p, "sentences today");
    await waitText(p, "notes.txt");
    const toasts = await errorToasts(p);
    if (toasts.length) throw new Error(`error toast: ${toasts.join(" | ")}`);
  });
  /** Hovers the newest assistant turn and clicks its action button named `label`. */
  const turnAction = async (p: Page, label: string) => {
    const turns = await p.$$("[data-assistant-turn]");
    const last = turns.at(-1);
    if (!last) throw new Error("no assistant turn");
    await last.hover();
    const button = await last.waitForSelector(`button[aria-label="${label}"]:not([disabled])`, { timeout: 10_000 });
    await button!.click();
  };

  await step("regenerate the answer", async (p) => {
    const prepared = p.waitForResponse((r) => r.url().includes("/runs/regenerate/prepare") && r.request().method() === "POST", { timeout: 15_000 });
    prepared.catch(() => undefined); // awaited below; a step that fails first must not leave it unhandled
    await turnAction(p, "Regenerate");
    if ((await prepared).status() !== 200) throw new Error(`prepare answered ${(await prepared).status()}`);
    await new Promise((r) => setTimeout(r, 500));
    await waitIdle(p);
    await p.waitForFunction(() => document.body.innerText.split("sentences today").length === 3, { timeout: 30_000 });
    if ((await p.$$("[data-assistant-turn]")).length !== 1) throw new Error("the regenerated answer did not replace the old one");
  });

  await step("branch the conversation", async (p) => {
    const before = p.url();
    await turnAction(p, "Branch conversation");
    await waitText(p, "Conversation branch created", 15_000);
    await p.waitForFunction((u) => location.href !== u, { timeout: 15_000 }, before).catch(() => undefined);
    await waitText(p, "sentences today");
  });

  let artifactThread = "";
  await step("edit and save an artifact", async (p) => {
    await open(p, `${baseUrl}/workspace/chats/new`);
    await send(p, '!call write_file {"description":"report","path":"/mnt/user-data/outputs/report.md","content":"# Report\\n\\nDraft line\\n"}');
    await waitText(p, "Tool write_file returned", 30_000);
    await waitIdle(p);
    await send(p, '!call present_files {"filepaths":["/mnt/user-data/outputs/report.md"]}');
    await waitText(p, "Tool present_files returned", 30_000);
    await waitIdle(p);
    artifactThread = new URL(p.url()).pathname.split("/").pop() ?? "";
    // The presented file's card ("report.md", "Markdown file") opens the artifacts panel.
    const card = await p.waitForSelector("::-p-text(Markdown file)", { timeout: 15_000 });
    await card!.click();
    await p.waitForSelector("#artifacts ::-p-text(Draft line)", { timeout: 15_000 });
    const edit = await p.waitForSelector('#artifacts ::-p-aria(Edit)', { timeout: 10_000 });
    await edit!.click();
    const editor = await p.waitForSelector("#artifacts .cm-content[contenteditable=true]", { timeout: 10_000 });
    await editor!.click();
    await p.keyboard.down("Control");
    await p.keyboard.press("End");
    await p.keyboard.up("Control");
    await p.keyboard.type("Edited in the browser");
    const saved = p.waitForResponse((r) => r.url().includes("/artifacts/") && r.request().method() === "PUT", { timeout: 15_000 });
    saved.catch(() => undefined); // awaited below; a step that fails first must not leave it unhandled
    const save = await p.waitForSelector('#artifacts ::-p-aria(Save)', { timeout: 10_000 });
    await save!.click();
    const res = await saved;
    if (res.status() !== 200) throw new Error(`save answered ${res.status()}`);
    await waitText(p, "Artifact saved", 10_000);
    // Files live under the signed-in user's directory.
    const usersDir = path.join(workDir, ".deer-flow", "users");
    const owner = readdirSync(usersDir).find((u) => existsSync(path.join(usersDir, u, "threads", artifactThread)));
    if (!owner) throw new Error(`no directory for thread ${artifactThread}`);
    const file = path.join(usersDir, owner, "threads", artifactThread, "user-data", "outputs", "report.md");
    const text = readFileSync(file, "utf8");
    if (!text.includes("Edited in the browser") || !text.includes("Draft line")) throw new Error(`file not saved: ${JSON.stringify(text)}`);
  });

  await step("stop a run", async (p) => {
    await open(p, `${baseUrl}/workspace/chats/new`);
    const words = Array.from({ length: 120 }, (_, i) => `word${i}`).join(" ");
    await send(p, `${words} final-word`);
    await p.waitForFunction(() => document.body.innerText.includes("You said: word0"), { timeout: 30_000, polling: 20 });
    const stop = await p.waitForSelector('button[aria-label="Submit"]', { timeout: 5_000 });
    await stop!.click();
    await waitIdle(p, 15_000);
    await new Promise((r) => setTimeout(r, 1_500));
    if ((await count(p, "final-word")) !== 1) throw new Error("the run was not stopped: the whole answer arrived");
  });

  await step("every Settings tab", async (p) => {
    await open(p, `${baseUrl}/workspace/chats/new`);
    // The sidebar's footer menu ("Settings and more"; a gear icon when the sidebar is collapsed).
    const menu = await p.waitForSelector("[data-sidebar=footer] [data-sidebar=menu-button]", { timeout: 15_000 });
    await menu!.click();
    const item = await p.waitForSelector("[role=menuitem] ::-p-text(Settings)", { timeout: 10_000 });
    await item!.click();
    await p.waitForSelector("[role=dialog] nav", { timeout: 10_000 });
    for (const tab of ["Account", "Appearance", "Notification", "Channels", "Integrations", "Memory", "Tools", "Skills", "About"]) {
      const button = await p.waitForSelector(`[role=dialog] nav ::-p-text(${tab})`, { timeout: 10_000 });
      await button!.click();
      await new Promise((r) => setTimeout(r, 800));
      await snap(`settings-${tab.toLowerCase()}`);
      const toasts = await errorToasts(p);
      if (toasts.length) throw new Error(`${tab}: error toast: ${toasts.join(" | ")}`);
    }
  });

  await step("polish a draft", async (p) => {
    await open(p, `${baseUrl}/workspace/chats/new`);
    await p.waitForSelector(composer, { visible: true, timeout: 30_000 });
    await p.type(composer, "make report better");
    const polished = p.waitForResponse((r) => r.url().endsWith("/api/input-polish") && r.request().method() === "POST", { timeout: 15_000 });
    polished.catch(() => undefined); // awaited below; a step that fails first must not leave it unhandled
    const button = await p.waitForSelector('[data-testid="polish-input-button"]:not([disabled])', { timeout: 10_000 });
    await button!.click();
    if ((await polished).status() !== 200) throw new Error(`input-polish answered ${(await polished).status()}`);
    // The offline model's rewrite replaces the draft.
    await p.waitForFunction((sel) => ((document.querySelector(sel) as HTMLTextAreaElement | null)?.value ?? "").startsWith("You said:"), { timeout: 15_000 }, composer);
  });

  await step("chats list and scheduled tasks pages", async (p) => {
    await open(p, `${baseUrl}/workspace/chats`);
    // Thread titles come from the first message (the offline model has no title model).
    await waitText(p, "Please summarise the attached");
    await open(p, `${baseUrl}/workspace/scheduled-tasks`);
    await new Promise((r) => setTimeout(r, 1_000));
    const toasts = await errorToasts(p);
    if (toasts.length) throw new Error(`error toast: ${toasts.join(" | ")}`);
  });

  await step("agents gallery", async (p) => {
    await open(p, `${baseUrl}/workspace/agents`);
    await p.waitForFunction(() => !document.body.innerText.includes("Loading..."), { timeout: 20_000 });
  });

  await runFeatureSteps(walk, page, artifactThread);
  if (sso) await runSecondUser(walk, browser, sso, { adminThreadTitle: "Please summarise the attached", adminTaskTitle: task.title });
  await checkScheduledTask(walk, page, task);

  for (const url of walk.external) console.log(`[e2e] note: external resource unreachable offline: ${url}`);
  return walk.result;
}
