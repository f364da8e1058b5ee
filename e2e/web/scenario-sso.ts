// The browser walk-through, second user (issue 49's "how it will be checked" and issue 47's two users): in a fresh
// browser context (no cookies of the first user) the login page's SSO button goes to an OpenID Connect provider
// running in this process, which signs the user in and sends the browser back; the app lands signed in as that
// identity, and that user sees none of the first user's threads or scheduled tasks.
import type { Browser } from "puppeteer-core";
import { api, open, waitText, type Walk } from "./walk.js";

/** The SSO provider as the gateway's config names it, and who signs in at the IdP. */
export interface SsoSetup {
  /** The button text's provider name (`display_name`). */
  displayName: string;
  /** The email the IdP releases for the second user. */
  email: string;
}

/** What the first user made, to be invisible to the second. */
export interface FirstUserMarks {
  adminThreadTitle: string;
  adminTaskTitle: string;
}

/** Signs a second user in with SSO and checks they see nothing of the first user's. */
export async function runSecondUser(walk: Walk, browser: Browser, sso: SsoSetup, marks: FirstUserMarks): Promise<void> {
  const context = await browser.createBrowserContext();
  const page = await walk.newPage(context, "sso-user");
  try {
    const signedIn = await walk.step(page, "second user: SSO button on the login page, sign in at the IdP, land signed in", async (p) => {
      await open(p, `${walk.baseUrl}/login`);
      const ssoButton = await p.waitForSelector(`xpath/.//button[normalize-space(.)="Continue with ${sso_(sso.displayName)}"]`, { visible: true, timeout: 20_000 });
      await ssoButton!.click();
      // The IdP signs in and redirects back through the gateway's callback to the app's /auth/callback, then /workspace.
      await p.waitForFunction(() => location.pathname.startsWith("/workspace"), { timeout: 30_000 });
      const me = await api(p, "GET", "/api/v1/auth/me");
      if (me.status !== 200 || me.json?.email !== sso.email) throw new Error(`/auth/me answered ${me.status} ${JSON.stringify(me.json)}`);
      await p.waitForSelector("textarea", { visible: true, timeout: 30_000 });
    });
    if (!signedIn) return;
    await walk.step(page, "second user sees none of the first user's threads or tasks", async (p) => {
      await open(p, `${walk.baseUrl}/workspace/chats`);
      await new Promise((r) => setTimeout(r, 1_000));
      if (await p.evaluate((t) => document.body.innerText.includes(t), marks.adminThreadTitle)) throw new Error("the chats list shows the first user's thread");
      const threads = await api(p, "POST", "/api/langgraph/threads/search", { limit: 50 });
      if (threads.status !== 200 || !Array.isArray(threads.json) || threads.json.length !== 0) throw new Error(`threads/search answered ${threads.status} with ${JSON.stringify(threads.json).slice(0, 200)}`);
      await open(p, `${walk.baseUrl}/workspace/scheduled-tasks`);
      await waitText(p, "No scheduled task selected", 20_000);
      if (await p.evaluate((t) => document.body.innerText.includes(t), marks.adminTaskTitle)) throw new Error("the Scheduled tasks page shows the first user's task");
      const tasks = await api(p, "GET", "/api/scheduled-tasks");
      if (tasks.status !== 200 || !Array.isArray(tasks.json) || tasks.json.length !== 0) throw new Error(`scheduled-tasks answered ${tasks.status} with ${JSON.stringify(tasks.json).slice(0, 200)}`);
    });
  } finally {
    await context.close();
  }
}

/** XPath string literal contents: the display name must not close the literal. */
const sso_ = (s: string) => s.replace(/"/g, "");
