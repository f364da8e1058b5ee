import { describe, expect, it } from "vitest";
import { parseAppConfig } from "../../../src/config/schema.js";
import { resolveUse } from "../../../src/models/resolve-use.js";
import { isHostBashTool } from "../../../src/sandbox/security.js";
import { getAvailableTools } from "../../../src/tools/get-available-tools.js";
import { bashTool, lsTool, LocalSandboxProvider, readFileTool, strReplaceTool, writeFileTool } from "../../../src/tools/sandbox/index.js";

/** DeerFlow's config.example.yaml file and bash tools, verbatim. */
const UPSTREAM_TOOLS = [
  { name: "ls", group: "file:read", use: "deerflow.sandbox.tools:ls_tool" },
  { name: "read_file", group: "file:read", use: "deerflow.sandbox.tools:read_file_tool" },
  { name: "write_file", group: "file:write", use: "deerflow.sandbox.tools:write_file_tool" },
  { name: "str_replace", group: "file:write", use: "deerflow.sandbox.tools:str_replace_tool" },
  { name: "bash", group: "bash", use: "deerflow.sandbox.tools:bash_tool" },
];
const names = (tools: { name: string }[]) => tools.map((t) => t.name);

describe("sandbox tools configured like upstream", () => {
  it("resolve DeerFlow's Python use: paths and this package's deerflow-gateway/sandbox exports to the same tools", async () => {
    expect(await resolveUse("deerflow.sandbox.tools:ls_tool")).toBe(lsTool);
    expect(await resolveUse("deerflow.sandbox.tools:read_file_tool")).toBe(readFileTool);
    expect(await resolveUse("deerflow.sandbox.tools:write_file_tool")).toBe(writeFileTool);
    expect(await resolveUse("deerflow.sandbox.tools:str_replace_tool")).toBe(strReplaceTool);
    expect(await resolveUse("deerflow.sandbox.tools:bash_tool")).toBe(bashTool);
    expect(await resolveUse("deerflow-gateway/sandbox:writeFileTool")).toBe(writeFileTool);
    expect(await resolveUse("deerflow.sandbox.local:LocalSandboxProvider")).toBe(LocalSandboxProvider);
  });

  it("leave host bash out unless sandbox.allow_host_bash is true (by group or by use:)", async () => {
    const off = parseAppConfig({ tools: UPSTREAM_TOOLS });
    expect(names(await getAvailableTools({ appConfig: off, includeMcp: false }))).toEqual(["ls", "read_file", "write_file", "str_replace", "present_files", "ask_clarification", "list_uploaded_files"]);
    const on = parseAppConfig({ tools: UPSTREAM_TOOLS, sandbox: { allow_host_bash: true } });
    expect(names(await getAvailableTools({ appConfig: on, includeMcp: false }))).toContain("bash");
    expect(isHostBashTool({ group: "shell", use: "deerflow-gateway/sandbox:bashTool" })).toBe(true);
    expect(isHostBashTool({ group: "bash", use: "x:y" })).toBe(true);
    expect(isHostBashTool({ group: "file:read", use: "deerflow.sandbox.tools:ls_tool" })).toBe(false);
  });
});
