import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { echoReply, useFakeOpenAI, type FakeReply } from "../support/fake-openai.js";
import { postJson, startHarness, type Harness } from "../support/harness.js";
import { parseSse } from "../support/sse.js";

// Issue 46 item 3: a skill's `allowed-tools` is enforced while the skill is active (slash activation, or the
// model reading its SKILL.md), over HTTP against the fake OpenAI server. A skill without the key allows all.
const ENV_KEYS = ["DEER_FLOW_SKILLS_DIR", "DEER_FLOW_EXTENSIONS_CONFIG_PATH"] as const;
const saved = Object.fromEntries(ENV_KEYS.map((k) => [k, process.env[k]]));
const work = mkdtempSync(path.join(tmpdir(), "skill-policy-"));
const fake = useFakeOpenAI();
let h: Harness;

const skill = (name: string, extra: string) => {
  mkdirSync(path.join(work, "skills", "public", name), { recursive: true });
  writeFileSync(path.join(work, "skills", "public", name, "SKILL.md"), `---\nname: ${name}\ndescription: The ${name} skill.\n${extra}---\n\n# ${name}\n\nDo the thing.\n`);
};
const tool = (name: string, use: string) => `  - name: ${name}\n    group: file:read\n    use: deerflow.sandbox.tools:${use}\n`;
const config = (url: string) =>
  "title:\n  enabled: false\nmemory:\n  enabled: false\nsandbox:\n  use: deerflow.sandbox.local:LocalSandboxProvider\n  allow_host_bash: true\n" +
  "tool_groups:\n  - name: file:read\ntools:\n" + tool("read_file", "read_file_tool") + tool("write_file", "write_file_tool") + tool("bash", "bash_tool") +
  `models:\n  - name: main\n    use: langchain_openai:ChatOpenAI\n    model: main-id\n    api_key: sk-test\n    base_url: ${url}\n    timeout: 5\n`;

beforeAll(async () => {
  skill("shell-only", "allowed-tools:\n  - bash\n");
  skill("free-form", "");
  writeFileSync(path.join(work, "extensions_config.json"), JSON.stringify({ mcpServers: {}, skills: {} }));
  process.env.DEER_FLOW_SKILLS_DIR = path.join(work, "skills");
  process.env.DEER_FLOW_EXTENSIONS_CONFIG_PATH = path.join(work, "extensions_config.json");
  h = await startHarness(config(fake.url));
});
afterAll(async () => {
  await h.close();
  for (const k of ENV_KEYS) {
    if (saved[k] === undefined) delete process.env[k];
    else process.env[k] = saved[k];
  }
  rmSync(work, { recursive: true, force: true });
});

function script(replies: FakeReply[]) {
  let n = 0;
  fake.respond = (body) => replies[n++] ?? echoReply(body);
}
async function run(text: string) {
  const res = await postJson(`${h.url}/runs/stream`, { input: { messages: [{ role: "user", content: text }] }, stream_mode: ["values"] });
  expect(res.status).toBe(200);
  const frames = parseSse(await res.text()).frames;
  return frames[0].data.thread_id as string;
}
const toolNames = (i: number): string[] => (fake.requests[i].body.tools ?? []).map((t: any) => t.function.name).sort();
const lastTool = (i: number) => fake.requests[i].body.messages.filter((m: any) => m.role === "tool").at(-1).content as string;
const fileText = async (tid: string, name: string) => {
  const res = await fetch(`${h.url}/api/threads/${tid}/artifacts/mnt/user-data/workspace/${name}`);
  return res.status === 200 ? res.text() : null;
};
const write = (name: string) => ({ toolCalls: [{ name: "write_file", args: { path: `/mnt/user-data/workspace/${name}`, content: "written" } }] });

describe("a skill's allowed-tools", () => {
  it("while /shell-only is active, binds only its tools (plus read_file) and refuses write_file without running it", async () => {
    script([write("a.txt"), { toolCalls: [{ name: "bash", args: { command: "echo via-bash > /mnt/user-data/workspace/b.txt" } }] }, { content: "done" }]);
    const tid = await run("/shell-only make the files");
    expect(toolNames(0)).toEqual(["bash", "read_file"]);
    expect(lastTool(1)).toBe("Error: Tool 'write_file' is not allowed by the active skill policy.");
    expect(lastTool(2)).toBe("(no output)");
    expect(await fileText(tid, "a.txt")).toBeNull();
    expect((await fileText(tid, "b.txt"))?.trim()).toBe("via-bash");
  });

  it("a skill without the key allows every tool", async () => {
    script([write("c.txt"), { content: "done" }]);
    const tid = await run("/free-form make the file");
    expect(toolNames(0)).toEqual(expect.arrayContaining(["bash", "read_file", "write_file"]));
    expect(lastTool(1)).toBe("OK");
    expect(await fileText(tid, "c.txt")).toBe("written");
  });

  it("applies once the model has read the skill's SKILL.md, and not before", async () => {
    script([
      write("d.txt"),
      { toolCalls: [{ name: "read_file", args: { path: "/mnt/skills/public/shell-only/SKILL.md" } }] },
      write("e.txt"),
      { content: "done" },
    ]);
    const tid = await run("make two files");
    expect(toolNames(0)).toContain("write_file");
    expect(lastTool(1)).toBe("OK");
    expect(lastTool(2)).toContain("# shell-only");
    expect(toolNames(2)).toEqual(["bash", "read_file"]);
    expect(lastTool(3)).toBe("Error: Tool 'write_file' is not allowed by the active skill policy.");
    expect(await fileText(tid, "d.txt")).toBe("written");
    expect(await fileText(tid, "e.txt")).toBeNull();
  });
});
