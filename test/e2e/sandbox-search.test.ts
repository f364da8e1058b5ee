import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { captureLogs } from "../support/capture-logs.js";
import { applyPromptTemplate } from "../../src/agents/lead-agent/prompt.js";
import { useFakeOpenAI, systemText, type FakeReply } from "../support/fake-openai.js";
import { postJson, startHarness, type Harness } from "../support/harness.js";

// glob and grep, skills at /mnt/skills and sandbox.mounts, driven over HTTP by the fake OpenAI server calling tools.
const work = mkdtempSync(path.join(tmpdir(), "sandbox-search-"));
const ro = path.join(work, "reference");
const rw = path.join(work, "scratch");
const saved = process.env.DEER_FLOW_SKILLS_DIR;
const fake = useFakeOpenAI();
let h: Harness;
let logs: ReturnType<typeof captureLogs>;

const configFor = (url: string) => `models:
  - {name: fake-gpt, use: "langchain_openai:ChatOpenAI", model: gpt-test, api_key: sk-test, base_url: "${url}"}
tools:
  - {name: read_file, group: file:read, use: "deerflow.sandbox.tools:read_file_tool"}
  - {name: glob, group: file:read, use: "deerflow.sandbox.tools:glob_tool", max_results: 200}
  - {name: grep, group: file:read, use: "deerflow.sandbox.tools:grep_tool", max_results: 2}
  - {name: write_file, group: file:write, use: "deerflow.sandbox.tools:write_file_tool"}
sandbox:
  mounts:
    - {host_path: "${ro}", container_path: /mnt/reference, read_only: true}
    - {host_path: "${rw}", container_path: /mnt/scratch/}
    - {host_path: "${path.join(work, "missing")}", container_path: /mnt/missing}
    - {host_path: "${rw}", container_path: /mnt/user-data/sneaky}
`;

beforeAll(async () => {
  mkdirSync(ro, { recursive: true });
  mkdirSync(rw, { recursive: true });
  writeFileSync(path.join(ro, "notes.txt"), "alpha\nNeedle in the reference\n");
  cpSync(path.resolve("test/fixtures/deerflow/skills/data-analysis"), path.join(work, "skills", "public", "data-analysis"), { recursive: true });
  process.env.DEER_FLOW_SKILLS_DIR = path.join(work, "skills");
  logs = captureLogs();
  h = await startHarness(configFor(fake.url));
});
afterAll(async () => {
  logs.restore();
  await h.close();
  if (saved === undefined) delete process.env.DEER_FLOW_SKILLS_DIR;
  else process.env.DEER_FLOW_SKILLS_DIR = saved;
  rmSync(work, { recursive: true, force: true });
});

/** Makes the model call `calls` one per turn, then answer "done"; returns the tool results in order. */
async function runTools(calls: { name: string; args: Record<string, unknown> }[]): Promise<string[]> {
  fake.respond = (body): FakeReply => {
    const done = body.messages.filter((m: any) => m.role === "tool").length;
    return done < calls.length ? { toolCalls: [calls[done]] } : { content: "done" };
  };
  const thread = (await (await postJson(`${h.url}/threads`, {})).json()).thread_id;
  const res = await postJson(`${h.url}/threads/${thread}/runs/wait`, { input: { messages: [{ role: "user", content: "go" }] } });
  expect(res.status).toBe(200);
  return fake.requests.at(-1)!.body.messages.filter((m: any) => m.role === "tool").map((m: any) => m.content);
}

