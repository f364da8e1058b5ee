import { closeSync, openSync, writeSync, ftruncateSync } from "node:fs";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { getAppConfig } from "../../src/config/app-config.js";
import { startHarness, type Harness } from "../support/harness.js";
import { until } from "../support/wait.js";

// Issue 42 item 12: a config.yaml edited in place (truncate, write part, pause, write the rest) is adopted only
// once it has been stable for the stability period, and /health says `reloading` meanwhile, never `degraded`.
const MODELS = "models:\n  - name: s\n    use: deerflow-gateway:ScriptedChatModel\n    model: s\n";
const TOOLS = (n: number) => `tools:\n  - name: web_search_${n}\n    group: web\n    use: deerflow-gateway:nothing\n`;
let h: Harness;
beforeEach(async () => {
  process.env.DEER_FLOW_CONFIG_STABLE_MS = "500";
  h = await startHarness(MODELS);
  h.writeConfig(MODELS + TOOLS(0));
});
afterEach(async () => {
  delete process.env.DEER_FLOW_CONFIG_STABLE_MS;
  await h.close();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const toolName = () => (getAppConfig().tools[0] as { name?: string } | undefined)?.name ?? "none";

describe("config.yaml edited in place", () => {
  it("never adopts the half-written file nor reports degraded, and the edit lands once settled", async () => {
    expect(toolName()).toBe("web_search_0");
    let halfAdopted = 0;
    const statuses = new Set<string>();
    let stop = false;
    const poll = (async () => {
      while (!stop) {
        const health = (await (await fetch(`${h.url}/health`)).json()) as { status: string };
        statuses.add(health.status);
        if (toolName() === "none") halfAdopted++;
        await sleep(10);
      }
    })();
    for (const [i, pause] of [30, 150, 300, 80].entries()) {
      // In place, as an editor without atomic save does: truncate, the models, a pause, then the tools section.
      const fd = openSync(h.configPath, "r+");
      ftruncateSync(fd, 0);
      writeSync(fd, MODELS, 0);
      await sleep(pause);
      writeSync(fd, TOOLS(i + 1), Buffer.byteLength(MODELS));
      closeSync(fd);
      await until(async () => toolName() === `web_search_${i + 1}`, 5000);
    }
    stop = true;
    await poll;
    expect(halfAdopted).toBe(0);
    expect(statuses.has("degraded")).toBe(false);
    expect(statuses.has("reloading")).toBe(true);
    expect(((await (await fetch(`${h.url}/health`)).json()) as { status: string }).status).toBe("healthy");
  }, 30_000);
});
