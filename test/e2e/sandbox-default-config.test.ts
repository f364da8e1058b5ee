import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bubblewrapStatus } from "../../src/sandbox/bubblewrap.js";
import { postJson, startHarness, type Harness } from "../support/harness.js";

// The shipped config/config.yaml, offline: the scripted model drives the sandbox tools with `!call`.
let h: Harness;
const saved = { key: process.env.OPENAI_API_KEY, base: process.env.OPENAI_BASE_URL };
beforeAll(async () => {
  process.env.OPENAI_API_KEY = "";
  process.env.OPENAI_BASE_URL = "https://api.openai.com/v1";
  h = await startHarness(readFileSync(new URL("../../config/config.yaml", import.meta.url), "utf8").replace("token_delay_ms: 30", "token_delay_ms: 0"));
});
afterAll(async () => {
  await h.close();
  for (const [k, v] of [["OPENAI_API_KEY", saved.key], ["OPENAI_BASE_URL", saved.base]] as const) {
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
});

const say = async (threadId: string, content: string) => {
  const res = await postJson(`${h.url}/threads/${threadId}/runs/wait`, { input: { messages: [{ role: "user", content }] } });
  expect(res.status).toBe(200);
  return res.json();
};
const lastTool = (values: { messages: { type: string; content: string }[] }) => values.messages.filter((m) => m.type === "tool").at(-1)!.content;

describe("the shipped config's sandbox tools, driven offline", () => {
  it("writes, presents and serves a file; bash runs isolated where bwrap works, else it is not offered", async () => {
    const threadId = (await (await postJson(`${h.url}/threads`, {})).json()).thread_id;
    const write = await say(threadId, '!call write_file {"path": "/mnt/user-data/outputs/hi.md", "content": "# Hi"}');
    expect(lastTool(write)).toBe("OK");
    const shown = await say(threadId, '!call present_files {"filepaths": ["/mnt/user-data/outputs/hi.md"]}');
    expect(shown.artifacts).toEqual(["/mnt/user-data/outputs/hi.md"]);
    expect(await (await fetch(`${h.url}/api/threads/${threadId}/artifacts/mnt/user-data/outputs/hi.md`)).text()).toBe("# Hi");
    const bash = await say(threadId, '!call bash {"command": "ls /mnt/user-data/outputs"}');
    // AutoSandboxProvider: the bubblewrap provider where bwrap works, else the local one without bash.
    if (bubblewrapStatus().available) expect(bash.messages.filter((m: { type: string }) => m.type === "tool").at(-1).content).toBe("hi.md");
    else expect(bash.messages.at(-1).content).toContain("not available");
    expect((await (await fetch(`${h.url}/health`)).json()).sandbox).toBe(bubblewrapStatus().available ? "bubblewrap" : "local");
  });
});