describe("glob and grep over HTTP", () => {
  it("find files by pattern and lines by regex in the thread's directories, as virtual paths", async () => {
    const results = await runTools([
      { name: "write_file", args: { path: "/mnt/user-data/workspace/src/app.py", content: "print('hi')\n# TODO: fix me\n" } },
      { name: "write_file", args: { path: "/mnt/user-data/workspace/node_modules/x.py", content: "# TODO ignored\n" } },
      { name: "glob", args: { description: "find python", pattern: "*.py", path: "/mnt/user-data" } },
      { name: "grep", args: { description: "find todos", pattern: "todo", path: "/mnt/user-data/workspace" } },
      { name: "grep", args: { description: "literal", pattern: "print(", literal: true, case_sensitive: true, path: "/mnt/user-data/workspace/src/app.py" } },
      { name: "glob", args: { description: "none", pattern: "**/*.rs", path: "/mnt/user-data/workspace" } },
    ]);
    expect(results[2]).toBe("Found 1 paths under /mnt/user-data\n1. /mnt/user-data/workspace/src/app.py");
    expect(results[3]).toBe("Found 1 matches under /mnt/user-data/workspace\n/mnt/user-data/workspace/src/app.py:2: # TODO: fix me");
    expect(results[4]).toBe("Found 1 matches under /mnt/user-data/workspace/src/app.py\n/mnt/user-data/workspace/src/app.py:1: print('hi')");
    expect(results[5]).toBe("No files matched under /mnt/user-data/workspace");
    for (const r of results) expect(r).not.toContain(h.dir);
  });

  it("caps results at the configured max_results and refuses bad regexes and paths outside the sandbox", async () => {
    const results = await runTools([
      { name: "write_file", args: { path: "/mnt/user-data/workspace/many.txt", content: "hit 1\nhit 2\nhit 3\n" } },
      { name: "grep", args: { description: "many", pattern: "hit", path: "/mnt/user-data/workspace", max_results: 50 } },
      { name: "grep", args: { description: "bad", pattern: "(unclosed", path: "/mnt/user-data/workspace" } },
      { name: "glob", args: { description: "escape", pattern: "*", path: "/etc" } },
      { name: "glob", args: { description: "traversal", pattern: "*", path: "/mnt/user-data/../../etc" } },
    ]);
    expect(results[1]).toBe(
      "Found 2 matches under /mnt/user-data/workspace (showing first 2)\n/mnt/user-data/workspace/many.txt:1: hit 1\n/mnt/user-data/workspace/many.txt:2: hit 2\nResults truncated. Narrow the path or add a glob filter.",
    );
    expect(results[2]).toMatch(/^Error: Invalid regex pattern: /);
    expect(results[3]).toMatch(/^Error: Only paths under \/mnt\/user-data/);
    expect(results[4]).toMatch(/^Error: Path traversal/);
  });
});

describe("skills and sandbox.mounts in the sandbox", () => {
  it("shows skills read-only at /mnt/skills", async () => {
    const results = await runTools([
      { name: "glob", args: { description: "skills", pattern: "**/SKILL.md", path: "/mnt/skills" } },
      { name: "read_file", args: { path: "/mnt/skills/public/data-analysis/SKILL.md" } },
      { name: "write_file", args: { path: "/mnt/skills/public/data-analysis/SKILL.md", content: "overwritten" } },
    ]);
    expect(results[0]).toBe("Found 1 paths under /mnt/skills\n1. /mnt/skills/public/data-analysis/SKILL.md");
    expect(results[1]).toContain("# Data Analysis Skill");
    expect(results[2]).toBe("Error: Access denied: /mnt/skills/public/data-analysis/SKILL.md is on a read-only mount");
    expect(readFileSync(path.join(work, "skills/public/data-analysis/SKILL.md"), "utf8")).toContain("# Data Analysis Skill");
  });

  it("maps read-only and read-write host directories at their virtual paths; bad mounts are logged and skipped", async () => {
    const results = await runTools([
      { name: "grep", args: { description: "ref", pattern: "needle", path: "/mnt/reference" } },
      { name: "write_file", args: { path: "/mnt/reference/new.txt", content: "x" } },
      { name: "write_file", args: { path: "/mnt/scratch/out/result.txt", content: "written through the mount" } },
      { name: "read_file", args: { path: "/mnt/missing/anything.txt" } },
    ]);
    expect(results[0]).toBe("Found 1 matches under /mnt/reference\n/mnt/reference/notes.txt:2: Needle in the reference");
    expect(results[1]).toBe("Error: Access denied: /mnt/reference/new.txt is on a read-only mount");
    expect(existsSync(path.join(ro, "new.txt"))).toBe(false);
    expect(results[2]).toBe("OK");
    expect(readFileSync(path.join(rw, "out/result.txt"), "utf8")).toBe("written through the mount");
    expect(results[3]).toMatch(/^Error: Only paths under \/mnt\/user-data/);
    // The system prompt lists the configured mounts with their access.
    const system = systemText(fake.requests[0].body);
    expect(system).toContain("**Custom Mounted Directories:**\n- Custom mount: `/mnt/reference` - a host directory mapped into the sandbox (read-only)\n- Custom mount: `/mnt/scratch/` - a host directory mapped into the sandbox (read-write)");
    expect(applyPromptTemplate({})).not.toContain("Custom Mounted Directories");
    const warnings = logs.lines().filter((l) => l.level === 40).map((l) => String(l.msg));
    expect(warnings).toContain(`sandbox.mounts entry ${path.join(work, "missing")} -> /mnt/missing ignored: host_path does not exist`);
    expect(warnings).toContain(`sandbox.mounts entry ${rw} -> /mnt/user-data/sneaky ignored: container_path overlaps /mnt/user-data`);
  });
});
