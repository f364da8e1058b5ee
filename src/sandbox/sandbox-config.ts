// The `sandbox` section of config.yaml (DeerFlow sandbox_config.py), owned by the sandbox layer; config/schema.ts composes it.
import { z } from "zod";

/** `sandbox` (DeerFlow `sandbox_config.py`): provider and tool limits. Restart-only. */
export const SandboxConfigSchema = z.looseObject({
  use: z.string().default("deerflow.sandbox.local:LocalSandboxProvider"),
  allow_host_bash: z.boolean().default(false),
  mounts: z.array(z.looseObject({ host_path: z.string(), container_path: z.string(), read_only: z.boolean().default(false) })).default([]),
  bash_output_max_chars: z.number().int().min(0).default(20_000),
  read_file_output_max_chars: z.number().int().min(0).default(50_000),
  ls_output_max_chars: z.number().int().min(0).default(20_000),
  bash_command_timeout: z.number().positive().default(600),
});
