import { copyFileSync, mkdtempSync, rmSync, statSync, unlinkSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { pino } from "pino";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  getAppConfig,
  getAppConfigStatus,
  loadAppConfig,
  parseAppConfigText,
  peekCurrentAppConfig,
  popCurrentAppConfig,
  pushCurrentAppConfig,
  resetAppConfig,
  setAppConfig,
  withAppConfig,
  withPinnedAppConfig,
} from "../../src/config/app-config.js";
import { getModelConfig, getToolConfig, parseAppConfig, type AppConfig } from "../../src/config/schema.js";
import { CONFIG_QUIET_MS, STAT_TRUST_MS, statSettled } from "../../src/config/watched-file.js";
import { ConfigError } from "../../src/errors.js";
import { until } from "../support/wait.js";
import { getLogger, setLogger } from "../../src/logger.js";

const FIXTURE = path.resolve(import.meta.dirname, "../fixtures/deerflow/config.example.yaml");
const MODEL = (name: string, extra = "") => `models:\n  - name: ${name}\n    use: langchain_openai:ChatOpenAI\n    model: gpt-test\n${extra}`;

let dir: string;
let file: string;
const savedEnv = { ...process.env };
const originalLogger = getLogger();
let logLines: { level: number; msg: string }[];

beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), "appcfg-"));
  file = path.join(dir, "config.yaml");
  process.env.DEER_FLOW_CONFIG_PATH = file;
  logLines = [];
  setLogger(pino({ level: "debug" }, { write: (s: string) => void logLines.push(JSON.parse(s)) }));
});

afterEach(() => {
  resetAppConfig();
  setLogger(originalLogger);
  process.env = { ...savedEnv };
  rmSync(dir, { recursive: true, force: true });
});

/** Rewrites the config file and moves its mtime 5 s past the previous one ("bump mtime"). */
/** Sets a file's mtime a minute back: it was written before, not being written now (see CONFIG_QUIET_MS). */
function settle(p: string) {
  const t = new Date(Date.now() - 60_000);
  utimesSync(p, t, t);
}

function rewrite(text: string) {
  const before = statSync(file).mtimeMs;
  writeFileSync(file, text);
  const t = new Date(before + 5000);
  utimesSync(file, t, t);
}

function touch() {
  const t = new Date(statSync(file).mtimeMs + 5000);
  utimesSync(file, t, t);
}

const warnings = () => logLines.filter((l) => l.level === 40).map((l) => l.msg);

