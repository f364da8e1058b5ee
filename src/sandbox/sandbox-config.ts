// The `sandbox` section of config.yaml (DeerFlow sandbox_config.py), owned by the sandbox layer; config/schema.ts composes it.
import { z } from "zod";

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
  // DeerFlow's container sandbox (aio_sandbox) over its HTTP API: see aio-provider.ts and docs/sandbox.md.
  ...AioSandboxKeys,
});
