import { readFileSync } from "node:fs";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { parseAppConfigText } from "../../src/config/app-config.js";
import { captureLogs } from "../support/capture-logs.js";

// Issue 46 item 4: every key of DeerFlow's config.example.yaml is implemented or refused.
const EXAMPLE = path.resolve(import.meta.dirname, "../fixtures/deerflow/config.example.yaml");
const exampleText = () => readFileSync(EXAMPLE, "utf8");
let logs: ReturnType<typeof captureLogs>;
beforeEach(() => (logs = captureLogs()));
afterEach(() => logs.restore());

describe("DeerFlow's config.example.yaml", () => {
  it("loads as shipped, quietly: no key refused or warned about", () => {
    const config = parseAppConfigText(exampleText(), EXAMPLE, {});
    expect(config.run_events.backend).toBe("memory");
    expect(config.agent_storage.backend).toBe("file");
    expect(config.run_ownership).toMatchObject({ lease_seconds: 30, grace_seconds: 10, heartbeat_enabled: false });
    // (Warnings that predate issue 46 remain: no models configured, memory tuning knobs with no effect.)
    expect(logs.lines().filter((l) => l.level >= 40 && /config key|does not offer|DEER_FLOW_IGNORE_UNSUPPORTED/.test(l.msg))).toEqual([]);
  });

  it("stops naming exactly the keys that turn on a feature not offered, and says how to start anyway", () => {
    const text = exampleText()
      .replace(/^mcp_tasks:\n  enabled: false/m, "mcp_tasks:\n  enabled: true")
      .concat("\nplugins:\n  - name: example\n    use: deerflow_extension_example:install\n    enabled: true\n");
    let message = "";
    try {
      parseAppConfigText(text, EXAMPLE, {});
    } catch (err) {
      message = (err as Error).message;
    }
    // MCP background tasks and scheduled tasks are offered (issues 47, 49): turning them on is not refused.
    expect(message).not.toContain("'mcp_tasks'");
    expect(message).not.toContain("'scheduler'");
    expect(message).toContain("'plugins' turns on extension packages (plugins), which deerflow-gateway does not offer");
    expect(message).toMatch(/To start anyway, set DEER_FLOW_IGNORE_UNSUPPORTED=plugins$/);
  });
});

describe("refused keys", () => {
  it("refuses a typo of a known key with the closest key, at the top level and one level down", () => {
    expect(() => parseAppConfigText("gaurdrails:\n  enabled: false\n", "c.yaml", {})).toThrow("'gaurdrails' is not a config key; did you mean 'guardrails'?");
    expect(() => parseAppConfigText("guardrails:\n  enabeld: true\n", "c.yaml", {})).toThrow("'guardrails.enabeld' is not a config key; did you mean 'guardrails.enabled'?");
    expect(() => parseAppConfigText("title:\n  max_chras: 10\n", "c.yaml", {})).toThrow("did you mean 'title.max_chars'?");
  });

  it("accepts a not-offered section that leaves its feature off, and skill_scan while no skill writes exist", () => {
    expect(() => parseAppConfigText("plugins: []\nacp_agents: {}\nskill_scan:\n  enabled: true\n", "c.yaml", {})).not.toThrow();
    expect(() => parseAppConfigText("skill_scan:\n  enabled: true\nskill_evolution:\n  enabled: true\n", "c.yaml", {})).toThrow("'skill_scan' turns on deterministic skill scanning");
  });

  it("starts anyway with DEER_FLOW_IGNORE_UNSUPPORTED, logging each ignored key loudly", () => {
    const text = "plugins:\n  - name: example\n    use: deerflow_extension_example:install\n    enabled: true\n";
    const config = parseAppConfigText(text, "c.yaml", { DEER_FLOW_IGNORE_UNSUPPORTED: "plugins" }) as Record<string, unknown>;
    expect(config.plugins).toEqual([{ name: "example", use: "deerflow_extension_example:install", enabled: true }]);
    const line = logs.lines().find((l) => l.key === "plugins");
    expect(line?.level).toBe(50);
    expect(line?.msg).toContain("this setting has NO effect");
  });

  it("refuses what it cannot do of run_events and agent_storage, saying so", () => {
    expect(() => parseAppConfigText("run_events:\n  backend: jsonl\n", "c.yaml", {})).toThrow("run_events.backend 'jsonl' is not offered by deerflow-gateway");
    expect(() => parseAppConfigText("agent_storage:\n  backend: db\n", "c.yaml", {})).toThrow("agent_storage.backend 'db' (custom agents stored in the gateway database) is not offered");
    expect(() => parseAppConfigText("run_ownership:\n  lease_seconds: 2\n", "c.yaml", {})).toThrow(/run_ownership.lease_seconds/);
  });
});