describe("parseAppConfigText: YAML to typed config", () => {
  it("accepts a file with only models: (no sandbox section is required in this port)", () => {
    const cfg = parseAppConfigText(MODEL("m"), "/x/config.yaml");
    expect(cfg.models.map((m) => m.name)).toEqual(["m"]);
    expect(cfg.models[0].supports_thinking).toBe(false);
    expect(cfg.max_recursion_limit).toBe(1000);
    expect(cfg.agents_api.enabled).toBe(false);
  });

  it("treats an empty file as all defaults and warns that no models are configured (CF-010)", () => {
    const cfg = parseAppConfigText("", "/x/config.yaml");
    expect(cfg.models).toEqual([]);
    expect(cfg.tools).toEqual([]);
    expect(warnings().some((m) => m.includes("No models are configured"))).toBe(true);
  });

  it("falls back to defaults for present-but-null sections (CF-009)", () => {
    const cfg = parseAppConfigText(
      "models: null\ntools: null\ntool_groups: null\nagents_api: null\nloop_detection: null\nmemory: null\nsummarization: null\nzz_unmodelled: null\n",
      "/x/config.yaml",
    );
    expect(cfg.models).toEqual([]);
    expect(cfg.tools).toEqual([]);
    expect(cfg.tool_groups).toEqual([]);
    expect(cfg.agents_api).toEqual({ enabled: false });
    expect(cfg.loop_detection).toMatchObject({ enabled: true, warn_threshold: 3, hard_limit: 5 });
    expect(cfg.memory).toMatchObject({ enabled: true, mode: "middleware" });
    expect(cfg.summarization).toMatchObject({ enabled: false });
    // A null section the schema does not model is dropped rather than kept as null.
    expect("zz_unmodelled" in cfg).toBe(false);
    expect(warnings().some((m) => m.includes("No models are configured"))).toBe(true);
  });

  it("does not warn about missing models when a model is configured", () => {
    parseAppConfigText(MODEL("m"), "/x/config.yaml");
    expect(warnings().some((m) => m.includes("No models are configured"))).toBe(false);
  });

  it("reports invalid YAML as a ConfigError naming the file and the line", () => {
    expect(() => parseAppConfigText("models: [\n  - a: b\n  c", "/x/config.yaml")).toThrow(ConfigError);
    expect(() => parseAppConfigText("models: [\n  - a: b\n  c", "/x/config.yaml")).toThrow(/Invalid YAML in \/x\/config\.yaml \(line \d+\)/);
  });

  it("reports a schema violation with the offending key path", () => {
    expect(() => parseAppConfigText("models:\n  - name: m\n    use: x:Y\n", "/x/config.yaml")).toThrow(/models\[0\]\.model/);
    expect(() => parseAppConfigText("loop_detection:\n  warn_threshold: 6\n  hard_limit: 5\n", "/x/c.yaml")).toThrow(/hard_limit/);
  });

  it("rejects a top level that is not a mapping", () => {
    expect(() => parseAppConfigText("- a\n- b\n", "/x/config.yaml")).toThrow("top level must be a mapping");
  });

  it("substitutes $VARs strictly (CF-015)", () => {
    const text = `${MODEL("m", '    api_key: $DF_TEST_KEY\n    default_headers:\n      Authorization: "Bearer $DF_TEST_KEY"\n    timeout: 30\n')}tools:\n  - name: t\n    group: g\n    use: a:b\n    $literal_key: x\n`;
    const cfg = parseAppConfigText(text, "/x/config.yaml", { DF_TEST_KEY: "sk-123" });
    const m = cfg.models[0] as Record<string, unknown>;
    expect(m.api_key).toBe("sk-123");
    expect(m.default_headers).toEqual({ Authorization: "Bearer $DF_TEST_KEY" });
    expect(m.timeout).toBe(30);
    expect((cfg.tools[0] as Record<string, unknown>).$literal_key).toBe("x");

    expect(() => parseAppConfigText(text, "/x/config.yaml", {})).toThrow(/DF_TEST_KEY.*not found|not found.*DF_TEST_KEY/);
    expect(() => parseAppConfigText(text, "/x/config.yaml", {})).toThrow(ConfigError);
    expect((parseAppConfigText(text, "/x/config.yaml", { DF_TEST_KEY: "" }).models[0] as Record<string, unknown>).api_key).toBe("");
    expect(() => parseAppConfigText(MODEL("m", "    api_key: ${DF_TEST_KEY}\n"), "/x/c.yaml", { DF_TEST_KEY: "v" })).toThrow("{DF_TEST_KEY}");
  });

  it("keeps a not-offered section that leaves its feature off, and refuses an unknown top-level key (issue 46)", () => {
    const cfg = parseAppConfigText("channels: {telegram: {enabled: false}}\n", "/x/c.yaml") as Record<string, unknown>;
    expect(cfg.channels).toEqual({ telegram: { enabled: false } });
    expect(() => parseAppConfigText("zz_unknown_key_once: 2\n", "/x/c.yaml")).toThrow("'zz_unknown_key_once' is not a DeerFlow or deerflow-gateway config key");
  });

  it("looks models and tools up by name, first duplicate wins, unknown gives undefined (CF-012)", () => {
    const cfg = parseAppConfig({
      models: [
        { name: "dup", use: "a:B", model: "first" },
        { name: "dup", use: "a:B", model: "second" },
      ],
      tools: [{ name: "t1", group: "default", use: "a:b" }],
    });
    expect(getModelConfig(cfg, "dup")?.model).toBe("first");
    expect(getModelConfig(cfg, "nope")).toBeUndefined();
    expect(getToolConfig(cfg, "t1")?.group).toBe("default");
    expect(getToolConfig(cfg, "nope")).toBeUndefined();
    expect(getModelConfig(parseAppConfig({}), "dup")).toBeUndefined();
  });
});

