// Port of DeerFlow config/runtime_paths.py and the path parts of app_config.py / paths.py.
// The only module (with server-env.ts) that reads process.env for locations.
import { existsSync, statSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { ConfigError } from "../errors.js";

/**
 * The repository this code runs from: home of the shipped `config/config.yaml`. Two levels above `src/config/`
 * from sources, three from the compiled `dist/src/config/` (`npm start`).
 */
export const PACKAGE_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..", ...(import.meta.url.includes("/dist/src/") ? [".."] : []));

/**
 * The project root: `DEER_FLOW_PROJECT_ROOT` (absolute) when set, else the working directory.
 * Mirrors DeerFlow `runtime_paths.project_root`.
 * @throws ConfigError when the variable names a path that "does not exist" or is "not a directory".
 */
export function getProjectRoot(env: NodeJS.ProcessEnv = process.env): string {
  const raw = env.DEER_FLOW_PROJECT_ROOT?.trim();
  if (!raw) return process.cwd();
  const root = path.resolve(raw);
  if (!existsSync(root)) throw new ConfigError(`DEER_FLOW_PROJECT_ROOT '${root}' does not exist`, { code: "config_not_found" });
  if (!statSync(root).isDirectory()) throw new ConfigError(`DEER_FLOW_PROJECT_ROOT '${root}' is not a directory`);
  return root;
}

/**
 * The writable runtime home (checkpoint DB, thread directories): `DEER_FLOW_HOME` resolved against the working
 * directory, else `<project root>/.deer-flow`.
 */
export function getRuntimeHome(env: NodeJS.ProcessEnv = process.env): string {
  const raw = env.DEER_FLOW_HOME?.trim();
  return raw ? path.resolve(raw) : path.join(getProjectRoot(env), ".deer-flow");
}

/** Custom-agent store root: `DEER_FLOW_AGENTS_DIR`, else `<project root>/agents`. */
export function getAgentsDir(env: NodeJS.ProcessEnv = process.env): string {
  const raw = env.DEER_FLOW_AGENTS_DIR?.trim();
  return raw ? path.resolve(getProjectRoot(env), raw) : path.join(getProjectRoot(env), "agents");
}

/**
 * Skills root: `DEER_FLOW_SKILLS_DIR` (or DeerFlow's `DEER_FLOW_SKILLS_PATH`) relative to the project root,
 * else `<project root>/skills`, returned even when missing (a stable "no skills" location).
 */
export function getSkillsDir(env: NodeJS.ProcessEnv = process.env): string {
  const raw = (env.DEER_FLOW_SKILLS_DIR ?? env.DEER_FLOW_SKILLS_PATH)?.trim();
  return raw ? path.resolve(getProjectRoot(env), raw) : path.join(getProjectRoot(env), "skills");
}

/** The skills root of a config: `skills.path` (relative to the project root) when set, else {@link getSkillsDir}. */
export function getSkillsRoot(skills: { path?: string | null } | undefined, env: NodeJS.ProcessEnv = process.env): string {
  return skills?.path ? path.resolve(getProjectRoot(env), skills.path) : getSkillsDir(env);
}

/**
 * Resolves the `config.yaml` to load, first hit wins (mirrors DeerFlow `AppConfig.resolve_config_path`):
 * 1. `explicitPath` (must exist); 2. `DEER_FLOW_CONFIG_PATH` (must exist); 3. `<project root>/config.yaml`;
 * 4. `<project root>/config/config.yaml`; 5. the shipped `config/config.yaml` of this package.
 * @throws ConfigError (code `config_not_found`) naming the parameter or variable that points nowhere, or
 *   listing the searched locations.
 */
export function resolveConfigPath(explicitPath?: string | null, env: NodeJS.ProcessEnv = process.env): string {
  if (explicitPath) {
    const p = path.resolve(explicitPath);
    if (!existsSync(p)) throw new ConfigError(`Config file specified by param \`config_path\` not found at ${p}`, { path: p, code: "config_not_found" });
    return p;
  }
  const fromEnv = env.DEER_FLOW_CONFIG_PATH?.trim();
  if (fromEnv) {
    const p = path.resolve(fromEnv);
    if (!existsSync(p)) {
      throw new ConfigError(`Config file specified by environment variable \`DEER_FLOW_CONFIG_PATH\` not found at ${p}`, { path: p, code: "config_not_found" });
    }
    return p;
  }
  const root = getProjectRoot(env);
  const candidates = [path.join(root, "config.yaml"), path.join(root, "config", "config.yaml"), path.join(PACKAGE_ROOT, "config", "config.yaml")];
  for (const c of candidates) {
    if (isFile(c)) return c;
  }
  throw new ConfigError(`No config.yaml found; looked in: ${[...new Set(candidates)].join(", ")}. Set DEER_FLOW_CONFIG_PATH.`, {
    code: "config_not_found",
  });
}

function isFile(p: string): boolean {
  try {
    // No exception for a missing file: getAppConfig checks the candidates on every call.
    return statSync(p, { throwIfNoEntry: false })?.isFile() ?? false;
  } catch {
    return false;
  }
}

/** A user or thread id used as a path segment: letters, digits, `_` and `-`, 1-128 characters. */
const SAFE_ID = /^[A-Za-z0-9_-]{1,128}$/;

/**
 * Validates ids that become path segments under the runtime home.
 * @throws Error "Invalid <label> '<id>': must match ^[A-Za-z0-9_-]{1,128}$".
 */
function assertSafeSegment(label: string, id: string): void {
  if (!SAFE_ID.test(id)) throw new Error(`Invalid ${label} '${id}': must match ${SAFE_ID.source}`);
}

/**
 * A user's directory under the runtime home: `<home>/users/<user>` (memory, threads).
 * @throws Error for an id that is not a safe path segment.
 */
export function userDir(home: string, userId: string): string {
  assertSafeSegment("user id", userId);
  return path.join(home, "users", userId);
}

/**
 * A thread's directory: `<home>/users/<user>/threads/<thread>` (deleted with the thread).
 * @throws Error for an id that is not a safe path segment.
 */
export function threadDir(home: string, userId: string, threadId: string): string {
  assertSafeSegment("thread id", threadId);
  return path.join(userDir(home, userId), "threads", threadId);
}

/** Host directories of one thread's `/mnt/user-data` areas (DeerFlow `ThreadDataState`). */
export interface ThreadDataPaths {
  workspace_path: string;
  uploads_path: string;
  outputs_path: string;
}

/**
 * Host directories of one thread: `<home>/users/<user>/threads/<thread>/user-data/{workspace,uploads,outputs}`
 * (DeerFlow config/paths.py `Paths.sandbox_*_dir`).
 * @throws Error when an id is not a safe path segment (`^[A-Za-z0-9_-]{1,128}$`).
 */
export function threadDataPaths(home: string, userId: string, threadId: string): ThreadDataPaths {
  const root = path.join(threadDir(home, userId, threadId), "user-data");
  return { workspace_path: path.join(root, "workspace"), uploads_path: path.join(root, "uploads"), outputs_path: path.join(root, "outputs") };
}
