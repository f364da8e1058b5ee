import { AIMessage, HumanMessage, ToolMessage, type BaseMessage } from "@langchain/core/messages";
import { Command } from "@langchain/langgraph";
import { rmSync } from "node:fs";
import { afterAll, describe, expect, it } from "vitest";
import { SkillToolPolicyMiddleware, skillPolicyNeeded } from "../../../src/agents/middlewares/skill-tool-policy.js";
import { ExtensionsConfigSchema } from "../../../src/config/extensions-config.js";
import { loadSkills } from "../../../src/skills/load-skills.js";
import { allowedToolNamesForSkills } from "../../../src/skills/tool-policy.js";
import { tempSkillsRoot, writeSkill } from "../../skills/skill-tree.js";

const root = tempSkillsRoot();
writeSkill(root, "public/web", "web", "Web", "# web\n", "allowed-tools: [web_search, mcp_fetch]\n");
writeSkill(root, "public/shell", "shell", "Shell", "# shell\n", "allowed-tools: [bash]\n");
writeSkill(root, "public/legacy", "legacy");
writeSkill(root, "custom/off", "off", "Off", "# off\n", "allowed-tools: [bash]\n");
const skills = loadSkills(root, ExtensionsConfigSchema.parse({ skills: { off: { enabled: false } } }));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const read = (id: string, path: string, ok = true): BaseMessage[] => [
  new AIMessage({ content: "", tool_calls: [{ id, name: "read_file", args: { path } }] }),
  new ToolMessage({ content: ok ? "# skill" : "Error: File not found", tool_call_id: id, name: "read_file", status: ok ? "success" : "error" }),
];

describe("skill allowed-tools policy (upstream skills/tool_policy.py, SkillToolPolicyMiddleware)", () => {
  it("unions declared lists; a skill without the key adds nothing once another declares; none declared = all", () => {
    expect(allowedToolNamesForSkills([{ allowedTools: null }])).toBeNull();
    expect([...allowedToolNamesForSkills([{ allowedTools: ["a"] }, { allowedTools: null }, { allowedTools: ["b"] }])!].sort()).toEqual(["a", "b"]);
    expect(allowedToolNamesForSkills([{ allowedTools: [] }])!.size).toBe(0);
  });

  it("is only needed when a usable skill declares the key", () => {
    expect(skillPolicyNeeded({ skills })).toBe(true);
    expect(skillPolicyNeeded({ skills, allowlist: new Set(["legacy", "off"]) })).toBe(false);
  });

  it("slash activation dominates reads; reads of several skills union; a failed read or a disabled skill does not widen", () => {
    const mw = new SkillToolPolicyMiddleware({ skills });
    const both = [...read("1", "/mnt/skills/public/web/SKILL.md"), ...read("2", "/mnt/skills/public/shell/SKILL.md")];
    expect([...mw.allowedNames([new HumanMessage("go"), ...both])!].sort()).toEqual(["bash", "describe_skill", "mcp_fetch", "read_file", "review_skill_package", "tool_search", "web_search"]);
    expect(mw.allowedNames([new HumanMessage("/shell go"), ...read("1", "/mnt/skills/public/web/SKILL.md")])!.has("web_search")).toBe(false);
    expect(mw.allowedNames([new HumanMessage("go"), ...read("1", "/mnt/skills/public/web/SKILL.md", false)])).toBeNull();
    // Only a disabled skill was loaded: fail closed to the always-available tools.
    expect([...mw.allowedNames([new HumanMessage("go"), ...read("1", "/mnt/skills/custom/off/SKILL.md")])!].sort()).toEqual(["describe_skill", "read_file", "review_skill_package", "tool_search"]);
    expect(mw.allowedNames([new HumanMessage("/legacy go")])).toBeNull();
  });

  it("drops disallowed tools from a tool_search result and its promotion", async () => {
    const mw = new SkillToolPolicyMiddleware({ skills });
    const result = new Command({
      update: {
        promoted: { catalog_hash: "h", names: ["mcp_fetch", "mcp_delete"] },
        messages: [new ToolMessage({ content: JSON.stringify([{ type: "function", function: { name: "mcp_fetch" } }, { type: "function", function: { name: "mcp_delete" } }]), tool_call_id: "t", name: "tool_search" })],
      },
    });
    const state = { messages: [new HumanMessage("/web find it")] };
    const out = (await mw.wrapToolCall({ toolCall: { id: "t", name: "tool_search", args: {} }, state, runtime: {} } as never, async () => result)) as Command;
    const update = out.update as { promoted: { names: string[] }; messages: ToolMessage[] };
    expect(update.promoted.names).toEqual(["mcp_fetch"]);
    expect(JSON.parse(update.messages[0].content as string).map((s: any) => s.function.name)).toEqual(["mcp_fetch"]);
  });
});
