import { unlinkSync } from "node:fs";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { watchAppConfig } from "../../src/config/watcher.js";
import { captureLogs } from "../support/capture-logs.js";
import { postJson, startHarness, type Harness } from "../support/harness.js";

const GOOD = "models:\n  - name: scripted\n    use: deerflow-gateway:ScriptedChatModel\n    model: s\n";
let h: Harness;
beforeEach(async () => {
  h = await startHarness(GOOD);
});
afterEach(async () => h.close());

describe("a broken config edit", () => {
  it("keeps serving the last good config and reports degraded health until the file is fixed", async () => {
    h.writeConfig("models:\n  - name: [broken\n");
    const health = await (await fetch(`${h.url}/health`)).json();
    expect(health.status).toBe("degraded");
    expect(health.config_error).toContain("Invalid YAML");
    const res = await postJson(`${h.url}/runs/stream`, { input: { messages: [{ role: "user", content: "still here" }] } });
    expect(await res.text()).toContain("You said: still here");
    h.writeConfig(GOOD.replace("model: s", "model: s2"));
    expect(await (await fetch(`${h.url}/health`)).json()).toEqual({ status: "healthy", service: "deer-flow-gateway", sandbox: "local" });
    expect((await (await fetch(`${h.url}/api/models`)).json()).models[0].model).toBe("s2");
  });

  it("reports a schema error naming the key, and a deleted file, without losing the config", async () => {
    h.writeConfig("models:\n  - name: x\n    use: deerflow-gateway:ScriptedChatModel\n");
    expect((await (await fetch(`${h.url}/health`)).json()).config_error).toContain("models[0].model");
    unlinkSync(h.configPath);
    const health = await (await fetch(`${h.url}/health`)).json();
    expect(health.status).toBe("degraded");
    expect(health.config_error).toContain("not found");
    expect((await (await fetch(`${h.url}/api/models`)).json()).models[0].name).toBe("scripted");
  });
});

describe("the config watcher", () => {
  it("reloads and logs 'config reloaded' on a file change, without any request", async () => {
    const logs = captureLogs();
    const watcher = watchAppConfig(h.configPath);
    try {
      await new Promise<void>((resolve) => watcher.on("ready", () => resolve()));
      h.writeConfig(GOOD.replace("model: s", "model: watched"));
      const deadline = Date.now() + 5000;
      while (Date.now() < deadline && !logs.messages().includes("config reloaded")) await new Promise((r) => setTimeout(r, 25));
      expect(logs.messages()).toContain("config reloaded");
      h.writeConfig("models: [oops");
      const until = Date.now() + 5000;
      while (Date.now() < until && !logs.lines().some((l) => l.level === 50)) await new Promise((r) => setTimeout(r, 25));
      const errors = logs.lines().filter((l) => l.level === 50);
      expect(errors).toHaveLength(1);
      expect(errors[0].msg).toContain("keeping the last good config");
    } finally {
      await watcher.close();
      logs.restore();
    }
  });
});
