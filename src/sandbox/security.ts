// Port of DeerFlow sandbox/security.py (host bash gating) and tools/tools.py `_is_host_bash_tool`.
import type { AppConfig } from "../config/schema.js";
import { getLogger } from "../logger.js";
import { bubblewrapStatus } from "./bubblewrap.js";
import { resolveMounts } from "./mounts.js";
import { LocalSandboxProvider } from "./local-provider.js";
import { BubblewrapSandboxProvider } from "./bwrap-provider.js";
import type { SandboxAuditRecord } from "./bwrap-sandbox.js";

/** The tool result of a refused host bash call (DeerFlow `LOCAL_HOST_BASH_DISABLED_MESSAGE`). */
export const LOCAL_HOST_BASH_DISABLED_MESSAGE =
  "Host bash execution is disabled for LocalSandboxProvider because it is not a secure sandbox boundary. " +
  "Set sandbox.allow_host_bash: true only in a fully trusted local environment.";

/** `use:` paths of the bash tool (DeerFlow's and this package's). */
export const BASH_TOOL_USES: ReadonlySet<string> = new Set([
  "deerflow.sandbox.tools:bash_tool",
  "deerflow-gateway/sandbox:bashTool",
]);

/** `use:` values that name the local provider (DeerFlow's two spellings and this package's). */
const LOCAL_PROVIDER_USES = new Set([
  "deerflow.sandbox.local:LocalSandboxProvider",
  "deerflow.sandbox.local.local_sandbox_provider:LocalSandboxProvider",
  "deerflow-gateway/sandbox:LocalSandboxProvider",
]);

/** `use:` of the bubblewrap provider (isolated; bash without opt-in). */
export const BUBBLEWRAP_PROVIDER_USES: ReadonlySet<string> = new Set(["deerflow-gateway/sandbox:BubblewrapSandboxProvider"]);
/** `use:` of the automatic choice: the bubblewrap provider where `bwrap` works, else the local one. */
export const AUTO_PROVIDER_USES: ReadonlySet<string> = new Set(["deerflow-gateway/sandbox:AutoSandboxProvider"]);

/** Whether `sandbox.use` selects an isolated provider here (bubblewrap, or auto where bwrap works). */
export function isIsolatedSandbox(appConfig: Pick<AppConfig, "sandbox">): boolean {
  const use = appConfig.sandbox?.use ?? "";
  return BUBBLEWRAP_PROVIDER_USES.has(use) || (AUTO_PROVIDER_USES.has(use) && bubblewrapStatus().available);
}

/**
 * Whether bash may run: always with an isolated provider (upstream gives bash whenever the sandbox is not the
 * local one), else only when `sandbox.allow_host_bash` is true. Mirrors DeerFlow `is_host_bash_allowed`.
 */
export function isHostBashAllowed(appConfig: Pick<AppConfig, "sandbox">): boolean {
  return appConfig.sandbox?.allow_host_bash === true || isIsolatedSandbox(appConfig);
}

/** True for a configured tool that runs host bash: group `bash`, or the bash tool's `use:` (DeerFlow `_is_host_bash_tool`). */
export function isHostBashTool(entry: { group?: string; use?: string }): boolean {
  return entry.group === "bash" || BASH_TOOL_USES.has(entry.use ?? "");
}

/**
 * The process's sandbox provider for `sandbox.use`: the bubblewrap provider for its `use:` (refusing to start,
 * SandboxUnavailableError, where bwrap does not work), for the auto `use:` where bwrap works (else the local one,
 * logged); the local provider otherwise. Another `use:` (e.g. DeerFlow's container sandbox) logs a warning and gets
 * the local provider, with host bash still gated by `allow_host_bash`. `onAudit` receives the bubblewrap
 * provider's per-command records.
 * Every thread's sandbox also sees the skills root read-only at `skills.container_path` (DeerFlow's
 * `/mnt/skills`), its user's custom skills at `<that path>/custom` (see `userSkillMounts`) and the valid
 * `sandbox.mounts` entries (bad ones are logged and skipped, see `resolveMounts`).
 * @param home Runtime home holding the thread directories.
 * @param skillsHostRoot The skills root on the host (null: no skills mount).
 */
export function createSandboxProvider(
  appConfig: Pick<AppConfig, "sandbox"> & Partial<Pick<AppConfig, "skills">>,
  home: string,
  skillsHostRoot: string | null = null,
  onAudit?: (record: SandboxAuditRecord) => void,
): LocalSandboxProvider {
  const use = appConfig.sandbox?.use ?? "";
  const isolated = BUBBLEWRAP_PROVIDER_USES.has(use) || AUTO_PROVIDER_USES.has(use);
  if (AUTO_PROVIDER_USES.has(use) && !bubblewrapStatus().available) {
    getLogger().warn({ reason: bubblewrapStatus().reason }, `sandbox.use AutoSandboxProvider: bubblewrap does not work here (${bubblewrapStatus().reason}); using the local provider (no bash)`);
  } else if (use && !isolated && !LOCAL_PROVIDER_USES.has(use)) {
    getLogger().warn({ use }, `sandbox provider '${use}' is not available in this release; using the local provider (host bash stays off unless sandbox.allow_host_bash is true)`);
  }
  if (appConfig.sandbox?.allow_host_bash === true && !isIsolatedSandbox(appConfig)) warnAboutHostBash();
  const mounts = resolveMounts({ mounts: appConfig.sandbox?.mounts ?? [], skillsHostRoot, skillsContainerPath: appConfig.skills?.container_path });
  const skillsVirtual = (appConfig.skills?.container_path ?? "/mnt/skills").replace(/\/+$/, "");
  const base = { baseDir: home, mounts, userSkills: { hostRoot: skillsHostRoot, virtual: skillsVirtual } };
  if (isIsolatedSandbox(appConfig)) {
    return new BubblewrapSandboxProvider({ ...base, network: appConfig.sandbox?.network, limits: appConfig.sandbox?.limits, onAudit });
  }
  return new LocalSandboxProvider(base);
}

/** What host bash protects, said once at start-up (and returned, for tests). */
export function warnAboutHostBash(): string {
  const status = bubblewrapStatus();
  if (status.available) {
    const message =
      "sandbox.allow_host_bash is on: bash runs inside bubblewrap (new namespaces, only the thread's /mnt/user-data writable, " +
      "system directories read-only, no network, empty environment). Not protected: CPU, memory and disk use, and kernel exploits.";
    getLogger().warn({ bwrap: status.path }, message);
    return message;
  }
  const message =
    `sandbox.allow_host_bash is on WITHOUT isolation (${status.reason}): bash runs on the host as the gateway's user. ` +
    "It can read every file that user can (config, API keys in /proc/<gateway pid>/environ, other threads' files), write " +
    "wherever that user can, reach the network and see other processes; the path checks on commands are easy to get " +
    "around (printf, base64, $'\\x2f'). Install bubblewrap (apt-get install bubblewrap) or use it only on a trusted machine.";
  getLogger().warn({ reason: status.reason }, message);
  return message;
}
