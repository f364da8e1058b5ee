// Port of DeerFlow sandbox/tools.py glob_tool and grep_tool (names, arguments, limits and result text).
import { tool } from "langchain";
import { z } from "zod";
import { runContextOf } from "../../agents/run-context.js";
import type { Sandbox } from "../../sandbox/sandbox.js";
import { threadSandbox, toolErrorText, type ToolRuntimeConfig } from "./runtime.js";

/** Default and upper bound of `max_results` (DeerFlow `_DEFAULT_GLOB_MAX_RESULTS` / `_MAX_GLOB_MAX_RESULTS`, grep alike). */
export const GLOB_MAX_RESULTS = { default: 200, upper: 1000 } as const;
/** See {@link GLOB_MAX_RESULTS}. */
export const GREP_MAX_RESULTS = { default: 100, upper: 500 } as const;

/**
 * The effective `max_results`: the requested value and the tool's configured `max_results` (its entry in
 * `tools:`), each clamped to 1..upper (non-positive means the default), whichever is smaller. DeerFlow
 * `_resolve_max_results`.
 */
function effectiveMax(config: unknown, name: string, requested: number | undefined, limits: { default: number; upper: number }): number {
  const clamp = (v: unknown) => (typeof v === "number" && Number.isFinite(v) && v > 0 ? Math.min(Math.floor(v), limits.upper) : limits.default);
  const entry = (runContextOf(config as ToolRuntimeConfig).appConfig?.tools ?? []).find((t) => t.name === name) as Record<string, unknown> | undefined;
  return Math.min(clamp(requested), clamp(entry?.max_results));
}

async function search(config: unknown, shownPath: string, doing: string, body: (sandbox: Sandbox) => Promise<string>): Promise<string> {
  let sandbox: Sandbox | null = null;
  try {
    sandbox = await threadSandbox(config as ToolRuntimeConfig);
    return await body(sandbox);
  } catch (err) {
    if (err instanceof SyntaxError) return `Error: Invalid regex pattern: ${err.message}`;
    return toolErrorText(err, shownPath, { notFound: "Directory not found", doing }, sandbox);
  }
}

const description = z.string().describe("Explain why you are searching in short words. ALWAYS PROVIDE THIS PARAMETER FIRST.");

/**
 * `glob`: paths under an absolute virtual root (`/mnt/user-data/...`, `/mnt/skills/...` or a mount) that match a
 * glob pattern, as "Found N paths under <root>" and a numbered list of virtual paths, or "No files matched under
 * <root>"; at most `max_results` (default 200, at most 1000, and at most the tool's configured `max_results`).
 */
export const globTool = tool(
  async ({ pattern, path, include_dirs, max_results }, config) =>
    search(config, path, "searching paths", async (sandbox) => {
      const max = effectiveMax(config, "glob", max_results ?? undefined, GLOB_MAX_RESULTS);
      const { matches, truncated } = await sandbox.glob(path, pattern, { includeDirs: include_dirs ?? false, maxResults: max });
      if (!matches.length) return `No files matched under ${path}`;
      const lines = [`Found ${matches.length} paths under ${path}${truncated ? ` (showing first ${matches.length})` : ""}`];
      matches.forEach((m, i) => lines.push(`${i + 1}. ${m}`));
      if (truncated) lines.push("Results truncated. Narrow the path or pattern to see fewer matches.");
      return lines.join("\n");
    }),
  {
    name: "glob",
    description: "Find files or directories that match a glob pattern under a root directory.",
    schema: z.object({
      description,
      pattern: z.string().describe("The glob pattern to match relative to the root path, for example `**/*.py`."),
      path: z.string().describe("The **absolute** root directory to search under."),
      include_dirs: z.boolean().nullish().describe("Whether matching directories should also be returned. Default is False."),
      max_results: z.number().int().nullish().describe("Maximum number of paths to return. Default is 200."),
    }),
  },
);

/**
 * `grep`: lines matching a regex (or a literal string) in a file or the text files under a directory, as "Found N
 * matches under <root>" and `<virtual path>:<line>: <text>` lines, or "No matches found under <root>"; at most
 * `max_results` (default 100, at most 500). An invalid regex, or one RE2 cannot run in linear time (backreferences,
 * lookaround), is "Error: Invalid regex pattern: ...": a result the model reads, not a failed run.
 */
export const grepTool = tool(
  async ({ pattern, path, glob, literal, case_sensitive, max_results }, config) =>
    search(config, path, "searching file contents", async (sandbox) => {
      const max = effectiveMax(config, "grep", max_results ?? undefined, GREP_MAX_RESULTS);
      const { matches, truncated } = await sandbox.grep(path, pattern, { glob, literal: literal ?? false, caseSensitive: case_sensitive ?? false, maxResults: max });
      if (!matches.length) return `No matches found under ${path}`;
      const lines = [`Found ${matches.length} matches under ${path}${truncated ? ` (showing first ${matches.length})` : ""}`];
      for (const m of matches) lines.push(`${m.path}:${m.lineNumber}: ${m.line}`);
      if (truncated) lines.push("Results truncated. Narrow the path or add a glob filter.");
      return lines.join("\n");
    }),
  {
    name: "grep",
    description: "Search for matching lines inside a text file or files under a root directory.",
    schema: z.object({
      description,
      pattern: z.string().describe("The string or regex pattern to search for (RE2 syntax: no backreferences or lookaround)."),
      path: z.string().describe("The **absolute** file or root directory to search."),
      glob: z.string().nullish().describe("Optional glob filter for candidate files, for example `**/*.py`."),
      literal: z.boolean().nullish().describe("Whether to treat `pattern` as a plain string. Default is False."),
      case_sensitive: z.boolean().nullish().describe("Whether matching is case-sensitive. Default is False."),
      max_results: z.number().int().nullish().describe("Maximum number of matching lines to return. Default is 100."),
    }),
  },
);