describe("upstream config.example.yaml loads unchanged (CF-011)", () => {
  it("loads with no env vars, no models, the example tools and groups, and retains unknown keys", () => {
    copyFileSync(FIXTURE, file);
    const cfg = loadAppConfig(file) as Record<string, unknown> & ReturnType<typeof loadAppConfig>;
    expect(cfg.models).toEqual([]);
    expect(warnings().some((m) => m.includes("No models are configured"))).toBe(true);
    expect(cfg.tool_groups.map((g) => g.name)).toEqual(["web", "file:read", "file:write", "bash", "browser"]);
    expect(cfg.tools.map((t) => t.name)).toEqual([
      "web_search", "web_fetch", "image_search", "ls", "read_file", "glob", "grep", "write_file", "str_replace", "bash",
    ]);
    expect(cfg.tools.map((t) => t.group)).toEqual([
      "web", "web", "web", "file:read", "file:read", "file:read", "file:read", "file:write", "file:write", "bash",
    ]);
    expect(cfg.config_version).toBe(34);
    expect(cfg.agents_api.enabled).toBe(false);
    expect(cfg.loop_detection).toMatchObject({ enabled: true, warn_threshold: 3, hard_limit: 5, window_size: 20, tool_freq_hard_limit: 50 });
    expect(cfg.uploads).toBeTypeOf("object");
    expect(cfg.sandbox.use).toBe("deerflow.sandbox.local:LocalSandboxProvider");
    expect(cfg.sandbox.allow_host_bash).toBe(false);
    expect(cfg.skills.container_path).toBe("/mnt/skills");
    expect(cfg.title).toMatchObject({ enabled: true, max_words: 6, max_chars: 60 });
    expect(cfg.title.model_name ?? null).toBeNull();
    expect(cfg.summarization.enabled).toBe(true);
    expect(cfg.summarization.trigger).toEqual([{ type: "tokens", value: 32000 }]);
    expect(cfg.summarization.keep).toEqual({ type: "messages", value: 10 });
    expect(cfg.tool_search).toMatchObject({ enabled: false, auto_promote_top_k: 3 });
    expect(cfg.database.backend).toBe("sqlite");
    // Unmodelled nested keys are tolerated and kept.
    expect(cfg.logging).toBeTypeOf("object");
    // A tool's extra keys are kept for the tool to read.
    expect((cfg.tools[0] as Record<string, unknown>).max_results).toBe(5);
  });
});

describe("loadAppConfig", () => {
  it("reads the resolved file, bypassing the cache", () => {
    writeFileSync(file, MODEL("first-model"));
    const a = loadAppConfig();
    const b = loadAppConfig();
    expect(a.models[0].name).toBe("first-model");
    expect(a).not.toBe(b);
  });

  it("fails with a ConfigError when the explicit file does not exist", () => {
    expect(() => loadAppConfig(path.join(dir, "nope.yaml"))).toThrow(/param `config_path`/);
  });
});

