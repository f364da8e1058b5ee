import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { Session, signUp } from "../support/auth-client.js";
import { captureLogs } from "../support/capture-logs.js";
import { useFakeOpenAI, systemText, type FakeReply } from "../support/fake-openai.js";
import { startHarness, type Harness } from "../support/harness.js";

// Issue 14 item 4: the agent manages the user's custom skills with skill_manage (DeerFlow's skill self-evolution),
// through the storage the Settings routes use; driven over HTTP by the fake OpenAI server calling the tool, with
// two signed-in users.
vi.setConfig({ testTimeout: 120_000, hookTimeout: 120_000 });

const work = mkdtempSync(path.join(tmpdir(), "skill-manage-"));
const savedSkillsDir = process.env.DEER_FLOW_SKILLS_DIR;
const PASSWORD = "correct-horse-battery";
const fake = useFakeOpenAI();
let h: Harness;
let a: Session;
let b: Session;
let aId: string;
let logs: ReturnType<typeof captureLogs>;

const configFor = (url: string, evolution: boolean) => `models:
  - {name: fake-gpt, use: "langchain_openai:ChatOpenAI", model: gpt-test, api_key: sk-test, base_url: "${url}"}
  - {name: offline, use: "deerflow-gateway:ScriptedChatModel", model: offline}
tools:
  - {name: read_file, group: file:read, use: "deerflow.sandbox.tools:read_file_tool"}
title: {enabled: false}
memory: {enabled: false}
skill_evolution: {enabled: ${evolution}}
`;

const SKILL = (name: string, description: string, body = "Step one: read the changelog.") => `---\nname: ${name}\ndescription: ${description}\n---\n\n# ${name}\n\n${body}\n`;

beforeAll(async () => {
  // The shipped sample skill, copied so the test owns its skills root.
  cpSync(path.resolve("skills/public/plain-language"), path.join(work, "skills", "public", "plain-language"), { recursive: true });
  process.env.DEER_FLOW_SKILLS_DIR = path.join(work, "skills");
  logs = captureLogs();
  h = await startHarness(configFor(fake.url, true), { authDisabled: false });
  a = await signUp(h.url, "alice@example.com", PASSWORD, "initialize");
  b = await signUp(h.url, "bob@example.com", PASSWORD);
  aId = (await (await a.fetch("/api/v1/auth/me")).json()).id;
});
afterAll(async () => {
  logs.restore();
  await h.close();
  if (savedSkillsDir === undefined) delete process.env.DEER_FLOW_SKILLS_DIR;
  else process.env.DEER_FLOW_SKILLS_DIR = savedSkillsDir;
  rmSync(work, { recursive: true, force: true });
});

type Call = { name: string; args: Record<string, unknown> };

/**
 * One run of `session` on a new thread: the fake model makes `calls` one per model call, then answers "done".
 * @returns the tool results, the run's final state and the first model request's system prompt and tool names.
 */
async function turn(session: Session, text: string, calls: Call[] = [], extra: Record<string, unknown> = {}) {
  fake.respond = (body): FakeReply => {
    const done = body.messages.filter((m: any) => m.role === "tool").length;
    return done < calls.length ? { toolCalls: [calls[done]] } : { content: "done" };
  };
  const before = fake.requests.length;
  const thread = (await (await session.fetch("/threads", { json: {} })).json()).thread_id as string;
  const res = await session.fetch(`/threads/${thread}/runs/wait`, { json: { assistant_id: "lead_agent", input: { messages: [{ type: "human", content: text }] }, ...extra } });
  expect(res.status).toBe(200);
  const state = (await res.json()) as any;
  const mine = fake.requests.slice(before);
  const last = mine.at(-1)?.body;
  return {
    thread,
    state,
    requests: mine,
    results: (last?.messages ?? []).filter((m: any) => m.role === "tool").map((m: any) => String(m.content)),
    system: mine.length ? systemText(mine[0].body) : "",
    tools: (mine[0]?.body.tools ?? []).map((t: any) => t.function.name as string),
  };
}

