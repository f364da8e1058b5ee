// extensions_config.json as an agent build reads it (DeerFlow re-reads it from disk per build, config.md 11.4).
import { readFileSync } from "node:fs";
import { EMPTY_EXTENSIONS_CONFIG, ExtensionsConfigSchema, resolveExtensionsConfigPath, substituteEnvLenient, type ExtensionsConfig } from "../config/extensions-config.js";
import { getLogger } from "../logger.js";
import { contentSignature } from "./mcp-tools.js";

let parsed: { path: string; signature: string; config: ExtensionsConfig } | null = null;
let lastGood: ExtensionsConfig | null = null;
let lastError: string | null = null;

/**
 * The extensions config for one agent build. The file is read on every call (it changes independently of
 * config.yaml: skill toggles, MCP edits, other processes) and parsed again only when its content signature
 * (SHA-256) changes. No file gives the empty config. A file that cannot be read or parsed keeps the last good
 * config (the empty one if there never was one), and the error is logged once per distinct failure, so a broken
 * edit neither fails runs nor drops the MCP tools in use.
 */
export function readExtensionsForBuild(): ExtensionsConfig {
  try {
    const file = resolveExtensionsConfigPath();
    if (!file) {
      lastError = null;
      return structuredClone(EMPTY_EXTENSIONS_CONFIG);
    }
    const text = readFileSync(file, "utf8");
    const signature = contentSignature(text);
    if (parsed && parsed.path === file && parsed.signature === signature) return parsed.config;
    let raw: unknown;
    try {
      raw = JSON.parse(text);
    } catch (err) {
      throw new Error(`${file} is not valid JSON: ${(err as Error).message}`);
    }
    const result = ExtensionsConfigSchema.safeParse(substituteEnvLenient(raw));
    if (!result.success) throw new Error(`${file}: ${result.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ")}`);
    parsed = { path: file, signature, config: result.data };
    lastGood = result.data;
    lastError = null;
    return result.data;
  } catch (err) {
    const message = (err as Error).message;
    if (message !== lastError) {
      lastError = message;
      getLogger().warn({ err: message }, `extensions config cannot be used; keeping the last good one: ${message}`);
    }
    return lastGood ?? structuredClone(EMPTY_EXTENSIONS_CONFIG);
  }
}
