import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { HumanMessage, ToolMessage } from "@langchain/core/messages";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createDeerflowAgent } from "../../../src/agents/factory.js";
import { bashTool, lsTool, readFileTool, strReplaceTool, writeFileTool } from "../../../src/tools/sandbox/index.js";
import { createPresentFilesTool } from "../../../src/tools/builtins/present-files.js";
import { FakeChatModel } from "../../support/fake-chat-model.js";
import { createSandboxFixture, TRAVERSAL_ATTEMPTS, type SandboxFixture } from "./helpers.js";

let fx: SandboxFixture;
beforeEach(() => {
  fx = createSandboxFixture();
});
afterEach(() => fx.cleanup());

type Invocable = { invoke(input: unknown, config: unknown): Promise<unknown> };
const run = (tool: unknown, input: Record<string, unknown>, sandbox?: Record<string, unknown>) => (tool as Invocable).invoke(input, fx.config(sandbox)) as Promise<string>;
const host = (area: string, ...rest: string[]) => path.join(fx.sandbox.dirs.root, area, ...rest);

/** Each tool called with `p` as its path, as the model would. */
const ATTACKS: [name: string, call: (p: string) => Promise<unknown>][] = [
  ["ls", (p) => run(lsTool, { path: p })],
  ["read_file", (p) => run(readFileTool, { path: p })],
  ["write_file", (p) => run(writeFileTool, { path: p, content: "pwned" })],
  ["write_file (append)", (p) => run(writeFileTool, { path: p, content: "pwned", append: true })],
  ["str_replace", (p) => run(strReplaceTool, { path: p, old_str: "TOP", new_str: "pwned" })],
  ["present_files", async (p) => ((await createPresentFilesTool().invoke({ type: "tool_call", name: "present_files", id: "c1", args: { filepaths: [p] } }, fx.config())) as ToolMessage).content],
];

describe("every file tool refuses paths outside the thread", () => {
  for (const [tool, call] of ATTACKS) {
    it.each(TRAVERSAL_ATTEMPTS)(`${tool}: refuses %s with a clear error and writes nothing outside`, async (_label, attempt, message) => {
      const out = String(await call(attempt));
      expect(out).toMatch(/^Error: /);
      // present_files refuses anything outside outputs before it looks further (its own tests cover outputs/ symlinks).
      if (tool === "present_files") expect(out).toMatch(new RegExp(`${message}|Only files in /mnt/user-data/outputs can be presented`));
      else expect(out).toContain(message);
      expect(fx.strayFiles()).toEqual([]);
      expect(readFileSync(path.join(fx.outside, "secret.txt"), "utf8")).toBe("TOP-SECRET");
      expect(out).not.toContain("TOP-SECRET");
    });
  }
});

describe("ls", () => {
  it("lists two levels as virtual paths, hides temp files, says (empty), and truncates to ls_output_max_chars", async () => {
    mkdirSync(host("outputs", "a", "b", "c"), { recursive: true });
    writeFileSync(host("outputs", "top.txt"), "x");
    writeFileSync(host("outputs", ".write-123.part"), "x");
    expect(await run(lsTool, { path: "/mnt/user-data/outputs" })).toBe(["/mnt/user-data/outputs/a/", "/mnt/user-data/outputs/a/b/", "/mnt/user-data/outputs/top.txt"].join("\n"));
    expect(await run(lsTool, { path: "/mnt/user-data/uploads" })).toBe("(empty)");
    expect(await run(lsTool, { path: "/mnt/user-data/outputs/missing" })).toBe("Error: Directory not found: /mnt/user-data/outputs/missing");
    expect(await run(lsTool, { path: "/mnt/user-data/outputs/top.txt" })).toBe("Error: Path is not a directory: /mnt/user-data/outputs/top.txt");
    for (let i = 0; i < 50; i++) writeFileSync(host("workspace", `file-${i}.txt`), "");
    const out = await run(lsTool, { path: "/mnt/user-data/workspace" }, { ls_output_max_chars: 300 });
    expect(out.length).toBeLessThanOrEqual(300);
    expect(out).toContain("[truncated: showing first");
  });

  it("shows symlinks without following them", async () => {
    const out = await run(lsTool, { path: "/mnt/user-data/workspace" });
    expect(out).toContain("/mnt/user-data/workspace/escape-dir (symlink)");
    expect(out).not.toContain("secret.txt");
  });
});