describe("getAppConfig: cache and hot reload (CF-018, CF-021)", () => {
  it("returns a new object with the new values after an edit with a new mtime", () => {
    writeFileSync(file, MODEL("first-model", "    supports_thinking: false\n"));
    const x = getAppConfig();
    rewrite(MODEL("first-model", "    supports_thinking: true\n"));
    const y = getAppConfig();
    expect(x.models[0].supports_thinking).toBe(false);
    expect(y.models[0].supports_thinking).toBe(true);
    expect(y).not.toBe(x);
    expect(logLines.some((l) => l.msg === "config reloaded")).toBe(true);
  });

  it("returns the same object while the file is unchanged, and a new equal object after a touch", () => {
    writeFileSync(file, MODEL("first-model"));
    const a = getAppConfig();
    const b = getAppConfig();
    expect(b).toBe(a);
    touch();
    const c = getAppConfig();
    expect(c).not.toBe(a);
    expect(c).toEqual(a);
    expect(getAppConfig()).toBe(c);
  });

  it("reloads a same-size content swap even when the mtime is restored (hash in the signature)", () => {
    writeFileSync(file, MODEL("model-aa"));
    settle(file);
    const st = statSync(file);
    const a = getAppConfig();
    writeFileSync(file, MODEL("model-bb"));
    utimesSync(file, st.atime, st.mtime);
    const b = getAppConfig();
    expect(b).not.toBe(a);
    expect(b.models[0].name).toBe("model-bb");
  });

  it("serves a file untouched for a while from its stat, and still sees the next same-size edit with the mtime restored", async () => {
    writeFileSync(file, MODEL("model-aa"));
    settle(file);
    // Past the window in which a file's timestamps cannot yet stand for its content (STAT_TRUST_MS).
    await until(() => statSettled(statSync(file)));
    const a = getAppConfig();
    expect(getAppConfig()).toBe(a);
    expect(getAppConfig()).toBe(a);
    const st = statSync(file);
    writeFileSync(file, MODEL("model-bb"));
    utimesSync(file, st.atime, st.mtime);
    expect(getAppConfig().models[0].name).toBe("model-bb");
  });

  it("trusts a stat only once the later of its ctime and mtime is STAT_TRUST_MS old (the rule skill listings share)", () => {
    const now = 1_000_000_000_000;
    expect(statSettled({ ctimeMs: now - STAT_TRUST_MS, mtimeMs: now - 60_000 }, now)).toBe(true);
    // A recent change (ctime), even with an old mtime restored by utimes.
    expect(statSettled({ ctimeMs: now - STAT_TRUST_MS + 1, mtimeMs: now - 60_000 }, now)).toBe(false);
    // An mtime set ahead of the clock.
    expect(statSettled({ ctimeMs: now - 60_000, mtimeMs: now + 5_000 }, now)).toBe(false);
  });

  it("switches files when DEER_FLOW_CONFIG_PATH changes", () => {
    writeFileSync(file, MODEL("one"));
    const other = path.join(dir, "other.yaml");
    writeFileSync(other, MODEL("two"));
    settle(other);
    expect(getAppConfig().models[0].name).toBe("one");
    process.env.DEER_FLOW_CONFIG_PATH = other;
    expect(getAppConfig().models[0].name).toBe("two");
    expect(getAppConfigStatus().path).toBe(other);
  });

  it("throws on the first load when the file is missing, naming DEER_FLOW_CONFIG_PATH (CF-004)", () => {
    process.env.DEER_FLOW_CONFIG_PATH = path.join(dir, "does-not-exist.yaml");
    expect(() => getAppConfig()).toThrow(ConfigError);
    expect(() => getAppConfig()).toThrow("DEER_FLOW_CONFIG_PATH");
  });

  it("throws on the first load when the file is invalid", () => {
    writeFileSync(file, "models: 5\n");
    expect(() => getAppConfig()).toThrow(ConfigError);
  });
});

