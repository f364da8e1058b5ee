// The `sandbox` section of config.yaml (DeerFlow sandbox_config.py), owned by the sandbox layer; config/schema.ts composes it.
import { z } from "zod";

/**
 * `sandbox.limits`: what one command of the bubblewrap provider may use (src/sandbox/bwrap-sandbox.ts). Each is a
 * per-command kernel limit (setrlimit in the sandbox's shell) except the disk quota (per thread, all of
 * `/mnt/user-data`) and the two concurrency caps. Ignored by the local provider and host bash.
 */
export const SandboxLimitsSchema = z.strictObject({
  /** CPU seconds per process (RLIMIT_CPU): SIGXCPU at the limit, SIGKILL one second later. */
  cpu_seconds: z.number().int().min(1).default(60),
  /** Address space per process in MiB (RLIMIT_AS): allocations past it fail (MemoryError, ENOMEM). */
  memory_mb: z.number().int().min(64).default(2048),
  /**
   * Processes and threads of one command at once: a pids cgroup per command where one is writable (holds for a
   * root gateway), else RLIMIT_NPROC (which the kernel does not apply to root). See docs/sandbox.md.
   */
  processes: z.number().int().min(4).default(256),
  /** Largest file a command may write, in MiB (RLIMIT_FSIZE; also capped by the thread's remaining quota). */
  file_size_mb: z.number().int().min(1).default(512),
  /** Output captured per command (stdout + stderr), in MiB: past it the command is killed. */
  output_mb: z.number().min(0.01).default(16),
  /** Size of the sandbox's private /tmp and of /dev/shm in MiB each (memory-backed, gone after the command). */
  tmp_mb: z.number().int().min(1).default(64),
  /** Disk a thread's `/mnt/user-data` may use, in MiB (uploads included). */
  disk_quota_mb: z.number().int().min(1).default(1024),
  /** CPU priority of sandbox commands (nice value, 0-19): above 0 the gateway stays responsive under CPU-bound commands. */
  nice: z.number().int().min(0).max(19).default(10),
  /** Commands one thread may run at once; more are refused with a tool error. */
  concurrent_per_thread: z.number().int().min(1).default(4),
  /** Commands the whole process may run at once; more are refused with a tool error. */
  concurrent_total: z.number().int().min(1).default(32),
});

/**
 * The keys of `sandbox.use: deerflow.community.aio_sandbox:AioSandboxProvider` (remote modes only): `base_url` (one
 * running sandbox for the deployment) or `provisioner_url` (+ `provisioner_api_key`, one sandbox per thread),
 * `api_key` (bearer token of the sandbox API), `idle_timeout` (seconds a released sandbox lives, 0 = until
 * shutdown), `request_timeout` (seconds per file operation), `ready_timeout` (seconds a new sandbox may take).
 */
const AioSandboxKeys = {
  base_url: z.url({ protocol: /^https?$/ }).or(z.literal("")).optional(),
  api_key: z.string().optional(),
  provisioner_url: z.url({ protocol: /^https?$/ }).or(z.literal("")).optional(),
  provisioner_api_key: z.string().optional(),
  idle_timeout: z.number().min(0).default(600),
  request_timeout: z.number().positive().default(60),
  ready_timeout: z.number().positive().default(60),
};

/** `sandbox` (DeerFlow `sandbox_config.py`): provider and tool limits. Restart-only. */
export const SandboxConfigSchema = z.looseObject({
  use: z.string().default("deerflow.sandbox.local:LocalSandboxProvider"),
  allow_host_bash: z.boolean().default(false),
  mounts: z.array(z.looseObject({ host_path: z.string(), container_path: z.string(), read_only: z.boolean().default(false) })).default([]),
  bash_output_max_chars: z.number().int().min(0).default(20_000),
  read_file_output_max_chars: z.number().int().min(0).default(50_000),
  ls_output_max_chars: z.number().int().min(0).default(20_000),
  bash_command_timeout: z.number().positive().default(600),
  /** Network inside the bubblewrap provider's sandbox: `none` (own empty network namespace) or `full` (the host's). */
  network: z.enum(["none", "full"]).default("none"),
  /**
   * Bubblewrap provider: a writable cgroup directory (v1 `pids` hierarchy, or a delegated v2 group with `pids`
   * available and no processes of its own) under which each command's pids group is made. Unset: the gateway's own
   * pids cgroup, found at start. Set but unusable: the provider refuses to start.
   */
  pids_cgroup: z.string().min(1).optional(),
  limits: SandboxLimitsSchema.default(SandboxLimitsSchema.parse({})),
  // DeerFlow's container sandbox (aio_sandbox) over its HTTP API: see aio-provider.ts and docs/sandbox.md.
  ...AioSandboxKeys,
});

/** The parsed `sandbox.limits`. */
export type SandboxLimitsConfig = z.infer<typeof SandboxLimitsSchema>;
