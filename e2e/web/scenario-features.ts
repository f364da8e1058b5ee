// The browser walk-through, feature part (issue 47's "how it will be checked"): a scheduled task made in the
// Scheduled tasks page that fires every minute (its runs appear, once each; trigger, pause, resume, delete), the
// workspace-changes panel after the agent wrote a file, a `/goal` that continues twice and stops, a subtask's steps
// after a reload (Ultra mode), and a `.skill` the agent packed, installed from its artifact card and used with `/name`.
import type { Page } from "puppeteer-core";
import { api, COMPOSER, count, fill, noErrorToast, open, send, threadIdOf, waitIdle, waitText, waitThreadUrl, type Walk } from "./walk.js";

/** The task the walk creates, by title; `id` once the page created it. */
export interface E2eTask {
  title: string;
  id: string | null;
}

/** Clicks the first element matching the puppeteer `selector` (e.g. `::-p-text(Create)`), waiting for it. */
async function click(p: Page, selector: string, timeout = 10_000): Promise<void> {
  const el = await p.waitForSelector(selector, { visible: true, timeout });
  await el!.click();
}

/**
 * Clicks the button whose visible text is exactly `text` (not one that merely contains it) inside `scope` (a CSS
 * selector; default the page), waiting for it.
 */
async function clickButton(p: Page, scope: string, text: string, timeout = 10_000): Promise<void> {
  const handle = await p.waitForFunction((sc, t) => {
    const root = sc ? document.querySelector(sc) : document.body;
    return [...(root?.querySelectorAll("button") ?? [])].find((b) => b.textContent?.trim() === t && !(b as HTMLButtonElement).disabled) ?? false;
  }, { timeout, polling: 200 }, scope, text);
  await (handle as unknown as { click(): Promise<void> }).click();
}

/**
 * Creates, in the Scheduled tasks page, a task with the custom cron `* * * * *` (every minute, the gateway's
 * minimum interval) on a fresh thread per run. Done first so its firings happen while the other steps run.
 */
export async function createEverMinuteTask(walk: Walk, page: Page): Promise<E2eTask> {
  const task: E2eTask = { title: "E2E every minute", id: null };
  await walk.step(page, "scheduled task: create an every-minute task in the page", async (p) => {
    await open(p, `${walk.baseUrl}/workspace/scheduled-tasks`);
    await p.waitForSelector('[data-testid="scheduled-task-create-form"]', { timeout: 30_000 });
    await fill(p, 'input[placeholder="Task title"]', task.title);
    await fill(p, 'textarea[placeholder="Prompt"]', "Scheduled hello from the e2e run");
    await click(p, '[data-testid="schedule-preset"]');
    await click(p, '[role="option"] ::-p-text(Custom cron)');
    const cron = await p.waitForSelector('input[aria-label="Cron expression"]', { visible: true, timeout: 10_000 });
    await cron!.click({ count: 3 });
    await p.keyboard.press("Backspace");
    await cron!.type("* * * * *");
    const created = p.waitForResponse((r) => r.url().endsWith("/api/scheduled-tasks") && r.request().method() === "POST", { timeout: 15_000 });
    created.catch(() => undefined); // awaited below; a step that fails first must not leave it unhandled
    await clickButton(p, `[data-testid="scheduled-task-create-form"]`, "Create");
    const res = await created;
    if (res.status() !== 200 && res.status() !== 201) throw new Error(`create answered ${res.status()}: ${await res.text()}`);
    task.id = ((await res.json()) as { id: string }).id;
    await p.waitForSelector(`[data-testid="scheduled-task-item-${task.id}"]`, { timeout: 15_000 });
    // The page labels a cron task "Recurring".
    await waitText(p, "Recurring · Enabled", 10_000);
    await noErrorToast(p);
  });
  return task;
}

/** The task's run history as the page's API answers it. */
const runsOf = async (p: Page, id: string) => (await api(p, "GET", `/api/scheduled-tasks/${id}/runs`)).json as { id: string; trigger: string; status: string; scheduled_for: string | null; run_id: string | null }[];

/** Waits for the task's runs to satisfy `ok` (polling its API), up to `timeoutMs`. */
async function waitRuns(p: Page, id: string, ok: (runs: Awaited<ReturnType<typeof runsOf>>) => boolean, timeoutMs: number, what: string) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const runs = await runsOf(p, id);
    if (ok(runs)) return runs;
    if (Date.now() > deadline) throw new Error(`${what}: runs are ${JSON.stringify(runs.map((r) => [r.trigger, r.status, r.scheduled_for]))}`);
    await new Promise((r) => setTimeout(r, 1_000));
  }
}

