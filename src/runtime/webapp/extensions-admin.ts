// Settings writes to extensions_config.json (DeerFlow app/gateway/routers/mcp.py and skills.py): skill toggles
// and MCP server configs. The raw JSON is read, changed and written back atomically (temp + rename), keeping
// every key this gateway does not model; secrets are masked on the way out and preserved on the way back.
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { atomicWriteFile } from "../../config/atomic-write.js";
import { ExtensionsConfigSchema, resolveExtensionsConfigPath, type ExtensionsConfig } from "../../config/extensions-config.js";
import { getProjectRoot } from "../../config/paths.js";
import { BadRequestError, ConfigError, NotFoundError, ValidationError } from "../../errors.js";
import { sharedMcpToolCache } from "../../tools/mcp-tools.js";
import { readExtensionsForBuild } from "../../tools/read-extensions.js";

/** Upstream `_MASKED_VALUE`. */
export const MASKED = "***";
/** Upstream `_SENSITIVE_EXTRA_KEY_RE`, applied to the snake_cased key. */
const SENSITIVE_KEY = /(^|_)(api_key|apikey|access_key|private_key|client_secret|secret|token|password|passwd|credential|credentials|authorization|bearer)(_|$)/i;
/** Server keys whose every value is a secret (env vars, HTTP headers). */
const ALL_SECRET_MAPS = ["env", "headers"];
/** OAuth fields never shown. */
const OAUTH_SECRETS = ["client_secret", "refresh_token"];

const snake = (key: string) =>
  key.replace(/(.)([A-Z][a-z]+)/g, "$1_$2").replace(/([a-z0-9])([A-Z])/g, "$1_$2").toLowerCase().replace(/[^a-z0-9]+/g, "_").replace(/^_+|_+$/g, "");

/** Whether a config key names a secret (upstream `_is_sensitive_extra_key`). */
export function isSensitiveKey(key: string): boolean {
  return SENSITIVE_KEY.test(snake(key));
}

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);

function maskNested(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(maskNested);
  if (isObject(value)) return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, isSensitiveKey(k) ? MASKED : maskNested(v)]));
  return value;
}

/** A server config as `GET /api/mcp/config` shows it: env and header values, OAuth secrets, secret-named keys masked. */
export function maskServer(server: Json): Json {
  const out: Json = {};
  for (const [key, value] of Object.entries(server)) {
    if (ALL_SECRET_MAPS.includes(key) && isObject(value)) out[key] = Object.fromEntries(Object.keys(value).map((k) => [k, MASKED]));
    else if (key === "oauth" && isObject(value)) out[key] = Object.fromEntries(Object.entries(value).map(([k, v]) => [k, OAUTH_SECRETS.includes(k) ? null : v]));
    else out[key] = isSensitiveKey(key) ? MASKED : maskNested(value);
  }
  return out;
}

/**
 * Merges an incoming server config over the stored one: a masked value (`***`) keeps the stored secret; a masked
 * value with nothing stored is refused (upstream `_merge_preserving_secrets`).
 * @throws BadRequestError (400) for a masked value with no stored value.
 */
export function mergeServer(name: string, incoming: Json, existing: Json | undefined): Json {
  const merge = (key: string, value: unknown, stored: unknown, present: boolean, secret: boolean): unknown => {
    if (value === MASKED && secret) {
      if (present) return stored;
      throw new BadRequestError(`Cannot set '${name}.${key}' to the masked value '${MASKED}'; provide a real value.`);
    }
    if (isObject(value)) {
      const inner = isObject(stored) ? stored : {};
      return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, merge(k, v, inner[k], k in inner, secret || isSensitiveKey(k))]));
    }
    return value;
  };
  const out: Json = {};
  for (const [key, value] of Object.entries(incoming)) {
    const stored = existing?.[key];
    if (key === "oauth" && isObject(value)) {
      const storedOauth = isObject(stored) ? stored : {};
      // OAuth secrets are shown as null: null (or absent) keeps the stored secret.
      out[key] = { ...value, ...Object.fromEntries(OAUTH_SECRETS.filter((k) => value[k] == null && storedOauth[k] != null).map((k) => [k, storedOauth[k]])) };
      continue;
    }
    out[key] = merge(key, value, stored, existing !== undefined && key in existing, ALL_SECRET_MAPS.includes(key) || isSensitiveKey(key));
  }
  return out;
}