describe("getAppConfig: a broken reload keeps the last good config (decision 2, CF-022, CF-027)", () => {
  it("keeps serving the last good object on a schema error, reports it, and recovers when fixed", () => {
    writeFileSync(file, `${MODEL("m")}loop_detection:\n  warn_threshold: 4\n  hard_limit: 6\n`);
    const x = getAppConfig();
    expect(getAppConfigStatus()).toEqual({ path: file, error: null, pending: false });

    rewrite(`${MODEL("m")}loop_detection: false\nagents_api: false\n`);
    expect(getAppConfig()).toBe(x);
    expect(getAppConfig()).toBe(x);
    const status = getAppConfigStatus();
    expect(status.error).toContain(file);
    expect(status.error).toContain("loop_detection");
    expect(x.loop_detection.warn_threshold).toBe(4);
    // Logged once per distinct failure, not per call.
    expect(logLines.filter((l) => l.level === 50)).toHaveLength(1);

    rewrite(`${MODEL("m")}loop_detection:\n  warn_threshold: 2\n  hard_limit: 6\n`);
    const fixed = getAppConfig();
    expect(fixed).not.toBe(x);
    expect(fixed.loop_detection.warn_threshold).toBe(2);
    expect(getAppConfigStatus().error).toBeNull();
  });

  it("keeps the last good config on invalid YAML and on an unset $VAR", () => {
    writeFileSync(file, MODEL("m"));
    const x = getAppConfig();
    rewrite("models: [\n  broken");
    expect(getAppConfig()).toBe(x);
    expect(getAppConfigStatus().error).toContain("Invalid YAML");

    rewrite(MODEL("m", "    api_key: $DF_SURELY_UNSET_VAR\n"));
    delete process.env.DF_SURELY_UNSET_VAR;
    expect(getAppConfig()).toBe(x);
    expect(getAppConfigStatus().error).toContain("DF_SURELY_UNSET_VAR");
  });

  it("keeps the last good config when the file is deleted, reports the missing path, and reloads once it is back", () => {
    writeFileSync(file, MODEL("m"));
    const x = getAppConfig();
    unlinkSync(file);
    expect(getAppConfig()).toBe(x);
    expect(getAppConfigStatus().error).toContain("DEER_FLOW_CONFIG_PATH");

    writeFileSync(file, MODEL("back"));
    const t = new Date(Date.now() + 10_000);
    utimesSync(file, t, t);
    const y = getAppConfig();
    expect(y.models[0].name).toBe("back");
    expect(getAppConfigStatus().error).toBeNull();
  });
});

describe("setAppConfig / resetAppConfig (CF-028)", () => {
  it("serves an injected config regardless of the file until reset", () => {
    writeFileSync(file, "log_level: info\n");
    const injected = parseAppConfig({ log_level: "warning" });
    setAppConfig(injected);
    expect(getAppConfig()).toBe(injected);
    rewrite("log_level: debug\n");
    expect(getAppConfig().log_level).toBe("warning");
    expect(getAppConfigStatus()).toEqual({ path: null, error: null, pending: false });
    resetAppConfig();
    expect(getAppConfig().log_level).toBe("debug");
  });

  it("throws after reset when there is no file to fall back on", () => {
    process.env.DEER_FLOW_CONFIG_PATH = path.join(dir, "none.yaml");
    setAppConfig(parseAppConfig({ log_level: "warning" }));
    expect(getAppConfig().log_level).toBe("warning");
    resetAppConfig();
    expect(() => getAppConfig()).toThrow(ConfigError);
  });
});

