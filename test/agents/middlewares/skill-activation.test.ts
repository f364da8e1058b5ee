import { AIMessage, HumanMessage, type BaseMessage } from "@langchain/core/messages";
import { rmSync } from "node:fs";
import { afterAll, describe, expect, it } from "vitest";
import { SkillActivationMiddleware } from "../../../src/agents/middlewares/skill-activation.js";
import { ExtensionsConfigSchema } from "../../../src/config/extensions-config.js";
import { loadSkills } from "../../../src/skills/load-skills.js";
import { tempSkillsRoot, writeSkill } from "../../skills/skill-tree.js";

const root = tempSkillsRoot();
writeSkill(root, "public/data-analysis", "data-analysis", "Analyse data", "# Data Analysis\nUse pandas <fast> & well.");
writeSkill(root, "public/frontend-design", "frontend-design");
writeSkill(root, "custom/off-skill", "off-skill");
const skills = loadSkills(root, ExtensionsConfigSchema.parse({ skills: { "off-skill": { enabled: false } } }));
afterAll(() => rmSync(root, { recursive: true, force: true }));

async function call(mw: SkillActivationMiddleware, messages: BaseMessage[]) {
  let sent: BaseMessage[] | null = null;
  const result = (await mw.wrapModelCall({ messages, runtime: {} } as never, (async (r: { messages: BaseMessage[] }) => {
    sent = r.messages;
    return new AIMessage("model answer");
  }) as never)) as unknown as AIMessage;
  return { sent: sent as BaseMessage[] | null, result };
}

describe("SkillActivationMiddleware (agent-factory.md §6.15, AF-064)", () => {
  it("inserts the skill content as a hidden message before the user message, request-only (a)", async () => {
    const mw = new SkillActivationMiddleware({ skills });
    const user = new HumanMessage({ content: "/data-analysis analyze uploads/foo.csv", id: "msg-1" });
    const messages = [user];
    const { sent, result } = await call(mw, messages);
    expect(result.content).toBe("model answer");
    expect(sent).toHaveLength(2);
    const [activation, original] = sent!;
    expect(original).toBe(user);
    expect(activation.id).toBe("msg-1__slash_activation");
    expect(activation.additional_kwargs).toMatchObject({ hide_from_ui: true, slash_skill_activation: true, target_message_id: "msg-1" });
    const text = String(activation.content);
    expect(text).toContain("Use pandas &lt;fast&gt; &amp; well.");
    expect(text).toContain("<user_request>\nanalyze uploads/foo.csv\n</user_request>");
    expect(text).toMatch(/<skill name="data-analysis" category="public" path="\/mnt\/skills\/public\/data-analysis\/SKILL.md" sha256="[0-9a-f]{64}" editable="false">/);
    expect(messages).toEqual([user]);
  });

  it("reads the user's original text when uploads prefixed the message", async () => {
    const user = new HumanMessage({ content: "<uploaded_files>...</uploaded_files>\n/data-analysis go", id: "m", additional_kwargs: { original_user_content: "/data-analysis go" } });
    const { sent } = await call(new SkillActivationMiddleware({ skills }), [user]);
    expect(sent).toHaveLength(2);
  });

  it("answers without calling the model for a disallowed, missing or disabled skill (b, c, d)", async () => {
    const user = new HumanMessage({ content: "/data-analysis go", id: "m" });
    const disallowed = await call(new SkillActivationMiddleware({ skills, allowlist: new Set(["frontend-design"]) }), [user]);
    expect(disallowed.sent).toBeNull();
    expect(disallowed.result.content).toBe("Skill `/data-analysis` is not available for this agent.");
    const missing = await call(new SkillActivationMiddleware({ skills: [] }), [user]);
    expect(missing.result.content).toBe("Skill `/data-analysis` is not installed.");
    const disabled = await call(new SkillActivationMiddleware({ skills }), [new HumanMessage({ content: "/off-skill now", id: "m2" })]);
    expect(String(disabled.result.content)).toContain("is installed but disabled");
  });

  it("ignores plain text, reserved commands and an activation already in the request", async () => {
    const mw = new SkillActivationMiddleware({ skills });
    for (const text of ["please use /data-analysis", "/help me", "/DataAnalysis run"]) {
      const { sent } = await call(mw, [new HumanMessage({ content: text, id: "x" })]);
      expect(sent).toHaveLength(1);
    }
    const user = new HumanMessage({ content: "/data-analysis go", id: "m" });
    const first = await call(mw, [user]);
    const again = await call(mw, first.sent!);
    expect(again.sent).toHaveLength(2);
  });

  it("targets the latest real user message, skipping hidden ones", async () => {
    const hidden = new HumanMessage({ content: "/data-analysis hidden", id: "h", additional_kwargs: { hide_from_ui: true } });
    const { sent } = await call(new SkillActivationMiddleware({ skills }), [new HumanMessage({ content: "plain", id: "p" }), hidden]);
    expect(sent).toHaveLength(2);
  });
});
