import { existsSync } from "node:fs";
import path from "node:path";
import { Client } from "@langchain/langgraph-sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { useFakeOpenAI, type FakeReply } from "../support/fake-openai.js";
import { postJson, startHarness, uploadFiles, type Harness } from "../support/harness.js";

// Agents that work on files, end to end: the fake OpenAI server plays the model and calls the sandbox tools over
// the real HTTP API; the client uploads, runs and downloads.
const fake = useFakeOpenAI();
let h: Harness;

const model = (name: string, url: string, extra = "") => `  - name: ${name}\n    use: langchain_openai:ChatOpenAI\n    model: ${name}-id\n    api_key: sk-test\n    base_url: ${url}\n${extra}`;
const configFor = (url: string) =>
  `models:\n${model("fake-gpt", url)}${model("fake-vision", url, "    supports_vision: true\n")}` +
  "tool_groups:\n  - name: file:read\n  - name: file:write\n  - name: bash\n" +
  "tools:\n" +
  "  - name: ls\n    group: file:read\n    use: deerflow.sandbox.tools:ls_tool\n" +
  "  - name: read_file\n    group: file:read\n    use: deerflow.sandbox.tools:read_file_tool\n" +
  "  - name: write_file\n    group: file:write\n    use: deerflow-gateway/sandbox:writeFileTool\n" +
  "  - name: str_replace\n    group: file:write\n    use: deerflow.sandbox.tools:str_replace_tool\n" +
  "  - name: bash\n    group: bash\n    use: deerflow.sandbox.tools:bash_tool\n";

beforeAll(async () => {
  h = await startHarness(configFor(fake.url));
});
afterAll(async () => {
  await h.close();
});

/** Replies in order, one per model call (a call is recognised by how many tool results it already carries). */
const script = (replies: FakeReply[]) => (body: Record<string, any>): FakeReply => {
  const done = body.messages.filter((m: any) => m.role === "tool").length;
  return replies[Math.min(done, replies.length - 1)];
};
const newThread = async () => (await (await postJson(`${h.url}/threads`, {})).json()).thread_id as string;
const runWait = async (threadId: string, message: Record<string, unknown>, context: Record<string, unknown> = {}) => {
  const res = await postJson(`${h.url}/threads/${threadId}/runs/wait`, { input: { messages: [{ role: "user", ...message }] }, context });
  expect(res.status).toBe(200);
  return res.json();
};
const toolResults = (i: number) => fake.requests[i].body.messages.filter((m: any) => m.role === "tool").map((m: any) => m.content);
const userText = (body: Record<string, any>) =>
  body.messages
    .filter((m: any) => m.role === "user")
    .map((m: any) => (typeof m.content === "string" ? m.content : m.content.map((b: any) => b.text ?? "").join("")))
    .join("\n");

const PNG_1X1 = Buffer.from("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==", "base64");
const uploadFile = (threadId: string, name: string, content: Buffer | string, type = "text/plain") => uploadFiles(h.url, threadId, [[name, content, type]]);

