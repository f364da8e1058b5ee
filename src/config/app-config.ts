// Port of DeerFlow config/app_config.py: load, cache with content-signature reload, injection and
// context-local override. Differs from upstream on purpose: a failed reload keeps the last
// good config (and reports it) instead of raising on every call.
import { readFileSync } from "node:fs";
import { parse as parseYaml, YAMLParseError } from "yaml";
import type { z } from "zod";
import { ContextSlot } from "../context-slot.js";
import { ConfigError } from "../errors.js";
import { checkConfigVersion } from "./config-version.js";
import { getLogger } from "../logger.js";
import { formatKeyPath, substituteEnv } from "./env-substitution.js";
import { unsupportedCommunityTools } from "../web/catalog.js";
import { resolveConfigPath } from "./paths.js";
import { configStableMs, WatchedFile } from "./watched-file.js";
import { modelPathProblem } from "../models/model-catalog.js";
import { checkConfigKeys } from "./config-keys.js";
import { AppConfigSchema, brandAppConfig, STARTUP_ONLY_FIELDS, type AppConfig, type StartupOnlyField } from "./schema.js";

export type { FileSignature } from "./watched-file.js";

/** What the cache currently serves and whether the file on disk is healthy. */
export interface AppConfigStatus {
  /** Path of the file the served config came from (null when injected with `setAppConfig`). */
  path: string | null;
  /** Message of the last failed (re)load, or null when the served config matches the file. */
  error: string | null;
  /** A changed config.yaml waits out its stability period (`DEER_FLOW_CONFIG_STABLE_MS`); the last good is served. */
  pending: boolean;
}

/** The outcome of a reload of the config file: `success`, or `failure` (once per distinct failure). */
export type AppConfigReloadResult = "success" | "failure";

const reloadListeners = new Set<(result: AppConfigReloadResult) => void>();

/**
 * Calls `listener` after every reload of the config file (not the first load): `success`, or `failure` once per
 * distinct failure (as it is logged). Listeners must not throw. @returns a function that removes the listener.
 */
export function onAppConfigReload(listener: (result: AppConfigReloadResult) => void): () => void {
  reloadListeners.add(listener);
  return () => reloadListeners.delete(listener);
}

function notifyReload(result: AppConfigReloadResult): void {
  for (const listener of reloadListeners) listener(result);
}

/** config.yaml as the process serves it: reload rules on top of the shared watched-file helper. */
const file = new WatchedFile<AppConfig>({
  parse(text, path, previous) {
    if (!previous) return parseAppConfigText(text, path);
    const config = applyReloadBoundary(previous, parseAppConfigText(text, path));
    // An emptied file (an editor truncating before it writes, a bad merge) would fail every run: keep serving.
    if (previous.models.length > 0 && config.models.length === 0) {
      throw new ConfigError(`${path} has no models configured; keeping the last good config`, { path });
    }
    return config;
  },
  onFailure: (message) => {
    getLogger().error({ err: message }, "config reload failed; keeping the last good config");
    notifyReload("failure");
  },
  onReload: (path) => {
    getLogger().info({ path }, "config reloaded");
    notifyReload("success");
  },
  quietMs: () => configStableMs(),
});
/** A config installed with `setAppConfig` (served instead of the file until reset). */
let injected: AppConfig | null = null;
const warnedKeys = new Set<string>();
/**
 * The async context's config state: an override stack (`withAppConfig`, `pushCurrentAppConfig`) and, inside
 * {@link withPinnedAppConfig}, the pin holding the first config the file served there.
 */
interface ConfigContext {
  stack: (AppConfig | null)[];
  current: AppConfig | null;
  pin?: { config: AppConfig | null };
}
const configSlot = new ContextSlot<ConfigContext>("deerflow.appConfig");

const ENV_SOURCED = new WeakMap<object, ReadonlySet<string>>();

/**
 * The keys of a parsed config entry (a `models[]` item) whose values were `$VAR`s filled from the environment;
 * empty for anything else. Responses leave these values out (issue 13: no response carries an environment value).
 */
export function envSourcedFields(entry: object): ReadonlySet<string> {
  return ENV_SOURCED.get(entry) ?? new Set();
}

/**
 * Parses and validates config text. Top-level `null` values are dropped first (a section whose entries are all
 * commented out falls back to its default), then `$VAR`s are substituted, then the schema applies.
 * @param text YAML source. @param path File path used in error messages.
 * @throws ConfigError naming the file and the offending key (YAML syntax, unset variable, schema violation).
 */
