import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse as parseYaml } from "yaml";
import { useFakeOpenAI } from "../support/fake-openai.js";
import { postJson, startHarness, type Harness } from "../support/harness.js";
import { parseSse } from "../support/sse.js";

// Issue 46, the three small departures from upstream, over HTTP against the fake OpenAI server.
const fake = useFakeOpenAI();
let h: Harness;

beforeAll(async () => {
  h = await startHarness(`models:
  - name: fake-gpt
    use: langchain_openai:ChatOpenAI
    model: gpt-test
    api_key: sk-test
    base_url: ${fake.url}
agents_api:
  enabled: true
tool_groups:
  - name: file:write
tools:
  - name: write_file
    group: file:write
    use: deerflow.sandbox.tools:write_file_tool
`);
});
afterAll(async () => h.close());

async function run(threadId: string, text: string, extra: Record<string, unknown> = {}): Promise<Record<string, any>> {
  const res = await postJson(`${h.url}/threads/${threadId}/runs/stream`, { input: { messages: [{ role: "user", content: text }] }, stream_mode: ["values"], ...extra });
  expect(res.status).toBe(200);
  const frames = parseSse(await res.text()).frames;
  expect(frames.some((f) => f.event === "error")).toBe(false);
  return frames.filter((f) => f.event === "values").at(-1)!.data;
}
const newThread = async (): Promise<string> => (await (await postJson(`${h.url}/threads`, {})).json()).thread_id;

describe("an invalid tool call (arguments that do not parse)", () => {
  it("gets a synthetic result: failed before execution, with the parser error, never the arguments", async () => {
    const thread = await newThread();
    const bad = '{"path": "/mnt/user-data/outputs/r.md", "content": "# SECRET-PAYLOAD "quoted" text"}';
    fake.respond = () => ({ toolCalls: [{ name: "write_file", args: {}, rawArguments: bad }] });
    await run(thread, "write the report");
    fake.respond = () => ({ content: "ok" });
    await run(thread, "and now?");
    const sent = fake.requests.at(-1)!.body.messages;
    const result = sent.find((m: any) => m.role === "tool");
    expect(result.content).toMatch(/^\[write_file failed before execution: its arguments were not valid JSON, so nothing was written\..* Parser error: .+\]$/s);
    expect(result.content).not.toContain("SECRET-PAYLOAD");
    expect(result.content).not.toContain("quoted");
  });

  it("names the tool and says it did not run for other tools", async () => {
    const thread = await newThread();
    fake.respond = () => ({ toolCalls: [{ name: "present_files", args: {}, rawArguments: "not json at all" }] });
    await run(thread, "show me");
    fake.respond = () => ({ content: "ok" });
    await run(thread, "again");
    const result = fake.requests.at(-1)!.body.messages.find((m: any) => m.role === "tool");
    expect(result.content).toMatch(/^\[present_files failed before execution: its arguments were not valid JSON, so the tool did not run\. Parser error: .+\]$/);
    expect(result.content).not.toContain("not json at all");
  });
});

describe("update_agent", () => {
  it("keeps the agent's name equal to its directory name", async () => {
    expect((await postJson(`${h.url}/api/agents`, { name: "name-keeper", description: "first", soul: "I keep names." })).status).toBe(201);
    const configFile = path.join(h.dir, "agents", "default", "name-keeper", "config.yaml");
    // An operator's hand edit (or an old file) left another name in config.yaml.
    writeFileSync(configFile, readFileSync(configFile, "utf8").replace(/^name: .*$/m, "name: Someone Else"));
    fake.respond = (body) => (body.messages.at(-1).role === "tool" ? { content: "done" } : { toolCalls: [{ name: "update_agent", args: { description: "second" } }] });
    const values = await run(await newThread(), "update yourself", { assistant_id: "name-keeper" });
    expect(values.messages.find((m: any) => m.type === "tool").content).toContain("updated successfully");
    const saved = parseYaml(readFileSync(configFile, "utf8"));
    expect(saved).toMatchObject({ name: "name-keeper", description: "second" });
    expect((await (await fetch(`${h.url}/api/agents/name-keeper`)).json()).name).toBe("name-keeper");
  });
});

describe("the fallback title", () => {
  it("never splits a character: it counts code points", async () => {
    fake.respond = () => ({ content: "hi" });
    const text = `${"a".repeat(49)}😀${"b".repeat(10)}`; // UTF-16 unit 50 is the emoji's second half
    const values = await run(await newThread(), text);
    expect(values.title).toBe(`${"a".repeat(49)}😀...`);
    expect(values.title.isWellFormed()).toBe(true);
  });
});
