// Port of DeerFlow sandbox/tools.py bash_tool (local sandbox branch: host bash, gated by allow_host_bash).
import { tool } from "langchain";
import { z } from "zod";
import { MAX_COMMAND_CHARS, truncateMiddle, validateBashCommand } from "../../sandbox/host-bash.js";
import type { IsolatedRunResult } from "../../sandbox/bwrap-sandbox.js";
import { SandboxPathError } from "../../sandbox/paths.js";
import type { Sandbox } from "../../sandbox/sandbox.js";
import { isHostBashAllowed, LOCAL_HOST_BASH_DISABLED_MESSAGE } from "../../sandbox/security.js";
import { runContextOf } from "../../agents/run-context.js";
import { appConfigOf, threadSandbox, toolErrorText, type ToolRuntimeConfig } from "./runtime.js";

const DESCRIPTION = [
  "Execute a bash command in the thread's workspace (/mnt/user-data/workspace is the working directory).",
  "- Always use absolute /mnt/user-data/... paths; other host paths and '..' are refused.",
  "- Use `python3` to run Python code.",
  "- Run long-lived processes in the background with output redirected (`cmd > /mnt/user-data/workspace/log 2>&1 &`):",
  "  a foreground command is killed (with its whole process group) when the command timeout passes.",
].join("\n");

/** The checks every command gets, isolated or not: not empty, not over-long, no NUL byte. @throws SandboxPathError. */
function validateCommandText(command: string): void {
  if (!command.trim()) throw new SandboxPathError("Command is empty");
  if (command.length > MAX_COMMAND_CHARS) throw new SandboxPathError(`Command is too long (${command.length} characters; the limit is ${MAX_COMMAND_CHARS})`);
  if (command.includes("\u0000")) throw new SandboxPathError("Command contains a NUL byte");
}

/**
 * `bash`: runs a command in the thread's workspace: in DeerFlow's container sandbox when that is the provider,
 * else with host bash, refused ("Error: Host bash execution is disabled ...") unless `sandbox.allow_host_bash` is
 * true, and commands naming paths outside the thread refused ({@link validateBashCommand}). Killed with its process group after `sandbox.bash_command_timeout` seconds or when
 * the run is cancelled. Output (stdout and stderr together, host paths shown as `/mnt/user-data`) is
 * middle-truncated to `sandbox.bash_output_max_chars`; a non-zero exit adds `[exit code: N]`. DeerFlow `bash_tool`.
 */
export const bashTool = tool(
  async ({ command }, config) => {
    const runtime = config as ToolRuntimeConfig;
    const limits = appConfigOf(runtime).sandbox;
    if (!isHostBashAllowed(appConfigOf(runtime))) return `Error: ${LOCAL_HOST_BASH_DISABLED_MESSAGE}`;
    let sandbox: Sandbox | null = null;
    try {
      sandbox = await threadSandbox(runtime);
      // The path checks guard host bash; an isolated sandbox is its own boundary (upstream checks only local bash).
      if (sandbox.isolated) validateCommandText(command);
      else validateBashCommand(command);
      const result: Partial<IsolatedRunResult> & Awaited<ReturnType<Sandbox["execute"]>> = await sandbox.execute(command, { timeoutSeconds: limits.bash_command_timeout, signal: runtime.signal, runId: runContextOf(runtime).runId });
      let output = sandbox.maskOutput(result.output).replace(/\s+$/, "");
      if (result.limitMessage) {
        const partial = output ? `\nOutput before it was stopped:\n${output}` : "";
        return truncateMiddle(`Error: ${result.limitMessage}.${partial}`, limits.bash_output_max_chars);
      }
      if (result.timedOut) {
        const partial = output ? `\nOutput before it was stopped:\n${output}` : "";
        return truncateMiddle(`Error: Command timed out after ${limits.bash_command_timeout} seconds and was terminated (process group killed).${partial}`, limits.bash_output_max_chars);
      }
      if (result.aborted) return "Error: Command was cancelled";
      if (result.exitCode !== 0) output = `${output}${output ? "\n" : ""}[exit code: ${result.exitCode ?? "killed"}]`;
      return truncateMiddle(output || "(no output)", limits.bash_output_max_chars);
    } catch (err) {
      return toolErrorText(err, "/mnt/user-data/workspace", { notFound: "Directory not found", doing: "executing command" }, sandbox);
    }
  },
  {
    name: "bash",
    description: DESCRIPTION,
    schema: z.object({
      command: z.string().describe("The bash command to execute. Always use absolute /mnt/user-data/... paths for files and directories."),
      description: z.string().optional().describe("Optional short explanation of this command shown in the UI"),
    }),
  },
);
