// Shared setup of the bubblewrap provider tests: a gateway on the scripted model whose sandbox is the bubblewrap
// provider, and helpers to drive `!call bash` over HTTP.
import path from "node:path";
import { expect } from "vitest";
import { postJson, startHarness, type Harness } from "../support/harness.js";

/** The repository's skills directory (ships skills/public/csv-profile). */
export const REPO_SKILLS = path.resolve(import.meta.dirname, "../../skills");

/** config.yaml for a gateway whose sandbox is the bubblewrap provider; `sandboxExtra` is YAML under `sandbox:`. */
export function bwrapConfig(sandboxExtra = "", skillsPath = REPO_SKILLS): string {
  return `
models:
  - name: scripted
    use: deerflow-gateway:ScriptedChatModel
    model: scripted-echo
    token_delay_ms: 0
tools:
  - { name: bash, group: bash, use: deerflow.sandbox.tools:bash_tool }
  - { name: read_file, group: file:read, use: deerflow.sandbox.tools:read_file_tool }
  - { name: write_file, group: file:write, use: deerflow.sandbox.tools:write_file_tool }
tool_groups: [{ name: bash }, { name: file:read }, { name: file:write }]
skills:
  path: ${skillsPath}
sandbox:
  use: deerflow-gateway/sandbox:BubblewrapSandboxProvider
${sandboxExtra}
`;
}

/** Starts a harness with {@link bwrapConfig}. */
export function startBwrapGateway(sandboxExtra = "", skillsPath?: string): Promise<Harness> {
  return startHarness(bwrapConfig(sandboxExtra, skillsPath));
}

/** Creates a thread and returns its id. */
export async function newThread(h: Harness): Promise<string> {
  return (await (await postJson(`${h.url}/threads`, {})).json()).thread_id;
}

/** Runs one turn with `content` on the thread (runs/wait) and returns the final state values. */
export async function say(h: Harness, threadId: string, content: string): Promise<{ messages: { type: string; content: string }[]; artifacts?: string[] }> {
  const res = await postJson(`${h.url}/threads/${threadId}/runs/wait`, { input: { messages: [{ role: "user", content }] } });
  expect(res.status).toBe(200);
  return res.json();
}

/** The last tool result of a turn's values. */
export function lastTool(values: { messages: { type: string; content: string }[] }): string {
  return values.messages.filter((m) => m.type === "tool").at(-1)?.content ?? "(no tool message)";
}

/** `!call bash {command}` on the thread; returns the bash tool's result text. */
export async function bash(h: Harness, threadId: string, command: string): Promise<string> {
  return lastTool(await say(h, threadId, `!call bash ${JSON.stringify({ command })}`));
}