/**
 * Back in the Scheduled tasks page: the every-minute firings have appeared (each due minute once), then trigger
 * now, pause, resume and delete from the task's buttons, each seen in the page.
 */
export async function checkScheduledTask(walk: Walk, page: Page, task: E2eTask): Promise<void> {
  const id = task.id;
  const selectTask = async (p: Page) => {
    await open(p, `${walk.baseUrl}/workspace/scheduled-tasks`);
    await click(p, `[data-testid="scheduled-task-item-${id}"]`, 15_000);
  };
  await walk.step(page, "scheduled task: its every-minute runs appear, once each", async (p) => {
    if (!id) throw new Error("the task was not created");
    // Two firings: the first full minute after creation, and the next (up to ~2 minutes after creation).
    const runs = await waitRuns(p, id, (rs) => rs.filter((r) => r.trigger === "scheduled" && r.status === "success").length >= 2, 150_000, "two scheduled runs");
    const due = runs.filter((r) => r.trigger === "scheduled").map((r) => r.scheduled_for);
    if (new Set(due).size !== due.length) throw new Error(`a due time fired twice: ${JSON.stringify(due)}`);
    if (due.some((d) => !d || new Date(d).getUTCSeconds() !== 0)) throw new Error(`due times are not whole minutes: ${JSON.stringify(due)}`);
    await selectTask(p);
    await p.waitForFunction(() => /\b[2-9] runs\b/.test(document.querySelector('[data-testid="scheduled-task-runs"]')?.textContent ?? ""), { polling: 200, timeout: 20_000 });
    await waitText(p, "scheduled · Success", 10_000);
  });
  await walk.step(page, "scheduled task: trigger now, pause, resume, delete from the page", async (p) => {
    if (!id) throw new Error("the task was not created");
    await selectTask(p);
    await clickButton(p, `[data-testid="scheduled-task-detail"]`, "Trigger now");
    await waitRuns(p, id, (rs) => rs.some((r) => r.trigger === "manual" && r.status === "success"), 30_000, "a manual run");
    await waitText(p, "manual · ", 20_000);
    await clickButton(p, `[data-testid="scheduled-task-detail"]`, "Pause");
    await p.waitForFunction((sel) => document.querySelector(sel)?.textContent?.includes("Recurring · Paused"), { polling: 200, timeout: 10_000 }, `[data-testid="scheduled-task-item-${id}"]`);
    await clickButton(p, `[data-testid="scheduled-task-detail"]`, "Resume");
    await p.waitForFunction((sel) => document.querySelector(sel)?.textContent?.includes("Recurring · Enabled"), { polling: 200, timeout: 10_000 }, `[data-testid="scheduled-task-item-${id}"]`);
    await clickButton(p, `[data-testid="scheduled-task-detail"]`, "Delete");
    await clickButton(p, `[role="dialog"]`, "Delete");
    await p.waitForFunction((sel) => !document.querySelector(sel), { polling: 200, timeout: 10_000 }, `[data-testid="scheduled-task-item-${id}"]`);
    if ((await api(p, "GET", `/api/scheduled-tasks/${id}`)).status !== 404) throw new Error("the deleted task still answers");
    await noErrorToast(p);
  });
}

