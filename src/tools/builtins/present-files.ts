// Port of DeerFlow tools/builtins/present_file_tool.py (present_files).
import { stat } from "node:fs/promises";
import path from "node:path";
import { ToolMessage } from "@langchain/core/messages";
import { Command } from "@langchain/langgraph";
import { tool } from "langchain";
import { z } from "zod";
import type { LocalSandbox } from "../../sandbox/local-sandbox.js";
import { checkPathText, isWithin, SandboxPathError, VIRTUAL_ROOT } from "../../sandbox/paths.js";
import { hostSandbox, toolErrorText, type ToolRuntimeConfig } from "../sandbox/runtime.js";
import { toolCallIdOf } from "./write-todos.js";

/** Virtual directory of the files a user can be shown. */
export const OUTPUTS_VIRTUAL_DIR = `${VIRTUAL_ROOT}/outputs`;
/** Most paths one call may present. */
export const MAX_PRESENTED_FILES = 100;

const outsideOutputs = (p: string) => new SandboxPathError(`Only files in ${OUTPUTS_VIRTUAL_DIR} can be presented: ${p}`);

/**
 * Normalizes a presented path to `/mnt/user-data/outputs/...`: a virtual path under that directory, a relative path
 * (taken inside it), or a host path inside the thread's outputs directory. The text is checked first (no `..`,
 * encoded separators, control characters, over-long names); the file must then exist, be a regular file and, after
 * symlinks, still lie inside the outputs directory.
 * @throws SandboxPathError for any other path; ENOENT when the file does not exist.
 */
export async function normalizePresentedPath(sandbox: LocalSandbox, filepath: string): Promise<string> {
  checkPathText(filepath);
  let virtual: string;
  if (!path.isAbsolute(filepath)) {
    virtual = path.posix.join(OUTPUTS_VIRTUAL_DIR, filepath);
  } else if (filepath === VIRTUAL_ROOT || filepath.startsWith(`${VIRTUAL_ROOT}/`)) {
    virtual = path.posix.normalize(filepath);
  } else {
    const host = path.resolve(filepath);
    const outputs = [sandbox.dirs.outputs, path.join(sandbox.realRoot, "outputs")].find((dir) => isWithin(dir, host) && host !== dir);
    if (!outputs) throw outsideOutputs(filepath);
    virtual = `${OUTPUTS_VIRTUAL_DIR}/${path.relative(outputs, host).split(path.sep).join("/")}`;
  }
  if (!virtual.startsWith(`${OUTPUTS_VIRTUAL_DIR}/`)) throw outsideOutputs(filepath);
  const real = await sandbox.resolve(virtual, "read");
  if (!isWithin(path.join(sandbox.realRoot, "outputs"), real)) throw outsideOutputs(filepath);
  if (!(await stat(real)).isFile()) throw new SandboxPathError(`Not a file: ${filepath}`);
  return virtual;
}

/** Arguments of `present_files` (built once: a zod schema compiles its parser per instance). */
export const PresentFilesSchema = z.object({
  filepaths: z.array(z.string()).describe("Paths of the files to present, e.g. /mnt/user-data/outputs/report.md"),
});

/** Options of {@link createPresentFilesTool}. */
export interface PresentFilesToolOptions {
  /** Runtime home holding thread directories when the run context carries no sandbox provider; default `DEER_FLOW_HOME`. */
  baseDir?: string;
}

/**
 * Creates `present_files`: shows files from `/mnt/user-data/outputs` to the user by adding their virtual paths to
 * `artifacts` (merged and de-duplicated by the reducer) with the result "Successfully presented files". All or
 * nothing: one refused path (outside outputs, `..`, encoded separators, symlink escape, missing file) gives a single
 * "Error: ..." result (status `error`) and no artifacts; so does a run without a thread. The thread comes from the
 * server-set runtime context, never from state. Mirrors DeerFlow `present_file_tool`.
 */
export function createPresentFilesTool(options: PresentFilesToolOptions = {}) {
  return tool(
    async ({ filepaths }, config) => {
      const id = toolCallIdOf(config);
      const fail = (content: string) => new ToolMessage({ content, tool_call_id: id, name: "present_files", status: "error" });
      if (filepaths.length === 0) return fail(`Error: No files given; pass at least one path under ${OUTPUTS_VIRTUAL_DIR}`);
      if (filepaths.length > MAX_PRESENTED_FILES) return fail(`Error: Too many files (${filepaths.length}); present at most ${MAX_PRESENTED_FILES} at once`);
      let sandbox: LocalSandbox | null = null;
      const normalized: string[] = [];
      for (const filepath of filepaths) {
        try {
          sandbox ??= await hostSandbox(config as ToolRuntimeConfig, { baseDir: options.baseDir });
          normalized.push(await normalizePresentedPath(sandbox, filepath));
        } catch (err) {
          return fail(toolErrorText(err, String(filepath).slice(0, 300), { notFound: "File not found", doing: "presenting files" }, sandbox));
        }
      }
      return new Command({
        update: {
          artifacts: normalized,
          messages: [new ToolMessage({ content: "Successfully presented files", tool_call_id: id, name: "present_files" })],
        },
      });
    },
    {
      name: "present_files",
      description:
        "Show finished files to the user as downloadable artifacts. Write deliverables to /mnt/user-data/outputs first; " +
        "only files there can be presented. Not for intermediate files you only read yourself.",
      schema: PresentFilesSchema,
    },
  );
}