export function parseAppConfigText(text: string, path: string, env: NodeJS.ProcessEnv = process.env): AppConfig {
  let raw: unknown;
  try {
    raw = parseYaml(text) ?? {};
  } catch (err) {
    const where = err instanceof YAMLParseError && err.linePos ? ` (line ${err.linePos[0].line})` : "";
    // The yaml library's message is a sentence ending in ":" followed by a source excerpt: keep the whole sentence.
    const sentence = (err as Error).message.split("\n\n")[0].replace(/\s+/g, " ").trim().replace(/:$/, "");
    throw new ConfigError(`Invalid YAML in ${path}${where}: ${sentence}`, { path, cause: err });
  }
  if (typeof raw !== "object" || Array.isArray(raw)) throw new ConfigError(`${path}: the top level must be a mapping`, { path });
  const data: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(raw as Record<string, unknown>)) if (v !== null) data[k] = v;
  let substituted: unknown;
  try {
    substituted = substituteEnv(data, env);
  } catch (err) {
    throw new ConfigError(`${path}: ${(err as Error).message}`, { path, cause: err });
  }
  refuseUnsupportedKeys(substituted as Record<string, unknown>, path, env);
  const parsed = AppConfigSchema.safeParse(substituted);
  if (!parsed.success) throw new ConfigError(`Invalid config ${path}: ${formatIssues(parsed.error.issues)}`, { path, cause: parsed.error });
  const unsupported = unsupportedCommunityTools(parsed.data.tools);
  if (unsupported.length) {
    throw new ConfigError(`${path}: tools: ${unsupported.map((u) => `'${u}'`).join(", ")} ${unsupported.length === 1 ? "is a DeerFlow tool" : "are DeerFlow tools"} that deerflow-gateway does not offer; remove or comment out ${unsupported.length === 1 ? "that entry" : "those entries"} (see docs/research-tools.md)`, { path });
  }
  const badModels = parsed.data.models.flatMap((m) => (modelPathProblem(m.use) ? [`model '${m.name}': ${modelPathProblem(m.use)}`] : []));
  if (badModels.length) throw new ConfigError(`${path}: ${badModels.join("; ")} (see docs/models.md)`, { path });
  const config = brandAppConfig(parsed.data);
  // Remember which model fields came from the environment, so responses can leave them out.
  const rawModels = Array.isArray(data.models) ? (data.models as unknown[]) : [];
  config.models.forEach((model, i) => {
    const raw = rawModels[i] as Record<string, unknown> | undefined;
    const fields = new Set(Object.keys(raw ?? {}).filter((k) => typeof raw![k] === "string" && (raw![k] as string).startsWith("$")));
    if (fields.size) ENV_SOURCED.set(model, fields);
  });
  if (config.models.length === 0) getLogger().warn({ path }, "No models are configured. Add at least one entry under `models:`.");
  checkConfigVersion(data.config_version, path);
  return config;
}

/**
 * Refuses keys this gateway does not implement (see config-keys.ts): unknown keys and typos (with the closest known
 * key), and sections that turn on a feature that is not offered. `DEER_FLOW_IGNORE_UNSUPPORTED=key,...` (key paths
 * as the message names them) lets an operator start anyway: each ignored key is logged at error level, once.
 * @throws ConfigError naming every refused key and how to start anyway.
 */
function refuseUnsupportedKeys(raw: Record<string, unknown>, path: string, env: NodeJS.ProcessEnv): void {
  const problems = checkConfigKeys(raw, AppConfigSchema.shape as Record<string, z.ZodType>);
  if (!problems.length) return;
  const ignored = new Set((env.DEER_FLOW_IGNORE_UNSUPPORTED ?? "").split(",").map((k) => k.trim()).filter(Boolean));
  const refused = problems.filter((p) => !ignored.has(p.key));
  for (const p of problems) {
    if (refused.includes(p) || warnedKeys.has(p.key)) continue;
    warnedKeys.add(p.key);
    getLogger().error({ key: p.key, path }, `DEER_FLOW_IGNORE_UNSUPPORTED: starting anyway with ${p.message}; this setting has NO effect`);
  }
  if (!refused.length) return;
  throw new ConfigError(`${path}: ${refused.map((p) => p.message).join("; ")}. To start anyway, set DEER_FLOW_IGNORE_UNSUPPORTED=${refused.map((p) => p.key).join(",")}`, { path });
}

/** Formats zod issues as `models[0].name: <message>; ...`. */
function formatIssues(issues: z.core.$ZodIssue[]): string {
  return issues.map((i) => `${formatKeyPath(i.path)}: ${i.message}`).join("; ");
}

/**
 * Loads a config file from disk, bypassing the cache. Mirrors DeerFlow `AppConfig.from_file`.
 * @param path Explicit file; when omitted the path is resolved (see `resolveConfigPath`).
 * @throws ConfigError when the file is missing or invalid.
 */
export function loadAppConfig(path?: string): AppConfig {
  const resolved = resolveConfigPath(path);
  let text: string;
  try {
    text = readFileSync(resolved, "utf8");
  } catch (err) {
    throw new ConfigError(`Cannot read config file ${resolved}: ${(err as Error).message}`, { path: resolved, cause: err });
  }
  return parseAppConfigText(text, resolved);
}

