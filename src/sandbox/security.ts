// Port of DeerFlow sandbox/security.py (host bash gating) and tools/tools.py `_is_host_bash_tool`.
import type { AppConfig } from "../config/schema.js";
import { getLogger } from "../logger.js";
import { bubblewrapStatus } from "./bubblewrap.js";
import { resolveMounts } from "./mounts.js";
import { LocalSandboxProvider } from "./local-provider.js";
import { BubblewrapSandboxProvider } from "./bwrap-provider.js";
import type { SandboxAuditRecord } from "./bwrap-sandbox.js";
import { assertSandboxUseOffered, AUTO_PROVIDER_USES, BUBBLEWRAP_PROVIDER_USES, createAioProvider, isAioProviderUse } from "./provider-choice.js";
import type { AioSandboxProvider } from "./aio-provider.js";

export { AUTO_PROVIDER_USES, BUBBLEWRAP_PROVIDER_USES } from "./provider-choice.js";

/** The gateway's sandbox provider: the host directories (plain or in bubblewrap), or DeerFlow's container sandbox. */
export type GatewaySandboxProvider = LocalSandboxProvider | AioSandboxProvider;

/** The tool result of a refused host bash call (DeerFlow `LOCAL_HOST_BASH_DISABLED_MESSAGE`). */
export const LOCAL_HOST_BASH_DISABLED_MESSAGE =
  "Host bash execution is disabled for LocalSandboxProvider because it is not a secure sandbox boundary. " +
  "Set sandbox.allow_host_bash: true only in a fully trusted local environment.";

/** `use:` paths of the bash tool (DeerFlow's and this package's). */
export const BASH_TOOL_USES: ReadonlySet<string> = new Set([
  "deerflow.sandbox.tools:bash_tool",
  "deerflow-gateway/sandbox:bashTool",
]);

/** Whether `sandbox.use` selects the bubblewrap provider here (bubblewrap, or auto where bwrap works). */
export function isIsolatedSandbox(appConfig: Pick<AppConfig, "sandbox">): boolean {
  const use = appConfig.sandbox?.use ?? "";
  return BUBBLEWRAP_PROVIDER_USES.has(use) || (AUTO_PROVIDER_USES.has(use) && bubblewrapStatus().available);
}

/**
 * Whether bash may run: always with an isolated provider (the bubblewrap provider, or DeerFlow's container
 * sandbox: upstream gives bash whenever the sandbox is not the local one), else only when
 * `sandbox.allow_host_bash` is true. Mirrors DeerFlow `is_host_bash_allowed`.
 */
export function isHostBashAllowed(appConfig: Pick<AppConfig, "sandbox">): boolean {
  return appConfig.sandbox?.allow_host_bash === true || isIsolatedSandbox(appConfig) || isAioProviderUse(appConfig.sandbox?.use);
}

/** True for a configured tool that runs host bash: group `bash`, or the bash tool's `use:` (DeerFlow `_is_host_bash_tool`). */
export function isHostBashTool(entry: { group?: string; use?: string }): boolean {
  return entry.group === "bash" || BASH_TOOL_USES.has(entry.use ?? "");
}

/**
 * The process's sandbox provider for `sandbox.use`: DeerFlow's container sandbox
 * (`deerflow.community.aio_sandbox:AioSandboxProvider`) with `base_url` / `provisioner_url`; the bubblewrap provider
 * for its `use:` (refusing to start, SandboxUnavailableError, where bwrap does not work) and for the auto `use:`
 * where bwrap works (else the local one, logged); the local provider otherwise. Any other provider stops the start
 * ({@link assertSandboxUseOffered}). `onAudit` receives the bubblewrap provider's per-command records.
 * Every thread's local sandbox also sees the skills root read-only at `skills.container_path` (DeerFlow's
 * `/mnt/skills`), its user's custom skills at `<that path>/custom` (see `userSkillMounts`) and the valid
 * `sandbox.mounts` entries (bad ones are logged and skipped, see `resolveMounts`).
 * @param home Runtime home holding the thread directories.
 * @param skillsHostRoot The skills root on the host (null: no skills mount).
 * @throws ConfigError for a provider this gateway does not offer.
 */
export function createSandboxProvider(
  appConfig: Pick<AppConfig, "sandbox"> & Partial<Pick<AppConfig, "skills">>,
  home: string,
  skillsHostRoot: string | null = null,
  onAudit?: (record: SandboxAuditRecord) => void,
): GatewaySandboxProvider {
  const sandbox = appConfig.sandbox;
  if (sandbox) assertSandboxUseOffered(sandbox);
  const use = sandbox?.use ?? "";
  const mounts = resolveMounts({ mounts: sandbox?.mounts ?? [], skillsHostRoot, skillsContainerPath: appConfig.skills?.container_path });
  const skillsVirtual = (appConfig.skills?.container_path ?? "/mnt/skills").replace(/\/+$/, "");
  const base = { baseDir: home, mounts, userSkills: { hostRoot: skillsHostRoot, virtual: skillsVirtual } };
  if (sandbox && isAioProviderUse(use)) {
    const aio = createAioProvider(sandbox, new LocalSandboxProvider(base), skillsVirtual);
    getLogger().info({ mode: aio.mode }, "sandbox: DeerFlow's container sandbox (aio_sandbox) over its HTTP API; bash runs there");
    return aio;
  }
  if (AUTO_PROVIDER_USES.has(use) && !bubblewrapStatus().available) {
    getLogger().warn({ reason: bubblewrapStatus().reason }, `sandbox.use AutoSandboxProvider: bubblewrap does not work here (${bubblewrapStatus().reason}); using the local provider (no bash)`);
  }
  if (isIsolatedSandbox(appConfig)) {
    return new BubblewrapSandboxProvider({ ...base, network: sandbox?.network, limits: sandbox?.limits, pidsCgroup: sandbox?.pids_cgroup, onAudit });
  }
  if (sandbox?.allow_host_bash === true) warnAboutHostBash();
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
