import { copyFileSync, mkdtempSync, readFileSync, rmSync, unlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  enabledMcpServers, isSkillEnabled, parseExtensionsConfigText, resolveExtensionsConfigPath, substituteEnvLenient,
} from "../../src/config/extensions-config.js";

const fixture = () => path.resolve(import.meta.dirname, "../fixtures/deerflow/extensions_config.example.json");
let dir: string;
beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), "dfgw-ext-"));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe("extensions_config.json path resolution", () => {
  it("requires an explicitly named file to exist, naming the parameter", () => {
    expect(() => resolveExtensionsConfigPath(path.join(dir, "missing.json"), {})).toThrow(/param `config_path` not found/);
  });

  it("requires the file named by DEER_FLOW_EXTENSIONS_CONFIG_PATH to exist, also after it is deleted", () => {
    const file = path.join(dir, "ext.json");
    writeFileSync(file, '{"mcpServers": {}, "skills": {}}');
    const env = { DEER_FLOW_EXTENSIONS_CONFIG_PATH: file, DEER_FLOW_PROJECT_ROOT: dir };
    expect(resolveExtensionsConfigPath(null, env)).toBe(file);
    unlinkSync(file);
    expect(() => resolveExtensionsConfigPath(null, env)).toThrow(/DEER_FLOW_EXTENSIONS_CONFIG_PATH/);
  });

  it("searches the project root (extensions_config.json, then mcp_config.json, then config/) and may find nothing", () => {
    const env = { DEER_FLOW_PROJECT_ROOT: dir };
    expect(resolveExtensionsConfigPath(null, env)).toBeNull();
    writeFileSync(path.join(dir, "mcp_config.json"), "{}");
    expect(resolveExtensionsConfigPath(null, env)).toBe(path.join(dir, "mcp_config.json"));
    writeFileSync(path.join(dir, "extensions_config.json"), "{}");
    expect(resolveExtensionsConfigPath(null, env)).toBe(path.join(dir, "extensions_config.json"));
  });
});

describe("extensions_config.json loading", () => {
  it("substitutes $VARs leniently: an unset variable becomes an empty string, recursively", () => {
    const raw = { args: ["--token", "$MCP_TOKEN", { nested: ["$MCP_TOKEN", "$MISSING_TOKEN"] }], env: { API_KEY: "$MCP_TOKEN" }, enabled: true, timeout: 30 };
    expect(substituteEnvLenient(raw, { MCP_TOKEN: "secret" })).toEqual({
      args: ["--token", "secret", { nested: ["secret", ""] }], env: { API_KEY: "secret" }, enabled: true, timeout: 30,
    });
  });

  it("loads DeerFlow's example file unchanged", () => {
    const file = path.join(dir, "extensions_config.json");
    copyFileSync(fixture(), file);
    const config = parseExtensionsConfigText(readFileSync(file, "utf8"), file, {});
    expect(Object.keys(config.mcpServers)).toEqual(["github", "openviking", "postgres", "long-running-reports"]);
    expect(enabledMcpServers(config)).toEqual([]);
    expect(config.mcpServers.github.env.GITHUB_TOKEN).toBe("");
    expect(config.mcpServers.openviking.headers["X-API-Key"]).toBe("");
    expect(config.mcpServers.openviking.type).toBe("http");
    expect(config.mcpServers.github).toMatchObject({ session_init_timeout: 60, tool_call_timeout: 60 });
    expect(config.mcpServers.postgres.routing).toEqual({ mode: "prefer", priority: 50, keywords: ["database", "SQL", "table", "订单", "用户"] });
    expect(config.mcpServers.postgres.tools.query.routing?.priority).toBe(100);
    expect((config.mcpServers["long-running-reports"].task_toolsets[0] as { name: string }).name).toBe("report-generation");
    expect(config.mcpServers.openviking.session_init_timeout).toBe(60);
    expect(config.skills).toEqual({});
    expect(config.middlewares).toEqual([]);
    expect((config as Record<string, unknown>).mcpInterceptors).toEqual(["my_package.mcp.auth:build_auth_interceptor"]);
    expect(isSkillEnabled(config, "x", "public")).toBe(true);
    expect(isSkillEnabled(config, "x", "other")).toBe(false);
  });

  it("accepts `transport` for `type`, `mcp_servers` for `mcpServers`, and honours skill states", () => {
    const file = path.join(dir, "e.json");
    writeFileSync(file, JSON.stringify({ mcp_servers: { a: { transport: "sse", url: "http://x" }, b: { type: "http", transport: "sse", url: "http://y" } }, skills: { s: { enabled: false } } }));
    const config = parseExtensionsConfigText(readFileSync(file, "utf8"), file, {});
    expect(config.mcpServers.a.type).toBe("sse");
    expect(config.mcpServers.b.type).toBe("http");
    expect(enabledMcpServers(config)).toEqual(["a", "b"]);
    expect(isSkillEnabled(config, "s", "public")).toBe(false);
  });

  it("reports invalid JSON and schema errors naming the file", () => {
    const file = path.join(dir, "bad.json");
    writeFileSync(file, "{nope");
    expect(() => parseExtensionsConfigText(readFileSync(file, "utf8"), file, {})).toThrow(/is not valid JSON/);
    writeFileSync(file, JSON.stringify({ mcpServers: { a: { args: "not-a-list" } } }));
    expect(() => parseExtensionsConfigText(readFileSync(file, "utf8"), file, {})).toThrow(new RegExp(`Failed to load extensions config from ${file}`));
  });
});
