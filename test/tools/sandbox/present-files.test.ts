import { symlinkSync, writeFileSync, mkdirSync } from "node:fs";
import path from "node:path";
import { ToolMessage } from "@langchain/core/messages";
import { Command, isCommand } from "@langchain/langgraph";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createPresentFilesTool } from "../../../src/tools/builtins/present-files.js";
import { createSandboxFixture, type SandboxFixture } from "./helpers.js";

let fx: SandboxFixture;
beforeEach(() => {
  fx = createSandboxFixture();
  mkdirSync(path.join(fx.sandbox.dirs.outputs, "charts"), { recursive: true });
  writeFileSync(path.join(fx.sandbox.dirs.outputs, "report.md"), "# Report");
  writeFileSync(path.join(fx.sandbox.dirs.outputs, "charts", "a.png"), "png");
  writeFileSync(path.join(fx.sandbox.dirs.workspace, "draft.md"), "draft");
});
afterEach(() => fx.cleanup());

const present = async (filepaths: string[], config: unknown = fx.config()) =>
  createPresentFilesTool().invoke({ type: "tool_call", name: "present_files", id: "call-1", args: { filepaths } }, config as never) as Promise<ToolMessage | Command>;
const errorOf = async (filepaths: string[]) => {
  const out = await present(filepaths);
  expect(isCommand(out)).toBe(false);
  expect((out as ToolMessage).status).toBe("error");
  return String((out as ToolMessage).content);
};

describe("present_files (agent-factory.md section 7)", () => {
  it("records virtual, host and relative output paths in artifacts with one success message", async () => {
    const out = await present(["/mnt/user-data/outputs/report.md", path.join(fx.sandbox.dirs.outputs, "charts", "a.png"), "report.md"]);
    expect(isCommand(out)).toBe(true);
    const update = (out as Command).update as { artifacts: string[]; messages: ToolMessage[] };
    expect(update.artifacts).toEqual(["/mnt/user-data/outputs/report.md", "/mnt/user-data/outputs/charts/a.png", "/mnt/user-data/outputs/report.md"]);
    expect(update.messages[0].content).toBe("Successfully presented files");
    expect(update.messages[0].tool_call_id).toBe("call-1");
  });

  it("refuses files outside outputs, all or nothing", async () => {
    expect(await errorOf(["/mnt/user-data/outputs/report.md", "/mnt/user-data/workspace/draft.md"])).toBe(
      "Error: Only files in /mnt/user-data/outputs can be presented: /mnt/user-data/workspace/draft.md",
    );
    expect(await errorOf([path.join(fx.sandbox.dirs.workspace, "draft.md")])).toContain("Only files in /mnt/user-data/outputs");
    expect(await errorOf(["/mnt/user-data/outputs/../workspace/draft.md"])).toContain("Path traversal");
  });

  it("refuses a symlink in outputs that leads outside the thread, and missing files", async () => {
    symlinkSync(path.join(fx.outside, "secret.txt"), path.join(fx.sandbox.dirs.outputs, "leak.txt"));
    expect(await errorOf(["/mnt/user-data/outputs/leak.txt"])).toContain("outside the thread's directories");
    symlinkSync(path.join(fx.sandbox.dirs.workspace, "draft.md"), path.join(fx.sandbox.dirs.outputs, "draft-link.md"));
    expect(await errorOf(["/mnt/user-data/outputs/draft-link.md"])).toContain("Only files in /mnt/user-data/outputs");
    expect(await errorOf(["/mnt/user-data/outputs/missing.md"])).toBe("Error: File not found: /mnt/user-data/outputs/missing.md");
    expect(await errorOf(["/mnt/user-data/outputs/charts"])).toContain("Not a file");
  });

  it("answers with an error when the run has no thread, or no paths", async () => {
    const out = (await present(["/mnt/user-data/outputs/report.md"], { context: {} })) as ToolMessage;
    expect(out.content).toContain("Error: Thread ID is not available");
    expect(await errorOf([])).toContain("No files given");
  });
});
