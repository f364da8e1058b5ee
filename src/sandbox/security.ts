// Port of DeerFlow sandbox/security.py (host bash gating) and tools/tools.py `_is_host_bash_tool`.
import type { AppConfig } from "../config/schema.js";
import { getLogger } from "../logger.js";
import { bubblewrapStatus } from "./bubblewrap.js";
import { resolveMounts } from "./mounts.js";
import { LocalSandboxProvider } from "./local-provider.js";
import { assertSandboxUseOffered, createAioProvider, isAioProviderUse } from "./provider-choice.js";
import type { AioSandboxProvider } from "./aio-provider.js";

/** The gateway's sandbox provider: the host directories, or DeerFlow's container sandbox over its API. */
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

/**
 * Whether `bash` may run: always in DeerFlow's container sandbox (its own boundary), on the local provider only
 * when `sandbox.allow_host_bash` is true. Mirrors DeerFlow `is_host_bash_allowed`.
 */
export function isHostBashAllowed(appConfig: Pick<AppConfig, "sandbox">): boolean {
  return appConfig.sandbox?.allow_host_bash === true || isAioProviderUse(appConfig.sandbox?.use);
}

/** True for a configured tool that runs host bash: group `bash`, or the bash tool's `use:` (DeerFlow `_is_host_bash_tool`). */
export function isHostBashTool(entry: { group?: string; use?: string }): boolean {
  return entry.group === "bash" || BASH_TOOL_USES.has(entry.use ?? "");
}

/**
 * The process's sandbox provider for `sandbox.use`: the local provider, or DeerFlow's container sandbox
 * (`deerflow.community.aio_sandbox:AioSandboxProvider`) with `base_url` / `provisioner_url`. Any other provider
 * stops the start ({@link assertSandboxUseOffered}).
 * Every thread's local sandbox also sees the skills root read-only at `skills.container_path` (DeerFlow's
 * `/mnt/skills`), its user's custom skills at `<that path>/custom` (see `userSkillMounts`) and the valid
 * `sandbox.mounts` entries (bad ones are logged and skipped, see `resolveMounts`).
 * @param home Runtime home holding the thread directories.
 * @param skillsHostRoot The skills root on the host (null: no skills mount).
 * @throws ConfigError for a provider this gateway does not offer.
 */
export function createSandboxProvider(appConfig: Pick<AppConfig, "sandbox"> & Partial<Pick<AppConfig, "skills">>, home: string, skillsHostRoot: string | null = null): GatewaySandboxProvider {
  const sandbox = appConfig.sandbox;
  if (sandbox) assertSandboxUseOffered(sandbox);
  const mounts = resolveMounts({ mounts: sandbox?.mounts ?? [], skillsHostRoot, skillsContainerPath: appConfig.skills?.container_path });
  const skillsVirtual = (appConfig.skills?.container_path ?? "/mnt/skills").replace(/\/+$/, "");
  const local = new LocalSandboxProvider({ baseDir: home, mounts, userSkills: { hostRoot: skillsHostRoot, virtual: skillsVirtual } });
  if (sandbox && isAioProviderUse(sandbox.use)) {
    const aio = createAioProvider(sandbox, local, skillsVirtual);
    getLogger().info({ mode: aio.mode }, "sandbox: DeerFlow's container sandbox (aio_sandbox) over its HTTP API; bash runs there");
    return aio;
  }
  if (isHostBashAllowed(appConfig)) warnAboutHostBash();
  return local;
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
