// Drives a research tool over HTTP: the offline scripted model calls it with `!call <tool> {args}` on a fresh
// thread, and the tool's result is read from the thread's final state, as a user of the API would see it.
import { randomUUID } from "node:crypto";
import { postJson, type Harness } from "../support/harness.js";

/** The config of a research test: the scripted model plus the given `tools:` entries (YAML list items). */
export function researchConfig(toolsYaml: string): string {
  return `models:\n  - name: s\n    use: deerflow-gateway:ScriptedChatModel\n    model: s\ntools:\n${toolsYaml}\n`;
}

/** Runs `!call <tool> <args>` and returns the tool message's text plus the final AI message and the state. */
export async function callTool(h: Harness, tool: string, args: unknown): Promise<{ result: string; final: string; values: Record<string, unknown>; status: number }> {
  const threadId = randomUUID();
  await postJson(`${h.url}/threads`, { thread_id: threadId });
  const res = await postJson(`${h.url}/threads/${threadId}/runs/wait`, { input: { messages: [{ role: "user", content: `!call ${tool} ${JSON.stringify(args)}` }] } });
  const values = (await res.json()) as { messages: { type: string; content: unknown }[] } & Record<string, unknown>;
  const toolMessage = values.messages.find((m) => m.type === "tool");
  const final = values.messages.at(-1);
  return { result: String(toolMessage?.content ?? ""), final: String(final?.content ?? ""), values, status: res.status };
}