describe("a run that writes, lists and presents a file, which the client then downloads", () => {
  it("goes write_file -> ls -> present_files -> answer, records sandbox and artifacts, and serves the file", async () => {
    const report = "# Findings\n\nEverything is fine.\n";
    fake.respond = script([
      { toolCalls: [{ name: "write_file", args: { path: "/mnt/user-data/outputs/report.md", content: report } }] },
      { toolCalls: [{ name: "ls", args: { path: "/mnt/user-data/outputs" } }] },
      { toolCalls: [{ name: "present_files", args: { filepaths: ["/mnt/user-data/outputs/report.md"] } }] },
      { content: "Your report is ready." },
    ]);
    const threadId = await newThread();
    const values = await runWait(threadId, { content: "write me a report" });

    expect(fake.requests).toHaveLength(4);
    const offered = fake.requests[0].body.tools.map((t: any) => t.function.name);
    expect(offered).toEqual(expect.arrayContaining(["ls", "read_file", "write_file", "str_replace", "present_files"]));
    expect(offered).not.toContain("bash");
    expect(toolResults(1)).toEqual(["OK"]);
    expect(toolResults(2)[1]).toBe("/mnt/user-data/outputs/report.md");
    expect(toolResults(3)[2]).toBe("Successfully presented files");
    expect(values.sandbox).toEqual({ sandbox_id: `local:default:${threadId}` });
    expect(values.artifacts).toEqual(["/mnt/user-data/outputs/report.md"]);
    expect(values.messages.at(-1).content).toBe("Your report is ready.");

    const download = await fetch(`${h.url}/api/threads/${threadId}/artifacts${values.artifacts[0]}`);
    expect(download.status).toBe(200);
    expect(download.headers.get("content-type")).toBe("text/markdown; charset=utf-8");
    expect(await download.text()).toBe(report);
    // The official SDK client sees the same artifacts in the thread state.
    const state = await new Client({ apiUrl: h.url, apiKey: null }).threads.getState(threadId);
    expect((state.values as { artifacts: string[] }).artifacts).toEqual(["/mnt/user-data/outputs/report.md"]);
  });

  it("answers a traversal attempt by the model with an error result and writes nothing outside", async () => {
    fake.respond = script([
      { toolCalls: [{ name: "write_file", args: { path: "/mnt/user-data/outputs/../../../../../pwned.txt", content: "x" } }] },
      { content: "ok" },
    ]);
    const threadId = await newThread();
    await runWait(threadId, { content: "try" });
    expect(toolResults(1)[0]).toMatch(/^Error: Path traversal/);
    expect(existsSync(path.join(process.env.DEER_FLOW_HOME!, "pwned.txt"))).toBe(false);
    expect(existsSync(path.join(process.env.DEER_FLOW_HOME!, "users", "default", "pwned.txt"))).toBe(false);
  });

  it("drops the sandbox (provider state and files) when the thread is deleted", async () => {
    fake.respond = script([{ toolCalls: [{ name: "write_file", args: { path: "/mnt/user-data/workspace/a.txt", content: "x" } }] }, { content: "ok" }]);
    const threadId = await newThread();
    await runWait(threadId, { content: "go" });
    const dir = path.join(process.env.DEER_FLOW_HOME!, "users", "default", "threads", threadId);
    expect(h.app.deerflow.sandbox.has(threadId)).toBe(true);
    expect(existsSync(path.join(dir, "user-data", "workspace", "a.txt"))).toBe(true);
    expect((await fetch(`${h.url}/threads/${threadId}`, { method: "DELETE" })).status).toBeLessThan(300);
    expect(h.app.deerflow.sandbox.has(threadId)).toBe(false);
    expect(existsSync(dir)).toBe(false);
  });
});

describe("uploads reach the model on the next turn", () => {
  it("announces an uploaded file in the next model call, and the model can read it", async () => {
    const threadId = await newThread();
    const up = await uploadFile(threadId, "notes.txt", "alpha beta gamma");
    expect(up.status).toBe(200);
    const [file] = (await up.json()).files;
    fake.respond = script([{ toolCalls: [{ name: "read_file", args: { path: file.path } }] }, { content: "It lists three letters." }]);
    await runWait(threadId, { content: "what is in my file?", additional_kwargs: { files: [{ filename: file.filename, size: file.size, path: file.path, status: "uploaded" }] } });

    const first = userText(fake.requests[0].body);
    expect(first).toContain("<current_uploads>");
    expect(first).toContain("notes.txt");
    expect(first).toContain("/mnt/user-data/uploads/notes.txt");
    expect(first).toContain("what is in my file?");
    expect(toolResults(1)).toEqual(["alpha beta gamma"]);
  });
});

describe("view_image with a vision model", () => {
  it("shows the viewed image to the model in its next request, and keeps no base64 in the thread state", async () => {
    const threadId = await newThread();
    expect((await uploadFile(threadId, "pic.png", PNG_1X1, "image/png")).status).toBe(200);
    fake.respond = script([{ toolCalls: [{ name: "view_image", args: { image_path: "/mnt/user-data/uploads/pic.png" } }] }, { content: "A single pixel." }]);
    const values = await runWait(threadId, { content: "look at my picture" }, { model_name: "fake-vision" });

    expect(fake.requests).toHaveLength(2);
    expect(fake.requests[0].body.tools.map((t: any) => t.function.name)).toContain("view_image");
    expect(toolResults(1)).toEqual(["Successfully read image"]);
    const imageBlocks = fake.requests[1].body.messages
      .filter((m: any) => m.role === "user" && Array.isArray(m.content))
      .flatMap((m: any) => m.content.filter((b: any) => b.type === "image_url"));
    expect(imageBlocks).toHaveLength(1);
    expect(imageBlocks[0].image_url.url).toBe(`data:image/png;base64,${PNG_1X1.toString("base64")}`);
    expect(values.viewed_images["/mnt/user-data/uploads/pic.png"]).toMatchObject({ mime_type: "image/png", size: PNG_1X1.length });
    expect(JSON.stringify(values)).not.toContain("base64,");
  });
});
