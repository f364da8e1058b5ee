import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { echoReply, useFakeOpenAI, type FakeReply } from "../support/fake-openai.js";
import { postJson, startHarness, type Harness } from "../support/harness.js";
import { parseSse } from "../support/sse.js";

// Issue 46 item 3, tool_progress over HTTP: stagnating tool results are detected and the model told (a
// progress_hint message in its next request), a tool failing in a way the model cannot fix is blocked, and an
// exact repeat is left to loop detection's warning.
const fake = useFakeOpenAI();
let h: Harness;

const tool = (name: string, use: string) => `  - name: ${name}\n    group: file:read\n    use: deerflow.sandbox.tools:${use}\n`;
const config = (url: string) =>
  "title:\n  enabled: false\nmemory:\n  enabled: false\nsandbox:\n  use: deerflow.sandbox.local:LocalSandboxProvider\n  allow_host_bash: true\n" +
  "tool_progress:\n  enabled: true\n" +
  "tool_groups:\n  - name: file:read\ntools:\n" + tool("read_file", "read_file_tool") + tool("bash", "bash_tool") +
  `models:\n  - name: main\n    use: langchain_openai:ChatOpenAI\n    model: main-id\n    api_key: sk-test\n    base_url: ${url}\n    timeout: 5\n`;

beforeAll(async () => {
  h = await startHarness(config(fake.url));
});
afterAll(async () => {
  await h.close();
});

function script(replies: FakeReply[]) {
  let n = 0;
  fake.respond = (body) => replies[n++] ?? echoReply(body);
}
async function run(text: string) {
  const res = await postJson(`${h.url}/runs/stream`, { input: { messages: [{ role: "user", content: text }] }, stream_mode: ["values"] });
  expect(res.status).toBe(200);
  return parseSse(await res.text()).frames;
}
const userTexts = (i: number) => fake.requests[i].body.messages.filter((m: any) => m.role === "user").map((m: any) => `${m.name ?? ""}|${typeof m.content === "string" ? m.content : JSON.stringify(m.content)}`);
const lastTool = (i: number) => fake.requests[i].body.messages.filter((m: any) => m.role === "tool").at(-1).content as string;

describe("tool_progress", () => {
  it("tells the model after three not-found results in a row, and not before", async () => {
    const reads = [1, 2, 3].map((i) => ({ toolCalls: [{ name: "read_file", args: { path: `/mnt/user-data/workspace/missing-${i}.txt` } }] }));
    script([...reads, { content: "giving up" }]);
    await run("find my notes");
    expect(fake.requests).toHaveLength(4);
    expect(lastTool(3)).toMatch(/^Error: .*not found/i);
    expect(userTexts(2).join("\n")).not.toContain("PROGRESS HINT");
    expect(userTexts(3).at(-1)).toBe("progress_hint|[PROGRESS HINT] The resource was not found repeatedly. Try rephrasing your search query with different keywords or approach.");
  });

  it("blocks a tool after repeated transient failures: the sixth call does not run and the model sees why", async () => {
    const calls = [1, 2, 3, 4, 5, 6].map((i) => ({ toolCalls: [{ name: "bash", args: { command: `echo "Error: connection timed out ${i}" && echo ran-${i} >> /mnt/user-data/workspace/runs.txt` } }] }));
    script([...calls, { content: "stopped" }]);
    const frames = await run("fetch the data");
    expect(fake.requests).toHaveLength(7);
    expect(lastTool(3)).toContain("connection timed out 3");
    expect(userTexts(3).at(-1)).toMatch(/^progress_hint\|\[PROGRESS HINT\] The tool encountered repeated transient failures\./);
    expect(lastTool(6)).toBe("[TOOL_BLOCKED] Repeated transient failures — try a different approach.");
    // Five runs of the command, the sixth refused.
    const file = await fetch(`${h.url}/api/threads/${frames[0].data.thread_id}/artifacts/mnt/user-data/workspace/runs.txt`);
    expect((await file.text()).trim().split("\n")).toEqual(["ran-1", "ran-2", "ran-3", "ran-4", "ran-5"]);
  });

  it("leaves an exact repeat to loop detection's warning instead of warning twice", async () => {
    const same = { toolCalls: [{ name: "read_file", args: { path: "/mnt/user-data/workspace/nope.txt" } }] };
    script([same, same, same, { content: "ok" }]);
    await run("read nope");
    const texts = userTexts(3).join("\n");
    expect(texts).toContain("[LOOP DETECTED]");
    expect(texts).not.toContain("PROGRESS HINT");
  });
});