/** The raw extensions config file and where it lives (created at `<project root>/extensions_config.json`). */
export function readRawExtensions(): { file: string; data: Json } {
  const found = resolveExtensionsConfigPath();
  const file = found ?? path.join(getProjectRoot(), "extensions_config.json");
  if (!existsSync(file)) return { file, data: {} };
  let data: unknown;
  try {
    data = JSON.parse(readFileSync(file, "utf8"));
  } catch (err) {
    throw new ConfigError(`Extensions config ${file} is not valid JSON: ${(err as Error).message}`, { path: file });
  }
  if (!isObject(data)) throw new ConfigError(`Extensions config ${file} is not a JSON object`, { path: file });
  return { file, data };
}

/**
 * Validates and writes the whole raw config atomically. `mcp_servers` is normalised to `mcpServers`.
 * @throws ValidationError (422) when the result would not load.
 */
export function writeRawExtensions(file: string, data: Json): void {
  if (data.mcpServers === undefined && data.mcp_servers !== undefined) data.mcpServers = data.mcp_servers;
  delete data.mcp_servers;
  const parsed = ExtensionsConfigSchema.safeParse(data);
  if (!parsed.success) throw new ValidationError(`Invalid extensions config: ${parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ")}`);
  atomicWriteFile(file, `${JSON.stringify(data, null, 2)}\n`);
}

/** The raw `mcpServers` map of the stored config. */
export function rawServers(data: Json): Record<string, Json> {
  const servers = data.mcpServers ?? data.mcp_servers;
  return isObject(servers) ? (servers as Record<string, Json>) : {};
}

/** Sets `skills.<name>.enabled` (the name must exist: checked by the caller) and writes the file. */
export function setSkillEnabled(name: string, enabled: boolean): void {
  const { file, data } = readRawExtensions();
  const skills = isObject(data.skills) ? (data.skills as Record<string, Json>) : {};
  skills[name] = { ...(isObject(skills[name]) ? skills[name] : {}), enabled };
  data.skills = skills;
  writeRawExtensions(file, data);
}

/**
 * Replaces the MCP servers with `incoming` (secrets merged from the stored config), keeping every other key.
 * @returns the stored servers, masked.
 */
export function replaceMcpServers(incoming: Record<string, Json>): Record<string, Json> {
  const { file, data } = readRawExtensions();
  const stored = rawServers(data);
  data.mcpServers = Object.fromEntries(Object.entries(incoming).map(([name, server]) => [name, mergeServer(name, server, stored[name])]));
  delete data.mcp_servers;
  writeRawExtensions(file, data);
  return maskedServers();
}

/**
 * Enables or disables one MCP server.
 * @throws NotFoundError (404) for an unknown server.
 */
export function setMcpServerEnabled(name: string, enabled: boolean): Record<string, Json> {
  const { file, data } = readRawExtensions();
  const servers = rawServers(data);
  if (!isObject(servers[name])) throw new NotFoundError(`MCP server '${name}' not found`);
  servers[name].enabled = enabled;
  data.mcpServers = servers;
  delete data.mcp_servers;
  writeRawExtensions(file, data);
  return maskedServers();
}

/** The stored servers as the API shows them (defaults applied, secrets masked). */
export function maskedServers(): Record<string, Json> {
  const { data } = readRawExtensions();
  const parsed = ExtensionsConfigSchema.safeParse(data);
  const servers = parsed.success ? parsed.data.mcpServers : {};
  return Object.fromEntries(Object.entries(servers).map(([name, s]) => [name, maskServer(s as Json)]));
}

/** The extensions config as the next agent build reads it (skill enabled states, MCP servers). */
export function currentExtensions(): ExtensionsConfig {
  return readExtensionsForBuild();
}

/** Drops the cached MCP clients so the next run reconnects with the current config. */
export function resetMcpToolCache(): Promise<void> {
  return sharedMcpToolCache.close();
}
