// The bubblewrap sandbox provider (`sandbox.use: deerflow-gateway/sandbox:BubblewrapSandboxProvider`): per-thread
// sandboxes like the local provider's, whose commands run isolated and bounded (src/sandbox/bwrap-sandbox.ts).
// DeerFlow's counterpart is its container sandbox (community/aio_sandbox); this one needs only `bwrap`.
import { bubblewrapStatus } from "./bubblewrap.js";
import { BubblewrapSandbox, type BubblewrapEnv, type SandboxAuditRecord } from "./bwrap-sandbox.js";
import { LocalSandboxProvider, type LocalSandboxProviderOptions } from "./local-provider.js";
import type { SandboxMount } from "./mounts.js";
import type { SandboxDirs } from "./paths.js";
import { SandboxConfigSchema, type SandboxLimitsConfig } from "./sandbox-config.js";

/** Options of {@link BubblewrapSandboxProvider}: the local provider's plus network, limits and the audit hook. */
export interface BubblewrapSandboxProviderOptions extends LocalSandboxProviderOptions {
  /** `sandbox.network` (default `none`). */
  network?: "none" | "full";
  /** `sandbox.limits` (defaults from the schema). */
  limits?: SandboxLimitsConfig;
  /** Called once per command (the gateway counts them in /metrics). */
  onAudit?: (record: SandboxAuditRecord) => void;
}

/** Thrown when bubblewrap cannot build a sandbox on this machine: the provider refuses to start. */
export class SandboxUnavailableError extends Error {}

/**
 * Sandbox provider whose `bash` runs in bubblewrap: new user/pid/ipc/uts/net namespaces, read-only system
 * directories, only the thread's `/mnt/user-data` writable, skills and `sandbox.mounts` bound as configured, an
 * empty environment, rlimits per command, a disk quota per thread and concurrency caps. The agent gets `bash`
 * without `allow_host_bash` (see `isHostBashAllowed`).
 * @throws SandboxUnavailableError (from the constructor) naming why bwrap cannot work here and the fix.
 */
export class BubblewrapSandboxProvider extends LocalSandboxProvider {
  override readonly kind: string = "bubblewrap";
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
  }

  /** Commands running now across all threads. */
  get runningCommands(): number {
    return this.env.running.total;
  }

  protected override createSandbox(id: string, threadId: string, userId: string, dirs: SandboxDirs, mounts: readonly SandboxMount[]): BubblewrapSandbox {
    return new BubblewrapSandbox(id, threadId, userId, dirs, mounts, this.env);
  }
}