describe("read_file", () => {
  it("reads text, line ranges and (empty), and truncates to read_file_output_max_chars", async () => {
    writeFileSync(host("workspace", "a.txt"), "one\ntwo\nthree\n");
    writeFileSync(host("workspace", "empty.txt"), "");
    expect(await run(readFileTool, { path: "/mnt/user-data/workspace/a.txt" })).toBe("one\ntwo\nthree\n");
    expect(await run(readFileTool, { path: "/mnt/user-data/workspace/a.txt", start_line: 2, end_line: 3 })).toBe("two\nthree");
    expect(await run(readFileTool, { path: "/mnt/user-data/workspace/a.txt", start_line: 9 })).toBe("(start_line exceeds file length)");
    expect(await run(readFileTool, { path: "/mnt/user-data/workspace/empty.txt" })).toBe("(empty)");
    writeFileSync(host("workspace", "big.txt"), "y".repeat(5000));
    const out = await run(readFileTool, { path: "/mnt/user-data/workspace/big.txt" }, { read_file_output_max_chars: 500 });
    expect(out.length).toBeLessThanOrEqual(500);
    expect(out).toContain("Use start_line/end_line");
  });

  it("refuses binary files, directories and missing files with clear errors", async () => {
    writeFileSync(host("uploads", "img.png"), Buffer.from([0x89, 0x50, 0x4e, 0x47, 0, 0, 0xff]));
    expect(await run(readFileTool, { path: "/mnt/user-data/uploads/img.png" })).toContain("appears to be a binary file");
    expect(await run(readFileTool, { path: "/mnt/user-data/uploads" })).toBe("Error: Path is a directory, not a file: /mnt/user-data/uploads");
    expect(await run(readFileTool, { path: "/mnt/user-data/uploads/nope.txt" })).toBe("Error: File not found: /mnt/user-data/uploads/nope.txt");
  });
});

describe("write_file and str_replace", () => {
  it("writes (creating directories), overwrites, appends, and answers OK", async () => {
    expect(await run(writeFileTool, { path: "/mnt/user-data/outputs/r/report.md", content: "# Title\n" })).toBe("OK");
    expect(await run(writeFileTool, { path: "/mnt/user-data/outputs/r/report.md", content: "more\n", append: true })).toBe("OK");
    expect(readFileSync(host("outputs", "r", "report.md"), "utf8")).toBe("# Title\nmore\n");
    expect(await run(writeFileTool, { path: "/mnt/user-data/outputs/r/report.md", content: "new" })).toBe("OK");
    expect(readFileSync(host("outputs", "r", "report.md"), "utf8")).toBe("new");
    expect(await run(writeFileTool, { path: "/mnt/user-data/outputs/r", content: "x" })).toBe("Error: Path is a directory, not a file: /mnt/user-data/outputs/r");
  });

  it("replaces a unique string, refuses ambiguous or missing ones, and replaces all on request", async () => {
    writeFileSync(host("workspace", "c.py"), "a = 1\nb = 1\n");
    expect(await run(strReplaceTool, { path: "/mnt/user-data/workspace/c.py", old_str: "a = 1", new_str: "a = 2" })).toBe("OK");
    expect(await run(strReplaceTool, { path: "/mnt/user-data/workspace/c.py", old_str: "= ", new_str: "=" })).toContain("occurs 2 times");
    expect(await run(strReplaceTool, { path: "/mnt/user-data/workspace/c.py", old_str: "zzz", new_str: "" })).toBe("Error: String to replace not found in file: /mnt/user-data/workspace/c.py");
    expect(await run(strReplaceTool, { path: "/mnt/user-data/workspace/c.py", old_str: "= ", new_str: "=", replace_all: true })).toBe("OK");
    expect(readFileSync(host("workspace", "c.py"), "utf8")).toBe("a =2\nb =1\n");
    expect(await run(strReplaceTool, { path: "/mnt/user-data/workspace/nope.py", old_str: "a", new_str: "b" })).toBe("Error: File not found: /mnt/user-data/workspace/nope.py");
  });
});

describe("sandbox tools inside an agent", () => {
  it("acquire the sandbox lazily on the first tool call and record it in state", async () => {
    const model = new FakeChatModel([{ tool_calls: [{ name: "write_file", args: { path: "/mnt/user-data/outputs/x.txt", content: "hi" } }] }, "done"]);
    const agent = createDeerflowAgent(model, [writeFileTool as never], { features: { sandbox: true } });
    const config = fx.config();
    const out = (await agent.invoke({ messages: [new HumanMessage("go")] } as never, { context: config.context, configurable: { thread_id: "thread-1" } } as never)) as unknown as { sandbox: unknown };
    expect(out.sandbox).toEqual({ sandbox_id: "local:default:thread-1" });
    expect(existsSync(host("outputs", "x.txt"))).toBe(true);
  });

  it("work on the thread named by the server context, not on a sandbox id planted in state", async () => {
    const other = fx.provider.sandboxFor("victim");
    writeFileSync(path.join(other.dirs.outputs, "private.txt"), "victim data");
    const config = fx.config();
    config.state.sandbox = { sandbox_id: "local:default:victim" };
    config.context.sandbox_id = "local:default:victim";
    expect(await readFileTool.invoke({ path: "/mnt/user-data/outputs/private.txt" }, config as never)).toBe("Error: File not found: /mnt/user-data/outputs/private.txt");
  });

  it("answer with an error, not an exception, when there is no thread", async () => {
    expect(await writeFileTool.invoke({ path: "/mnt/user-data/outputs/x.txt", content: "x" }, { context: {} } as never)).toContain("Error: Thread ID is not available");
    expect(await bashTool.invoke({ command: "ls" }, { context: {} } as never)).toContain("Error: Host bash execution is disabled");
  });
});
