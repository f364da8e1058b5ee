import { readFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse as parseYaml } from "yaml";
import { getAppConfig, parseAppConfigText } from "../../src/config/app-config.js";
import { createChatModel } from "../../src/models/create-chat-model.js";
import { captureLogs } from "../support/capture-logs.js";
import { startHarness, type Harness } from "../support/harness.js";

// Issue 49 item 3: every model entry of DeerFlow's config.example.yaml (all commented out there) loads with its
// keys set, `/health` is healthy, and each builds its provider client with thinking on and off without a key
// dropped; the providers a server cannot sign in to, and misspelt provider paths, stop the start naming why.
const example = readFileSync(path.resolve(import.meta.dirname, "../fixtures/deerflow/config.example.yaml"), "utf8");

/** The `models:` entries of the example, uncommented (`  # - name:` starts one, `  #   ` lines continue it). */
function exampleModels(): string {
  const section = example.slice(example.indexOf("\nmodels:\n"), example.indexOf("\ntool_groups:"));
  const out: string[] = [];
  let inEntry = false;
  const seen = new Map<string, number>();
  for (const line of section.split("\n")) {
    const start = /^  # - name: (\S+)/.exec(line);
    if (start) {
      // The example lists the MiniMax entries twice (international and CN endpoints): the second set gets `-cn`.
      const n = (seen.get(start[1]) ?? 0) + 1;
      seen.set(start[1], n);
      out.push(`  - name: ${start[1]}${n > 1 ? "-cn" : ""}`);
      inEntry = true;
    } else if (inEntry && line.startsWith("  #   ")) out.push(`  ${line.slice(4)}`);
    else inEntry = false;
  }
  return `models:\n${out.join("\n")}\n`;
}

const KEYS = [...new Set([...example.matchAll(/\$([A-Z][A-Z0-9_]*_API_KEY)/g)].map((m) => m[1]))];
const saved = Object.fromEntries(KEYS.map((k) => [k, process.env[k]]));
let h: Harness;
const yaml = exampleModels();

beforeAll(async () => {
  for (const k of KEYS) process.env[k] = `test-${k.toLowerCase()}`;
  h = await startHarness(yaml);
});
afterAll(async () => {
  await h?.close();
  for (const k of KEYS) if (saved[k] === undefined) delete process.env[k];
  else process.env[k] = saved[k];
});

describe("DeerFlow's example model entries", () => {
  it("all 26 load and /health is healthy", async () => {
    expect((parseYaml(yaml) as { models: unknown[] }).models).toHaveLength(26);
    const health = await (await fetch(`${h.url}/health`)).json();
    expect(health.model_errors ?? []).toEqual([]);
    expect(health.status).toBe("healthy");
    expect((await (await fetch(`${h.url}/api/models`)).json()).models).toHaveLength(26);
  });

  it("each builds its client with thinking on and off, with no key ignored", async () => {
    const logs = captureLogs();
    try {
      const config = getAppConfig();
      for (const entry of config.models) {
        for (const thinkingEnabled of [true, false]) {
          const model = await createChatModel(entry.name, { thinkingEnabled: thinkingEnabled && entry.supports_thinking, reasoningEffort: "high", appConfig: config });
          // Upstream's own provider classes come back as the gateway's adapter of the same name.
          if (entry.use.startsWith("deerflow.models.")) expect(model.constructor.name).toBe(entry.use.split(":")[1]);
        }
      }
      expect(logs.messages().filter((m) => m.includes("is ignored"))).toEqual([]);
    } finally {
      logs.restore();
    }
  });
});

describe("providers refused at load", () => {
  const entry = (use: string) => `models:\n  - name: m\n    use: ${use}\n    model: x\n`;
  it.each([
    ["deerflow.models.openai_codex_provider:CodexChatModel", /not offered: it signs in with the Codex CLI's ChatGPT login/],
    ["deerflow.models.claude_provider:ClaudeChatModel", /not offered: it signs in with Claude Code's OAuth credentials/],
  ])("%s says it needs a vendor CLI's local credentials", (use, message) => {
    expect(() => parseAppConfigText(entry(use), "/cfg/config.yaml")).toThrow(message);
  });

  it.each([
    ["langchain_antropic:ChatAnthropic", "langchain_anthropic:ChatAnthropic"],
    ["deerflow.models.patched_deepseek:PatchedChatDeepSek", "deerflow.models.patched_deepseek:PatchedChatDeepSeek"],
    ["langchain_google_genai:ChatGoogleGenerativeAl", "langchain_google_genai:ChatGoogleGenerativeAI"],
  ])("a misspelt path %s names the nearest known one", (use, near) => {
    const err = (() => {
      try {
        parseAppConfigText(entry(use), "/cfg/config.yaml");
      } catch (e) {
        return e as Error;
      }
    })();
    expect(err?.message).toContain(`use '${use}'`);
    expect(err?.message).toContain(`'${near}'`);
    expect(err?.message).toContain("model 'm'");
  });

  it("refuses a DeerFlow Python provider path it does not know, naming the nearest known one", () => {
    expect(() => parseAppConfigText(entry("deerflow.models.patched_qwen:PatchedChatQwen"), "/cfg/config.yaml")).toThrow(
      /use 'deerflow.models.patched_qwen:PatchedChatQwen' is a Python module path deerflow-gateway does not provide; the nearest known provider path is 'deerflow\.models\.[a-z_]+:[A-Za-z]+'/,
    );
  });

  it("keeps npm packages and files it cannot check to the import (reported by /health)", () => {
    expect(() => parseAppConfigText(entry('"@acme/chat-models:ChatAcme"'), "/cfg/config.yaml")).not.toThrow();
    expect(() => parseAppConfigText(entry("./models/mine.js:MyModel"), "/cfg/config.yaml")).not.toThrow();
  });
});