const customRoot = (userId: string) => path.join(process.env.DEER_FLOW_HOME!, "users", userId, "skills", "custom");
const manage = (args: Record<string, unknown>): Call => ({ name: "skill_manage", args });

// One user's story in steps (create, read, edit, roll back, share a name with another user, activate by slash,
// switch evolution off): each step builds on the skill the step before left, so the steps keep their order
// under --sequence.shuffle.
describe("a custom skill's life, in order", { shuffle: false }, () => {
describe("skill_manage over HTTP", () => {
  it("creates a skill the next run's prompt lists, recorded in its history with the run's thread", async () => {
    const created = await turn(a, "remember how we write release notes", [manage({ action: "create", name: "release-notes", content: SKILL("release-notes", "Write release notes from a changelog") })]);
    expect(created.tools).toContain("skill_manage");
    expect(created.system).toContain("**Skill Self-Evolution:**");
    expect(created.results).toEqual(["Created custom skill 'release-notes'."]);
    expect(readFileSync(path.join(customRoot(aId), "release-notes", "SKILL.md"), "utf8")).toBe(SKILL("release-notes", "Write release notes from a changelog"));

    const next = await turn(a, "hello again");
    expect(next.system).toContain("<name>release-notes</name>");
    expect(next.system).toContain("Write release notes from a changelog [custom, editable]");
    expect(next.system).toContain("<location>/mnt/skills/custom/release-notes/SKILL.md</location>");

    const history = (await (await a.fetch("/api/skills/custom/release-notes/history")).json()) as any;
    expect(history.history).toHaveLength(1);
    expect(history.history[0]).toMatchObject({ action: "create", author: "agent", thread_id: created.thread, file_path: "SKILL.md", prev_content: null });
    // The Settings list (the same storage) shows it as the user's own, editable.
    const list = (await (await a.fetch("/api/skills")).json()) as any;
    expect(list.skills.find((s: any) => s.name === "release-notes")).toEqual({ name: "release-notes", description: "Write release notes from a changelog", license: null, category: "custom", enabled: true, editable: true });
  });

  it("reads its skill in the sandbox at /mnt/skills/custom, read-only", async () => {
    const run = await turn(a, "open the skill", [
      { name: "read_file", args: { description: "read", path: "/mnt/skills/custom/release-notes/SKILL.md" } },
    ]);
    expect(run.results[0]).toContain("Step one: read the changelog.");
  });

  it("edits, patches and deletes through the tool; the Settings route rolls back; each change reaches the next prompt", async () => {
    const edited = await turn(a, "improve it", [manage({ action: "edit", name: "release-notes", content: SKILL("release-notes", "Draft release notes", "Step one: group by component.") })]);
    expect(edited.results).toEqual(["Updated custom skill 'release-notes'."]);
    const patched = await turn(a, "fix a step", [manage({ action: "patch", name: "release-notes", find: "group by component", replace: "group by user impact" })]);
    expect(patched.results).toEqual(["Patched custom skill 'release-notes' (1 replacement(s) applied, 1 match(es) found)."]);
    expect((await (await a.fetch("/api/skills/custom/release-notes")).json()).content).toContain("group by user impact");
    const mismatch = await turn(a, "patch twice", [manage({ action: "patch", name: "release-notes", find: "Step", replace: "Phase", expected_count: 2 })]);
    expect(mismatch.results[0]).toContain("Expected 2 replacements but found 1.");
    const support = await turn(a, "add notes", [manage({ action: "write_file", name: "release-notes", path: "references/style.md", content: "Use past tense." }), manage({ action: "write_file", name: "release-notes", path: "../escape.md", content: "x" })]);
    expect(support.results[0]).toBe("Wrote 'references/style.md' for custom skill 'release-notes'.");
    expect(support.results[1]).toContain("Supporting file path must not contain parent-directory traversal.");
    expect(readFileSync(path.join(customRoot(aId), "release-notes", "references", "style.md"), "utf8")).toBe("Use past tense.");
    expect(existsSync(path.join(customRoot(aId), "escape.md"))).toBe(false);

    // Roll the patch back from Settings: the content before the latest SKILL.md change (the patch).
    const history = (await (await a.fetch("/api/skills/custom/release-notes/history")).json()).history as any[];
    expect(history.map((e) => e.action)).toEqual(["create", "edit", "patch", "write_file"]);
    const rolled = await a.fetch("/api/skills/custom/release-notes/rollback", { json: { history_index: 2 } });
    expect(rolled.status).toBe(200);
    expect(((await rolled.json()) as any).content).toContain("group by component");
    expect((await turn(a, "which skills?")).system).toContain("Draft release notes [custom, editable]");

    const deleted = await turn(a, "drop it", [manage({ action: "delete", name: "release-notes" })]);
    expect(deleted.results).toEqual(["Deleted custom skill 'release-notes'."]);
    expect((await turn(a, "and now?")).system).not.toContain("release-notes");
    expect((await a.fetch("/api/skills/custom/release-notes")).status).toBe(404);
    // Deleting keeps the history, so Settings can bring it back.
    const restored = await a.fetch("/api/skills/custom/release-notes/rollback", { json: { history_index: -1 } });
    expect(restored.status).toBe(200);
    expect((await turn(a, "back?")).system).toContain("<name>release-notes</name>");
  });

  it("keeps each user's skills apart: B neither sees nor touches A's", async () => {
    expect(((await (await b.fetch("/api/skills")).json()) as any).skills.map((s: any) => s.name)).toEqual(["plain-language"]);
    const bRun = await turn(b, "what can you do?", [
      manage({ action: "patch", name: "release-notes", find: "Step", replace: "Hacked" }),
      manage({ action: "delete", name: "release-notes" }),
      { name: "read_file", args: { description: "peek", path: "/mnt/skills/custom/release-notes/SKILL.md" } },
    ]);
    expect(bRun.system).not.toContain("release-notes");
    expect(bRun.results[0]).toContain("Custom skill 'release-notes' not found.");
    expect(bRun.results[1]).toContain("Custom skill 'release-notes' not found.");
    expect(bRun.results[2]).not.toContain("Step one");
    // B's own skill of the same name is B's alone.
    const mine = await turn(b, "make mine", [manage({ action: "create", name: "release-notes", content: SKILL("release-notes", "Bob's way", "Bob's steps.") })]);
    expect(mine.results).toEqual(["Created custom skill 'release-notes'."]);
    expect((await turn(b, "list")).system).toContain("Bob's way");
    const aSkill = (await (await a.fetch("/api/skills/custom/release-notes")).json()) as any;
    expect(aSkill.content).toContain("Step one");
    expect((await turn(a, "list")).system).not.toContain("Bob's way");
    // A switching their skill off leaves B's same-named skill on (per-user state, not extensions_config.json).
    expect((await a.fetch("/api/skills/release-notes", { method: "PUT", json: { enabled: false } })).status).toBe(200);
    expect((await turn(a, "off?")).system).toMatch(/<disabled_skills>[\s\S]*<name>release-notes<\/name>/);
    expect(((await (await b.fetch("/api/skills")).json()) as any).skills.find((s: any) => s.name === "release-notes").enabled).toBe(true);
    expect((await a.fetch("/api/skills/release-notes", { method: "PUT", json: { enabled: true } })).status).toBe(200);
    // Settings writes need the admin role (as upstream): B is a plain user.
    expect((await b.fetch("/api/skills/custom/release-notes", { method: "DELETE" })).status).toBe(403);
  });

  it("answers bad front matter with a tool error and a 400, writes nothing, and the run goes on", async () => {
    const run = await turn(a, "make a broken one", [
      manage({ action: "create", name: "broken", content: "---\nname: broken\ndescription: a: b: c\n---\nbody\n" }),
      manage({ action: "create", name: "broken", content: "---\nname: other\ndescription: x\n---\n" }),
      manage({ action: "create", name: "broken", content: "---\nname: broken\ndescription: <b>bold</b>\n---\n" }),
      manage({ action: "create", name: "Bad_Name", content: SKILL("bad-name", "x") }),
      manage({ action: "explode", name: "release-notes" }),
    ]);
    expect(run.results[0]).toMatch(/^Error: Tool 'skill_manage' failed with BadRequestError: Invalid YAML in frontmatter/);
    expect(run.results[1]).toContain("Frontmatter name 'other' must match requested skill name 'broken'.");
    expect(run.results[2]).toContain("Description cannot contain angle brackets (< or >)");
    expect(run.results[3]).toContain("Skill name must be hyphen-case");
    expect(run.results[4]).toContain("Unsupported action 'explode'.");
    expect(run.state.messages.at(-1).content).toBe("done");
    expect(existsSync(path.join(customRoot(aId), "broken"))).toBe(false);
    for (const r of run.results) expect(r).not.toContain(h.dir);

    const put = await a.fetch("/api/skills/custom/release-notes", { method: "PUT", json: { content: "---\nname: release-notes\ndescription: [unclosed\n---\n" } });
    expect(put.status).toBe(400);
    expect(((await put.json()) as any).detail).toMatch(/^Invalid YAML in frontmatter/);
  });

  it("skips a SKILL.md with bad front matter on disk with a logged warning; runs and the skills list still work", async () => {
    mkdirSync(path.join(customRoot(aId), "hand-made"), { recursive: true });
    writeFileSync(path.join(customRoot(aId), "hand-made", "SKILL.md"), "---\nname: hand-made\ndescription: oops: colon\n---\n");
    const run = await turn(a, "still fine?");
    expect(run.state.messages.at(-1).content).toBe("done");
    expect(run.system).not.toContain("hand-made");
    expect(run.system).toContain("<name>release-notes</name>");
    expect(logs.messages().some((m) => m.includes("Invalid YAML front-matter") && m.includes("hand-made"))).toBe(true);
    const list = await a.fetch("/api/skills");
    expect(list.status).toBe(200);
    expect(((await list.json()) as any).skills.map((s: any) => s.name)).not.toContain("hand-made");
  });
});

describe("slash activation", () => {
  it("puts the SKILL.md of /<name> into the model's request, for shipped and for the user's own skills", async () => {
    const run = await turn(a, "/plain-language What does HTTP 429 mean?");
    const sent = run.requests[0].body.messages.map((m: any) => (typeof m.content === "string" ? m.content : m.content.map((c: any) => c.text ?? "").join("")));
    const activation = sent.find((t: string) => t.includes("<slash_skill_activation>"));
    expect(activation).toContain('<skill name="plain-language" category="public"');
    expect(activation).toContain("Say the main point first");
    expect(activation).toContain("What does HTTP 429 mean?");
    // The activation sits right before the user's own message.
    expect(sent.at(-1)).toBe("/plain-language What does HTTP 429 mean?");

    const own = await turn(a, "/release-notes for v2");
    const ownSent = JSON.stringify(own.requests[0].body.messages);
    expect(ownSent).toContain('category=\\"custom\\"');
    expect(ownSent).toContain("Step one: group by component.");
  });

  it("answers '/<other user's skill>' as not installed, without calling the model", async () => {
    const bobsOwn = JSON.stringify((await turn(b, "/release-notes go")).requests[0].body.messages);
    expect(bobsOwn).toContain("Bob's steps.");
    expect(bobsOwn).not.toContain("Step one");
    const bob = await turn(b, "/hand-made go");
    expect(bob.requests).toHaveLength(0);
    expect(bob.state.messages.at(-1).content).toBe("Skill `/hand-made` is not installed.");
  });

  it("works offline with the scripted model and the shipped sample skill", async () => {
    const run = await turn(a, "/plain-language Explain recursion", [], { context: { model_name: "offline" } });
    expect(run.requests).toHaveLength(0);
    expect(run.state.messages.at(-1).content).toBe("Following the plain-language skill (Plain language): Explain recursion");
  });
});

describe("skill_evolution.enabled: false", () => {
  it("registers no skill_manage tool and no guidance", async () => {
    h.writeConfig(configFor(fake.url, false));
    const run = await turn(a, "hello");
    expect(run.tools).not.toContain("skill_manage");
    expect(run.tools).toContain("read_file");
    expect(run.system).not.toContain("Skill Self-Evolution");
    expect(run.system).toContain("<name>release-notes</name>");
  });
});
});
