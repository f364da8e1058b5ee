// Port of DeerFlow sandbox/tools.py: ls_tool, read_file_tool, write_file_tool, str_replace_tool (local sandbox).
import { tool } from "langchain";
import { z } from "zod";
import type { Sandbox } from "../../sandbox/sandbox.js";
import { sandboxLimits, threadSandbox, toolErrorText, truncateHead, type ToolRuntimeConfig } from "./runtime.js";

/** Largest `content` a single write_file call accepts, in UTF-8 bytes (bounds disk use per call). */
export const MAX_WRITE_BYTES = 10 * 1024 * 1024;

const pathArg = (what: string) => z.string().describe(`The **absolute** virtual path ${what}, under /mnt/user-data/{workspace,uploads,outputs}`);
const descriptionArg = z.string().optional().describe("Optional short explanation shown in the UI");

/** Runs `body` against the thread's sandbox and turns any failure into an "Error: ..." result. */
async function withSandbox(config: unknown, shownPath: string, wording: { notFound: string; doing: string }, body: (sandbox: Sandbox) => Promise<string>): Promise<string> {
  let sandbox: Sandbox | null = null;
  try {
    sandbox = await threadSandbox(config as ToolRuntimeConfig);
    return await body(sandbox);
  } catch (err) {
    return toolErrorText(err, shownPath, wording, sandbox);
  }
}

/**
 * `ls`: lists a directory up to 2 levels deep as virtual paths (directories end in `/`), `(empty)` for an empty
 * directory, head-truncated to `sandbox.ls_output_max_chars`. Refused paths and missing directories give
 * "Error: ..." results. DeerFlow `ls_tool`.
 */
export const lsTool = tool(
  async ({ path }, config) =>
    withSandbox(config, path, { notFound: "Directory not found", doing: "listing directory" }, async (sandbox) => {
      const entries = await sandbox.listDir(path);
      if (!entries.length) return "(empty)";
      return truncateHead(entries.join("\n"), sandboxLimits(config as ToolRuntimeConfig).ls_output_max_chars);
    }),
  {
    name: "ls",
    description: "List the contents of a directory up to 2 levels deep in tree format.",
    schema: z.object({ path: pathArg("of the directory to list (/mnt/user-data itself is allowed)"), description: descriptionArg }),
  },
);

/** Lines `start..end` (1-based, inclusive) of `text`, or a message in parentheses when the range is empty. */
function lineRange(text: string, start?: number, end?: number): string {
  if (start === undefined && end === undefined) return text;
  if (start !== undefined && start < 1) return "(start_line must be >= 1)";
  if (end !== undefined && end < 1) return "(end_line must be >= 1)";
  const from = start ?? 1;
  if (end !== undefined && from > end) return "(start_line > end_line: no lines in range)";
  const lines = text.split("\n");
  if (from > lines.length) return "(start_line exceeds file length)";
  return lines.slice(from - 1, end ?? lines.length).join("\n");
}

/**
 * `read_file`: reads a UTF-8 text file (optionally lines `start_line..end_line`), head-truncated to
 * `sandbox.read_file_output_max_chars`; `(empty)` for an empty file; binary files, directories, refused paths and
 * missing files give "Error: ..." results. DeerFlow `read_file_tool`.
 */
export const readFileTool = tool(
  async ({ path, start_line, end_line }, config) =>
    withSandbox(config, path, { notFound: "File not found", doing: "reading file" }, async (sandbox) => {
      const { text, size, truncated } = await sandbox.readFile(path);
      const selected = lineRange(text, start_line ?? undefined, end_line ?? undefined);
      if (!selected) return "(empty)";
      const out = truncateHead(selected, sandboxLimits(config as ToolRuntimeConfig).read_file_output_max_chars, ". Use start_line/end_line to read a specific range");
      return truncated ? `${out}\n... [file is ${size} bytes; only the first ${text.length} chars were read]` : out;
    }),
  {
    name: "read_file",
    description: "Read the contents of a text file. Use this to examine source code, configuration files, logs, or any text-based file.",
    schema: z.object({
      path: pathArg("of the file to read"),
      description: descriptionArg,
      start_line: z.number().int().nullish().describe("Optional starting line number (1-indexed, inclusive)"),
      end_line: z.number().int().nullish().describe("Optional ending line number (1-indexed, inclusive)"),
    }),
  },
);

/**
 * `write_file`: writes text to a file (parent directories are created), replacing it atomically, or adding to
 * its end with `append: true`. Answers "OK"; content over {@link MAX_WRITE_BYTES}, refused paths and directories
 * give "Error: ..." results. DeerFlow `write_file_tool`.
 */
export const writeFileTool = tool(
  async ({ path, content, append }, config) =>
    withSandbox(config, path, { notFound: "Directory not found", doing: "writing file" }, async (sandbox) => {
      const bytes = Buffer.byteLength(content);
      if (bytes > MAX_WRITE_BYTES) return `Error: write_file content (${bytes} bytes) exceeds the ${MAX_WRITE_BYTES}-byte limit of one call; write it in parts with append=true`;
      await sandbox.writeFile(path, content, append ?? false);
      return "OK";
    }),
  {
    name: "write_file",
    description: "Write text content to a file. By default this overwrites the target file; set append=true to add content to the end without replacing existing content.",
    schema: z.object({
      path: pathArg("of the file to write"),
      content: z.string().describe("The content to write to the file"),
      description: descriptionArg,
      append: z.boolean().nullish().describe("Append to the end of the file instead of overwriting it. Defaults to false."),
    }),
  },
);

/**
 * `str_replace`: replaces `old_str` with `new_str` in a text file; without `replace_all` it must occur exactly
 * once. Answers "OK"; a missing or ambiguous `old_str`, an empty `old_str`, refused paths and missing files give
 * "Error: ..." results. The file is rewritten atomically. DeerFlow `str_replace_tool`.
 */
export const strReplaceTool = tool(
  async ({ path, old_str, new_str, replace_all }, config) =>
    withSandbox(config, path, { notFound: "File not found", doing: "replacing string" }, async (sandbox) => {
      if (!old_str) return "Error: old_str is empty; nothing to replace";
      const { text, truncated } = await sandbox.readFile(path);
      if (truncated) return `Error: File is too large to edit with str_replace: ${path}`;
      const count = text.split(old_str).length - 1;
      if (count === 0) return `Error: String to replace not found in file: ${path}`;
      if (count > 1 && !replace_all) return `Error: String to replace occurs ${count} times in ${path}; make old_str unique or set replace_all=true`;
      await sandbox.writeFile(path, replace_all ? text.split(old_str).join(new_str) : text.replace(old_str, () => new_str));
      return "OK";
    }),
  {
    name: "str_replace",
    description: "Replace a substring in a file with another substring. If `replace_all` is false (default), the substring to replace must appear **exactly once** in the file.",
    schema: z.object({
      path: pathArg("of the file to edit"),
      old_str: z.string().describe("The substring to replace"),
      new_str: z.string().describe("The new substring"),
      description: descriptionArg,
      replace_all: z.boolean().nullish().describe("Replace every occurrence. Default false."),
    }),
  },
);