/** Issue 47's chat features, as the signed-in admin. `artifactThread` is the thread where the agent wrote report.md. */
export async function runFeatureSteps(walk: Walk, page: Page, artifactThread: string): Promise<void> {
  let goalThread = "";
  await walk.step(page, "workspace changes panel after the agent wrote a file", async (p) => {
    if (!artifactThread) throw new Error("no thread from the artifact step");
    await open(p, `${walk.baseUrl}/workspace/chats/${artifactThread}`);
    await waitText(p, "Edited 1 file", 20_000);
    await click(p, "::-p-text(View changes)");
    await p.waitForSelector('[role="dialog"] ::-p-text(Workspace changes)', { timeout: 10_000 });
    await p.waitForSelector('[role="dialog"] ::-p-text(report.md)', { timeout: 10_000 });
    // The unified diff of the new file: its lines as additions.
    await p.waitForSelector('[role="dialog"] ::-p-text(Draft line)', { timeout: 10_000 });
    await p.keyboard.press("Escape");
  });

  await walk.step(page, "/goal from the composer: the run continues until no progress, then stops", async (p) => {
    await open(p, `${walk.baseUrl}/workspace/chats/new`);
    await send(p, "Start of the goal thread");
    await waitThreadUrl(p);
    await waitIdle(p);
    await waitText(p, "You said: Start of the goal thread");
    const thread = threadIdOf(p);
    await sendCommand(p, "/goal Write the final summary");
    await waitText(p, "Goal set.", 10_000);
    // The scripted evaluator finds no `GOAL MET`, so the run continues; once the echo repeats itself twice the
    // gateway stands down (upstream's max_no_progress_continuations: 2), after three continuations.
    await waitText(p, "Continuing 3/8", 60_000);
    await waitIdle(p, 60_000);
    const goal = await goalOf(p, thread);
    if (goal?.continuation_count !== 3 || goal?.last_evaluation?.stand_down_reason !== "no_progress_detected") throw new Error(`goal after the run: ${JSON.stringify(goal)}`);
    if ((await count(p, "Continuing 4/8")) !== 0) throw new Error("a fourth continuation was shown");
    goalThread = thread;
  });

  await walk.step(page, "a goal with max_continuations 2 continues twice and stops", async (p) => {
    if (!goalThread) throw new Error("no thread from the /goal step");
    // The composer's /goal takes only an objective; a limit is set as the API allows (0..8).
    const set = await api(p, "PUT", `/api/threads/${goalThread}/goal`, { objective: "Write the final summary twice", max_continuations: 2 });
    if (set.status !== 200) throw new Error(`PUT goal answered ${set.status}: ${JSON.stringify(set.json)}`);
    await open(p, `${walk.baseUrl}/workspace/chats/${goalThread}`);
    await send(p, "Keep going on the summary");
    await waitText(p, "Continuing 2/2", 60_000);
    await waitIdle(p, 60_000);
    const goal = await goalOf(p, goalThread);
    if (goal?.continuation_count !== 2 || goal?.last_evaluation?.stand_down_reason !== "max_continuations_reached") throw new Error(`goal after the run: ${JSON.stringify(goal)}`);
  });

  await walk.step(page, "subtask steps present after a reload (Ultra mode)", async (p) => {
    await open(p, `${walk.baseUrl}/workspace/chats/new`);
    await chooseMode(p, "Ultra");
    const child = `!call read_file ${JSON.stringify({ path: "/mnt/user-data/workspace/missing.txt", description: "peek" })}`;
    await send(p, `!call task ${JSON.stringify({ description: "Look for the missing file", prompt: child, subagent_type: "general-purpose" })}`);
    await waitThreadUrl(p);
    await waitText(p, "Tool task returned", 60_000);
    await waitIdle(p);
    await open(p, p.url());
    // On expand the card backfills its steps from the stored events (frontend core/tasks/api.ts fetchSubtaskSteps).
    const fetched = p.waitForResponse((r) => /\/runs\/[^/]+\/events\?/.test(r.url()) && r.url().includes("event_types=subagent.step"), { timeout: 20_000 });
    fetched.catch(() => undefined); // awaited below; a step that fails first must not leave it unhandled
    await expandSubtaskCard(p, "Look for the missing file");
    const res = await fetched;
    const steps = (await res.json()) as { content?: { kind?: string; tool_name?: string } }[];
    if (res.status() !== 200 || !steps.some((e) => e.content?.kind === "tool" && e.content.tool_name === "read_file")) throw new Error(`subtask steps answered ${res.status()}: ${JSON.stringify(steps).slice(0, 300)}`);
    // The expanded card shows the child's tool step by name.
    await p.waitForFunction((d) => {
      const toggle = [...document.querySelectorAll(".not-prose button")].find((b) => (b as HTMLElement).innerText.trim().startsWith(d));
      return [...(toggle?.closest(".not-prose")?.querySelectorAll("*") ?? [])].some((el) => el.children.length === 0 && el.textContent?.trim() === "read_file");
    }, { polling: 200, timeout: 15_000 }, "Look for the missing file");
  });

  await walk.step(page, "a .skill packed by the agent, installed from its artifact, used with /name", async (p) => {
    await open(p, `${walk.baseUrl}/workspace/chats/new`);
    const script = [
      "cd /mnt/user-data/workspace && mkdir -p e2e-greeter",
      "printf '%s\\n' '---' 'name: e2e-greeter' 'description: Greets the team in the e2e run' '---' '# Team greeter' 'Greet everyone by name.' > e2e-greeter/SKILL.md",
      "zip -qr /mnt/user-data/outputs/e2e-greeter.skill e2e-greeter && echo packed",
    ].join(" && ");
    await send(p, `!call bash ${JSON.stringify({ description: "pack the skill", command: script })}`);
    await waitThreadUrl(p);
    await waitText(p, "Tool bash returned", 60_000);
    await waitIdle(p);
    if (!(await p.evaluate(() => document.body.innerText.includes("packed")))) throw new Error("bash did not pack the skill");
    await send(p, '!call present_files {"filepaths":["/mnt/user-data/outputs/e2e-greeter.skill"]}');
    await waitText(p, "Tool present_files returned", 30_000);
    await waitIdle(p);
    const installed = p.waitForResponse((r) => r.url().endsWith("/api/skills/install") && r.request().method() === "POST", { timeout: 15_000 });
    installed.catch(() => undefined); // awaited below; a step that fails first must not leave it unhandled
    await clickButton(p, "", "Install", 15_000);
    const res = await installed;
    if (res.status() !== 200) throw new Error(`install answered ${res.status()}: ${await res.text()}`);
    await noErrorToast(p);
    await open(p, `${walk.baseUrl}/workspace/chats/new`);
    await sendCommand(p, "/e2e-greeter say hello to the team");
    await waitText(p, "Following the e2e-greeter skill (Team greeter): say hello to the team", 30_000);
  });
}

