// The bubblewrap sandbox provider (`sandbox.use: deerflow-gateway/sandbox:BubblewrapSandboxProvider`): per-thread
// sandboxes like the local provider's, whose commands run isolated and bounded (src/sandbox/bwrap-sandbox.ts).
// DeerFlow's counterpart is its container sandbox (community/aio_sandbox); this one needs only `bwrap`.
import { getLogger } from "../logger.js";
import { bubblewrapStatus } from "./bubblewrap.js";
import { BubblewrapSandbox, type BubblewrapEnv, type SandboxAuditRecord } from "./bwrap-sandbox.js";
import { LocalSandboxProvider, type LocalSandboxProviderOptions } from "./local-provider.js";
import type { SandboxMount } from "./mounts.js";
import type { SandboxDirs } from "./paths.js";
import { openPidsRoot, PidsCgroups } from "./pids-cgroup.js";
import { SandboxConfigSchema, type SandboxLimitsConfig } from "./sandbox-config.js";

/** Options of {@link BubblewrapSandboxProvider}: the local provider's plus network, limits and the audit hook. */
export interface BubblewrapSandboxProviderOptions extends LocalSandboxProviderOptions {
  /** `sandbox.network` (default `none`). */
  network?: "none" | "full";
  /** `sandbox.limits` (defaults from the schema). */
  limits?: SandboxLimitsConfig;
  /** Called once per command (the gateway counts them in /metrics). */
  onAudit?: (record: SandboxAuditRecord) => void;
  /** `sandbox.pids_cgroup`: where the commands' pids groups are made; unset: the gateway's own pids cgroup. */
  pidsCgroup?: string;
  /** The pids groups to use, or why there are none (tests); default: {@link openPidsRoot} on this machine. */
  pidsCgroups?: PidsCgroups | { reason: string };
  /** Whether the gateway runs as root (tests); default: the process's real uid is 0. */
  root?: boolean;
}

/**
 * What bounds the number of processes of a command: `pids_cgroup` (a pids group per command; holds for root),
 * `rlimit` (`ulimit -u`, RLIMIT_NPROC; holds for a non-root gateway only) or `none` (a root gateway without a
 * writable pids cgroup: the kernel does not apply RLIMIT_NPROC to root, so only the timeout ends a fork bomb).
 */
export type ProcessLimitMode = "pids_cgroup" | "rlimit" | "none";

/** Thrown when bubblewrap cannot build a sandbox on this machine: the provider refuses to start. */
export class SandboxUnavailableError extends Error {}

/**
 * Sandbox provider whose `bash` runs in bubblewrap: new user/pid/ipc/uts/net namespaces, read-only system
 * directories, only the thread's `/mnt/user-data` writable, skills and `sandbox.mounts` bound as configured, an
 * empty environment, rlimits per command, a disk quota per thread and concurrency caps. The agent gets `bash`
 * without `allow_host_bash` (see `isHostBashAllowed`).
 * @throws SandboxUnavailableError (from the constructor) naming why bwrap cannot work here, or why the configured
 *   `sandbox.pids_cgroup` cannot be used, and the fix.
 */
export class BubblewrapSandboxProvider extends LocalSandboxProvider {
  override readonly kind: string = "bubblewrap";
  /** What enforces `sandbox.limits.processes` here (shown on /health as `sandbox_process_limit`). */
  readonly processLimit: ProcessLimitMode;
  /** Resolves once the stale pids groups of crashed gateways are removed (with how many). */
  readonly staleSwept: Promise<number>;
  private readonly env: BubblewrapEnv;

  constructor(options: BubblewrapSandboxProviderOptions = {}) {
    super(options);
    const status = bubblewrapStatus();
    if (!status.available) {
      throw new SandboxUnavailableError(
        `sandbox.use BubblewrapSandboxProvider cannot start: ${status.reason}. Fix: install bubblewrap (Debian: apt-get install bubblewrap) and allow ` +
          "unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1; in Docker run with --security-opt seccomp=unconfined or a profile allowing clone/unshare), " +
          "or use deerflow-gateway/sandbox:AutoSandboxProvider to fall back to the local provider (no bash) where bwrap does not work.",
      );
    }
    const defaults = SandboxConfigSchema.parse({});
    this.env = { bwrap: status.path!, network: options.network ?? defaults.network, limits: options.limits ?? defaults.limits, running: { total: 0 }, onAudit: options.onAudit };
    const pids = options.pidsCgroups ?? openPidsRoot(options.pidsCgroup);
    if (options.pidsCgroup && !(pids instanceof PidsCgroups)) {
      throw new SandboxUnavailableError(`sandbox.pids_cgroup ${options.pidsCgroup} cannot hold the sandbox's process limits: ${pids.reason}. Fix: name a writable cgroup directory (v1 pids hierarchy, or a delegated v2 group with pids available and no processes of its own), or remove the key`);
    }
    const root = options.root ?? process.getuid?.() === 0;
    if (pids instanceof PidsCgroups) {
      this.env.pids = pids;
      this.processLimit = "pids_cgroup";
      this.staleSwept = pids.sweepStale();
    } else {
      this.processLimit = root ? "none" : "rlimit";
      this.staleSwept = Promise.resolve(0);
      if (root) {
        getLogger().warn(
          { reason: pids.reason },
          `sandbox.limits.processes cannot be enforced: the gateway runs as root, the kernel does not apply RLIMIT_NPROC (ulimit -u) to root, and no writable pids cgroup was found (${pids.reason}). ` +
            "A fork bomb is bounded only by sandbox.bash_command_timeout. Fix: give the gateway a writable pids cgroup (cgroup v1 pids mounted read-write, or a delegated cgroup v2 subtree with pids enabled), or run it as a non-root user. See docs/sandbox.md",
        );
      }
    }
  }

  /** Commands running now across all threads. */
  get runningCommands(): number {
    return this.env.running.total;
  }

  protected override createSandbox(id: string, threadId: string, userId: string, dirs: SandboxDirs, mounts: readonly SandboxMount[]): BubblewrapSandbox {
    return new BubblewrapSandbox(id, threadId, userId, dirs, mounts, this.env);
  }
}
