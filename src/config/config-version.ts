// Port of DeerFlow config/app_config.py `_check_config_version`: warn when config.yaml is older than the example.
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { parse as parseYaml } from "yaml";
import { getLogger } from "../logger.js";

/** How many directories, starting at the config file's own, are searched for `config.example.yaml`. */
const SEARCH_LEVELS = 5;

/** `config_version` as an integer: a number or a numeric string; anything else (missing, text) counts as 0. */
export function configVersionOf(raw: unknown): number {
  const n = typeof raw === "number" ? raw : typeof raw === "string" && /^\s*[+-]?\d+\s*$/.test(raw) ? Number(raw) : NaN;
  return Number.isInteger(n) ? n : 0;
}

/** The nearest `config.example.yaml` in `configPath`'s directory or up to four of its parents, or null. */
export function findExampleConfig(configPath: string): string | null {
  let dir = path.dirname(path.resolve(configPath));
  for (let i = 0; i < SEARCH_LEVELS; i++) {
    const candidate = path.join(dir, "config.example.yaml");
    if (existsSync(candidate)) return candidate;
    const parent = path.dirname(dir);
    if (parent === dir) break;
    dir = parent;
  }
  return null;
}

/**
 * Logs a warning when the loaded config's `config_version` is lower than that of the nearest `config.example.yaml`
 * (the example documents new sections; an older file may miss them). A missing or unreadable example, or a
 * version that is not a number, is silent or counts as 0: this never fails a load.
 * @param rawVersion the file's `config_version` value as parsed from YAML. @param configPath the loaded file.
 * @returns the warning text when one was logged, else null.
 */
export function checkConfigVersion(rawVersion: unknown, configPath: string): string | null {
  let example: number;
  try {
    const file = findExampleConfig(configPath);
    if (!file) return null;
    const doc = parseYaml(readFileSync(file, "utf8")) as { config_version?: unknown } | null;
    example = configVersionOf(doc && typeof doc === "object" ? doc.config_version : undefined);
  } catch {
    return null;
  }
  const user = configVersionOf(rawVersion);
  if (user >= example) return null;
  const text = `Your config.yaml (version ${user}) is outdated — the latest version is ${example}. Compare it with config.example.yaml and add the new sections you need.`;
  getLogger().warn({ path: configPath, config_version: user, latest: example }, text);
  return text;
}