/**
 * The current AppConfig. Order (mirrors DeerFlow `get_app_config`): an async-context override
 * (`withAppConfig` / `pushCurrentAppConfig`) wins, then a config injected with `setAppConfig`, then the file:
 * its path is resolved and its `(mtime, size, sha256)` signature computed on every call from a read during which
 * the file did not change (a file being written keeps the last good config served); an unchanged file
 * returns the **same object** (callers may use identity as a cache key), a different path or signature reloads.
 * A read that raced an in-place edit is retried, never served. A failed reload keeps serving the last good config
 * and records the error (see `getAppConfigStatus`); so does a reload that would drop every model of a config
 * that had some. Inside {@link withPinnedAppConfig} the file is read once: later calls there return that config.
 * @throws ConfigError only when no config was ever loaded (first call) and the file cannot be loaded.
 */
export function getAppConfig(): AppConfig {
  const context = configSlot.get();
  if (context?.current) return context.current;
  if (injected) return injected;
  if (context?.pin?.config) return context.pin.config;
  const config = readConfigFile();
  if (context?.pin) context.pin.config = config;
  return config;
}

/** The config file's current value (see {@link getAppConfig}). */
function readConfigFile(): AppConfig {
  let path: string;
  try {
    path = resolveConfigPath();
  } catch (err) {
    return file.fail(ConfigError.isInstance(err) ? err : new ConfigError(`Cannot read config file: ${(err as Error).message}`, { cause: err }));
  }
  try {
    return file.read(path);
  } catch (err) {
    if (ConfigError.isInstance(err)) throw err;
    throw new ConfigError(`Cannot read config file ${path}: ${(err as Error).message}`, { path, cause: err });
  }
}

/**
 * Keeps the running value of every restart-only field (`STARTUP_ONLY_FIELDS`) in a reloaded config, logging a
 * warning naming each field that changed and why it needs a restart. Returns `next` itself when nothing changed.
 * Mirrors DeerFlow `reload_boundary.py`.
 */
export function applyReloadBoundary(previous: AppConfig, next: AppConfig): AppConfig {
  const changed = (Object.keys(STARTUP_ONLY_FIELDS) as StartupOnlyField[]).filter(
    (field) => JSON.stringify(previous[field] ?? null) !== JSON.stringify(next[field] ?? null),
  );
  if (!changed.length) return next;
  const kept: Record<string, unknown> = { ...next };
  for (const field of changed) {
    getLogger().warn({ field, reason: STARTUP_ONLY_FIELDS[field] }, `config field '${field}' changed but needs a restart (${STARTUP_ONLY_FIELDS[field]}); keeping the running value`);
    kept[field] = previous[field];
  }
  return brandAppConfig(kept as AppConfig);
}

/** What `getAppConfig()` serves: the source path and the last reload error (null when healthy). */
export function getAppConfigStatus(): AppConfigStatus {
  return injected ? { path: null, error: null, pending: false } : file.status();
}

/** Installs `config` as the process config: `getAppConfig()` returns it and never touches the file until reset. */
export function setAppConfig(config: AppConfig): void {
  injected = config;
}

/** Clears the cache and any injected config; the next `getAppConfig()` loads from the file. */
export function resetAppConfig(): void {
  injected = null;
  file.reset();
}

/** Runs `fn` with `config` as the override for everything in its async context (stack semantics, no leaks). */
export function withAppConfig<T>(config: AppConfig, fn: () => T): T {
  const outer = configSlot.get();
  return configSlot.run({ stack: [...(outer?.stack ?? []), outer?.current ?? null], current: config, pin: outer?.pin }, fn);
}

/**
 * Runs `fn` with the file config pinned for its async context: the first `getAppConfig()` there reads the file as
 * usual and every later one returns that same config without touching the file. The gateway runs each run in one,
 * so the run's build, middlewares, tools and subagents all see one config version, as DeerFlow's worker pins the
 * run's config in its context (`push_current_app_config`), and a config edit reaches the next run. It also spares
 * the file checks of the several reads a run makes (an `access` and a `stat` each). Overrides set inside
 * (`withAppConfig`, `pushCurrentAppConfig`) and `setAppConfig` still win. Work started inside that outlives `fn`
 * (a debounced memory update) keeps the pin.
 */
export function withPinnedAppConfig<T>(fn: () => T): T {
  const outer = configSlot.get();
  return configSlot.run({ stack: [...(outer?.stack ?? [])], current: outer?.current ?? null, pin: { config: null } }, fn);
}

/**
 * Makes `config` the override of the current async context, saving the previous one (DeerFlow
 * `push_current_app_config`). Meant for use inside a `withAppConfig` scope; outside one it enters a new store for
 * the rest of the current async context (`ContextSlot.enterWith`).
 */
export function pushCurrentAppConfig(config: AppConfig): void {
  const store = configSlot.get();
  if (!store) {
    configSlot.enterWith({ stack: [null], current: config });
    return;
  }
  store.stack.push(store.current);
  store.current = config;
}

/** Restores the override saved by the matching push; popping an empty stack clears the override (no error). */
export function popCurrentAppConfig(): void {
  const store = configSlot.get();
  if (!store) return;
  store.current = store.stack.length ? (store.stack.pop() ?? null) : null;
}

/** The active override of this async context, or null. */
export function peekCurrentAppConfig(): AppConfig | null {
  return configSlot.get()?.current ?? null;
}
