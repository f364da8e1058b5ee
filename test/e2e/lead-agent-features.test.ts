import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { postJson, startHarness, type Harness } from "../support/harness.js";
import { parseSse } from "../support/sse.js";

// The app-layer chain over HTTP with the scripted model: titles, plan mode, memory.
const CONFIG = "models:\n  - name: scripted\n    use: deerflow-gateway:ScriptedChatModel\n    model: s\n";
let h: Harness;
beforeEach(async () => {
  h = await startHarness(CONFIG);
});
afterEach(async () => h.close());

const human = (content: string) => ({ messages: [{ role: "user", content }] });
const lastValues = async (res: Response) => parseSse(await res.text()).frames.filter((f) => f.event === "values").at(-1)!.data;

describe("the lead agent's chain over HTTP", () => {
  it("titles a thread after its first exchange (fallback title without a title model)", async () => {
    const values = await lastValues(await postJson(`${h.url}/runs/stream`, { input: human("Plan a trip to Lisbon") }));
    expect(values.title).toBe("Plan a trip to Lisbon");
  });

  it("gives a plan-mode run the write_todos tool and records the todos in state", async () => {
    const todos = [{ content: "book flights", status: "in_progress" }, { content: "find hotel", status: "pending" }];
    const res = await postJson(`${h.url}/runs/stream`, { input: human(`!call write_todos ${JSON.stringify({ todos })}`), context: { is_plan_mode: true } });
    const values = await lastValues(res);
    expect(values.todos).toEqual(todos);
    const plain = await lastValues(await postJson(`${h.url}/runs/stream`, { input: human(`!call write_todos ${JSON.stringify({ todos })}`) }));
    expect(plain.messages.at(-1).content).toContain("Tool 'write_todos' is not available");
  });

  it("queues the conversation for memory and writes it under DEER_FLOW_HOME by shutdown", async () => {
    const res = await postJson(`${h.url}/threads/${(await (await postJson(`${h.url}/threads`, { thread_id: "mem-t" })).json()).thread_id}/runs/stream`, { input: human("I live in Lisbon. Remember it.") });
    await res.text();
    await h.app.close();
    const file = path.join(process.env.DEER_FLOW_HOME!, "users", "default", "memory", "default.json");
    expect(existsSync(file)).toBe(true);
    const doc = JSON.parse(readFileSync(file, "utf8"));
    // The scripted model's extraction rule: first-person sentences become facts.
    expect(doc.facts.map((f: { content: string; source: string }) => [f.content, f.source])).toEqual([["I live in Lisbon", "mem-t"]]);
    const { buildTestApp } = await import("../support/harness.js");
    h.app = await buildTestApp();
  });
});
