// Port of DeerFlow sandbox/local/local_sandbox_provider.py path mappings: the skills directory at
// `skills.container_path` (read-only) and `sandbox.mounts` (host directories at virtual paths), validated once.
import { accessSync, constants, mkdirSync, realpathSync, statSync } from "node:fs";
import path from "node:path";
import { userDir } from "../config/paths.js";
import { getLogger } from "../logger.js";
import { checkPathText, isWithin, SandboxPathError, VIRTUAL_ROOT } from "./paths.js";

/** One host directory visible in the sandbox at `virtual` (absolute, no trailing slash). `host` is a real path. */
export interface SandboxMount {
  virtual: string;
  host: string;
  readOnly: boolean;
}

/** Virtual prefixes a configured mount may not take (DeerFlow `_RESERVED_CONTAINER_PREFIXES`). */
const RESERVED = [VIRTUAL_ROOT, "/mnt/acp-workspace"];

const overlaps = (a: string, b: string) => a === b || a.startsWith(`${b}/`) || b.startsWith(`${a}/`) || b === "/" || a === "/";

/** Why a mount entry is refused, or null when it is usable. `taken` are the virtual paths already mapped. */
function mountProblem(m: { host_path: string; container_path: string }, taken: string[]): string | null {
  if (!path.isAbsolute(m.host_path)) return "host_path must be absolute";
  const container = m.container_path.replace(/\/+$/, "") || "/";
  try {
    checkPathText(container);
  } catch (err) {
    return `container_path is invalid: ${(err as Error).message}`;
  }
  if (!container.startsWith("/")) return "container_path must be absolute";
  if (container === "/") return "container_path cannot be /";
  const clash = [...RESERVED, ...taken].find((p) => overlaps(container, p));
  if (clash) return `container_path overlaps ${clash}`;
  try {
    if (!statSync(m.host_path).isDirectory()) return "host_path is not a directory";
    accessSync(m.host_path, constants.R_OK | constants.X_OK);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    return code === "ENOENT" ? "host_path does not exist" : `host_path is not readable (${code ?? "error"})`;
  }
  return null;
}

/**
 * The sandbox's extra mounts: the skills root at `skillsContainerPath` (read-only, when the directory exists),
 * then each `sandbox.mounts` entry that passes validation (absolute host directory that exists and is readable,
 * absolute container path not overlapping `/mnt/user-data`, `/mnt/acp-workspace`, the skills path or an earlier
 * mount). A refused entry is logged as a warning naming the entry and the reason, and skipped: a bad mount never
 * stops the gateway or a run (DeerFlow logs and skips as well).
 */
export function resolveMounts(options: {
  mounts: readonly { host_path: string; container_path: string; read_only?: boolean }[];
  skillsHostRoot?: string | null;
  skillsContainerPath?: string;
}): SandboxMount[] {
  const out: SandboxMount[] = [];
  const log = getLogger();
  const skillsVirtual = (options.skillsContainerPath ?? "/mnt/skills").replace(/\/+$/, "");
  if (options.skillsHostRoot) {
    try {
      if (statSync(options.skillsHostRoot).isDirectory()) out.push({ virtual: skillsVirtual, host: realpathSync(options.skillsHostRoot), readOnly: true });
    } catch {
      // No skills directory: nothing to show at the skills path.
    }
  }
  const taken = [skillsVirtual];
  for (const m of options.mounts) {
    const problem = mountProblem(m, taken);
    if (problem) {
      log.warn({ host_path: m.host_path, container_path: m.container_path }, `sandbox.mounts entry ${m.host_path} -> ${m.container_path} ignored: ${problem}`);
      continue;
    }
    const virtual = m.container_path.replace(/\/+$/, "");
    taken.push(virtual);
    out.push({ virtual, host: realpathSync(m.host_path), readOnly: m.read_only ?? false });
  }
  return out;
}

/** The mount a virtual path falls under (longest prefix), with the path's segments below it; null when none. */
export function findMount(mounts: readonly SandboxMount[], virtualPath: string): { mount: SandboxMount; segments: string[] } | null {
  const normalized = `/${virtualPath.split("/").filter((p) => p && p !== ".").join("/")}`;
  let best: SandboxMount | null = null;
  for (const m of mounts) if ((normalized === m.virtual || normalized.startsWith(`${m.virtual}/`)) && (!best || m.virtual.length > best.virtual.length)) best = m;
  if (!best) return null;
  return { mount: best, segments: normalized.slice(best.virtual.length).split("/").filter(Boolean) };
}

/** Virtual path of a real host path inside one of `mounts`, or null. */
export function mountVirtualPath(mounts: readonly SandboxMount[], hostPath: string): string | null {
  for (const m of mounts) {
    if (!isWithin(m.host, hostPath)) continue;
    const rel = path.relative(m.host, hostPath);
    return rel ? `${m.virtual}/${rel.split(path.sep).join("/")}` : m.virtual;
  }
  return null;
}

/** Error for a write under a read-only mount. */
export function readOnlyMountError(virtualPath: string): SandboxPathError {
  return new SandboxPathError(`Access denied: ${virtualPath} is on a read-only mount`);
}

/**
 * The skill mounts of one user (DeerFlow's user-scoped skills projection): their own custom skills
 * (`<home>/users/<user>/skills/custom`, created empty when missing so the mount always resolves) at
 * `<skills path>/custom`, shadowing the shared `custom/` directory, and the shared custom skills at
 * `<skills path>/legacy` (where the prompt locates legacy skills). Both read-only: the agent changes skills
 * through `skill_manage` only.
 */
export function userSkillMounts(home: string, userId: string, skillsHostRoot: string | null, skillsVirtual: string): SandboxMount[] {
  const out: SandboxMount[] = [];
  const own = path.join(userDir(home, userId), "skills", "custom");
  mkdirSync(own, { recursive: true });
  out.push({ virtual: `${skillsVirtual}/custom`, host: realpathSync(own), readOnly: true });
  if (skillsHostRoot) {
    const legacy = path.join(skillsHostRoot, "custom");
    try {
      if (statSync(legacy).isDirectory()) out.push({ virtual: `${skillsVirtual}/legacy`, host: realpathSync(legacy), readOnly: true });
    } catch {
      // No shared custom skills: nothing to show at <skills path>/legacy.
    }
  }
  return out;
}