/**
 * Expands the subtask card titled `description`: clicks its toggle, the card's header button (the user's message
 * that asked for the task holds the same words, so a click by text alone can land there and leave the card shut).
 */
async function expandSubtaskCard(p: Page, description: string): Promise<void> {
  const toggle = await p.waitForFunction((d) => [...document.querySelectorAll(".not-prose button")].find((b) => (b as HTMLElement).innerText.trim().startsWith(d)) ?? false, { polling: 200, timeout: 20_000 }, description);
  await (toggle as unknown as { click(): Promise<void> }).click();
}

/** The composer's mode labels (the mode menu's trigger shows the current one). */
const MODES = ["Flash", "Reasoning", "Pro", "Ultra"];

/**
 * Picks `mode` in the composer's mode menu: opens it from its trigger (whatever mode is current: the app keeps the
 * last one chosen), clicks the item whose title is `mode`, waits until the trigger shows it, and closes the menu. Unselected items are only muted, not disabled; typing while the menu is open would go to the menu.
 */
async function chooseMode(p: Page, mode: string): Promise<void> {
  const trigger = await p.waitForFunction((modes) => [...document.querySelectorAll("button")].find((b) => modes.includes(b.innerText.trim())) ?? false, { polling: 200, timeout: 15_000 }, MODES);
  await (trigger as unknown as { click(): Promise<void> }).click();
  const item = await p.waitForFunction((m) => [...document.querySelectorAll('[role="menuitem"]')].find((el) => (el as HTMLElement).innerText.split("\n")[0].trim() === m) ?? false, { polling: 200, timeout: 5_000 }, mode);
  await (item as unknown as { click(): Promise<void> }).click();
  await p.waitForFunction((m) => [...document.querySelectorAll("button")].some((b) => b.innerText.trim() === m), { polling: 200, timeout: 5_000 }, mode);
  // The app leaves the menu open after a pick: close it before typing.
  await p.keyboard.press("Escape");
  await p.waitForFunction(() => !document.querySelector('[role="menu"]'), { polling: 200, timeout: 5_000 });
}

/** The thread's goal as the gateway stores it (`GET /api/threads/{id}/goal`). */
const goalOf = async (p: Page, thread: string) => (await api(p, "GET", `/api/threads/${thread}/goal`)).json?.goal as
  { continuation_count?: number; last_evaluation?: { stand_down_reason?: string } } | null | undefined;

/**
 * Sends a slash command: types it, closes the suggestion list the composer opens for `/...`, then Enter.
 * The composer's suggestions take Enter while they are open.
 */
async function sendCommand(p: Page, text: string): Promise<void> {
  await p.waitForSelector(COMPOSER, { visible: true, timeout: 30_000 });
  await p.click(COMPOSER);
  await p.keyboard.down("Control");
  await p.keyboard.press("a");
  await p.keyboard.up("Control");
  await p.keyboard.press("Backspace");
  await p.type(COMPOSER, text);
  await p.keyboard.press("Escape");
  await p.focus(COMPOSER);
  await p.keyboard.press("Enter");
}