describe("context-local override (config.md §4.3)", () => {
  it("withAppConfig beats both the injected config and the file, and nests with stack semantics", () => {
    writeFileSync(file, "log_level: info\n");
    const a = parseAppConfig({ log_level: "a" });
    const b = parseAppConfig({ log_level: "b" });
    setAppConfig(parseAppConfig({ log_level: "injected" }));
    withAppConfig(a, () => {
      expect(getAppConfig()).toBe(a);
      withAppConfig(b, () => expect(getAppConfig()).toBe(b));
      expect(getAppConfig()).toBe(a);
    });
    expect(getAppConfig().log_level).toBe("injected");
    expect(peekCurrentAppConfig()).toBeNull();
  });

  it("push saves the active override and pop restores it; over-popping clears without error", () => {
    writeFileSync(file, "log_level: info\n");
    const a = parseAppConfig({ log_level: "a" });
    const b = parseAppConfig({ log_level: "b" });
    const c = parseAppConfig({ log_level: "c" });
    withAppConfig(a, () => {
      pushCurrentAppConfig(b);
      expect(getAppConfig()).toBe(b);
      pushCurrentAppConfig(c);
      expect(peekCurrentAppConfig()).toBe(c);
      popCurrentAppConfig();
      expect(getAppConfig()).toBe(b);
      popCurrentAppConfig();
      expect(getAppConfig()).toBe(a);
      popCurrentAppConfig();
      popCurrentAppConfig();
      expect(peekCurrentAppConfig()).toBeNull();
      expect(getAppConfig().log_level).toBe("info");
    });
  });

  it("does not leak an override between concurrent async contexts", async () => {
    const a = parseAppConfig({ log_level: "a" });
    const b = parseAppConfig({ log_level: "b" });
    const seen = await Promise.all([
      withAppConfig(a, async () => {
        await new Promise((r) => setTimeout(r, 10));
        return getAppConfig().log_level;
      }),
      withAppConfig(b, async () => {
        await new Promise((r) => setTimeout(r, 1));
        return getAppConfig().log_level;
      }),
    ]);
    expect(seen).toEqual(["a", "b"]);
  });

  it("withPinnedAppConfig reads the file once: later reads in its async context keep that version, reads outside see edits", async () => {
    writeFileSync(file, MODEL("model-aa"));
    settle(file);
    const seen = await withPinnedAppConfig(async () => {
      const first = getAppConfig();
      rewrite(MODEL("model-bbbb"));
      await new Promise((r) => setTimeout(r, 5));
      // Work started inside keeps the pin; the test's own context outside does not.
      return { first, again: getAppConfig(), later: await new Promise<AppConfig>((resolve) => setImmediate(() => resolve(getAppConfig()))) };
    });
    expect(seen.first.models[0].name).toBe("model-aa");
    expect(seen.again).toBe(seen.first);
    expect(seen.later).toBe(seen.first);
    expect(getAppConfig().models[0].name).toBe("model-bbbb");
  });

  it("withPinnedAppConfig yields to overrides and to an injected config, and pins nothing before the first read", () => {
    writeFileSync(file, MODEL("model-aa"));
    const a = parseAppConfig({ log_level: "a" });
    settle(file);
    withPinnedAppConfig(() => {
      rewrite(MODEL("model-cc"));
      expect(withAppConfig(a, () => getAppConfig())).toBe(a);
      pushCurrentAppConfig(a);
      expect(getAppConfig()).toBe(a);
      popCurrentAppConfig();
      // The first file read happens here, after the edit.
      expect(getAppConfig().models[0].name).toBe("model-cc");
      const injected = parseAppConfig({ log_level: "injected" });
      setAppConfig(injected);
      expect(getAppConfig()).toBe(injected);
    });
  });
});

describe("getAppConfig: recovery when the same good file comes back", () => {
  it("clears the error when a moved-away file is moved back unchanged (same mtime, size and hash)", async () => {
    const { renameSync } = await import("node:fs");
    writeFileSync(file, MODEL("m"));
    settle(file);
    const x = getAppConfig();
    const aside = path.join(dir, "aside.yaml");
    renameSync(file, aside);
    expect(getAppConfig()).toBe(x);
    expect(getAppConfigStatus().error).not.toBeNull();
    renameSync(aside, file);
    expect(getAppConfig()).toBe(x);
    expect(getAppConfigStatus().error).toBeNull();
  });

  it("keeps reporting the error while the same broken file stays in place", () => {
    writeFileSync(file, MODEL("m"));
    const x = getAppConfig();
    rewrite("models: 5\n");
    expect(getAppConfig()).toBe(x);
    const first = getAppConfigStatus().error;
    expect(getAppConfig()).toBe(x);
    expect(getAppConfigStatus().error).toBe(first);
    expect(first).not.toBeNull();
  });
});

describe("getAppConfig: reads during a write (issue 13 item 5)", () => {
  it("serves the last good config while the file is being rewritten in place, then the whole new one", async () => {
    writeFileSync(file, MODEL("first") + "title:\n  enabled: false\n");
    settle(file);
    const good = getAppConfig();
    expect(good.models[0].name).toBe("first");
    // An in-place edit caught after its first piece: valid YAML, but the rest (title) is not written yet.
    writeFileSync(file, MODEL("second"));
    expect(getAppConfig()).toBe(good);
    expect(getAppConfigStatus().error).toBeNull();
    writeFileSync(file, MODEL("second") + "title:\n  enabled: false\n");
    expect(getAppConfig()).toBe(good);
    // Once the file has been quiet for CONFIG_QUIET_MS it is read.
    await until(() => getAppConfig().models[0].name === "second", CONFIG_QUIET_MS + 5_000);
    const next = getAppConfig();
    expect(next.models[0].name).toBe("second");
    expect(next.title.enabled).toBe(false);
  });
});
