import { AIMessage, HumanMessage, ToolMessage, type BaseMessage } from "@langchain/core/messages";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { _makeLeadAgent, type LeadAgentConfig } from "../../../src/agents/lead-agent/agent.js";
import { runContextOf, SUBAGENT_CONTEXT_KEY } from "../../../src/agents/run-context.js";
import { resetAppConfig } from "../../../src/config/app-config.js";
import { parseAppConfig } from "../../../src/config/schema.js";

const root = mkdtempSync(path.join(tmpdir(), "subagents-"));
const saved = { ...process.env };
const appConfig = parseAppConfig({ models: [{ name: "scripted", use: "deerflow-gateway:ScriptedChatModel", model: "s" }] });

beforeAll(() => {
  // Any global config read would fail: the child must take app_config from its context.
  process.env.DEER_FLOW_CONFIG_PATH = path.join(root, "missing.yaml");
  process.env.DEER_FLOW_HOME = path.join(root, "home");
  process.env.DEER_FLOW_AGENTS_DIR = path.join(root, "agents");
  process.env.DEER_FLOW_SKILLS_DIR = path.join(root, "skills");
  process.env.DEER_FLOW_EXTENSIONS_CONFIG_PATH = "";
  resetAppConfig();
});
afterAll(() => {
  process.env = { ...saved };
  resetAppConfig();
  rmSync(root, { recursive: true, force: true });
});

const taskCall = (prompt: string, type = "general-purpose") => `!call task ${JSON.stringify({ description: "look it up", prompt, subagent_type: type })}`;

/** Runs the lead agent with subagents on; returns the custom events and the final messages. */
async function runParent(text: string) {
  const context = { thread_id: "sub-t1", run_id: "run-1", user_id: "default", app_config: appConfig, subagent_enabled: true };
  const config: LeadAgentConfig = { context, configurable: { thread_id: "sub-t1" } };
  const agent = await _makeLeadAgent(config, { appConfig });
  const custom: Record<string, any>[] = [];
  let messages: BaseMessage[] = [];
  const stream = await agent.stream({ messages: [new HumanMessage(text)] } as never, { context, configurable: config.configurable, metadata: config.metadata, streamMode: ["custom", "values"], recursionLimit: 100 } as never);
  for await (const [mode, payload] of stream as AsyncIterable<[string, any]>) {
    if (mode === "custom") custom.push(payload);
    else messages = payload.messages;
  }
  return { custom, messages };
}

describe("LeadSubagentRuntime: the task tool runs a child lead agent", () => {
  it("runs the child with the parent's app_config and reports progress on the custom stream", async () => {
    const { custom, messages } = await runParent(taskCall("research cats"));
    const types = custom.map((e) => e.type);
    expect(types[0]).toBe("task_started");
    expect(types).toContain("task_running");
    expect(types.at(-1)).toBe("task_completed");
    expect(custom[0]).toMatchObject({ task_id: "call_1", description: "look it up", subagent_type: "general-purpose" });
    expect(custom.at(-1)).toMatchObject({ task_id: "call_1", result: "You said: research cats" });
    const result = messages.find((m) => ToolMessage.isInstance(m)) as ToolMessage;
    expect(result.content).toBe("Task Succeeded. Result: You said: research cats");
    expect(result.additional_kwargs).toMatchObject({ subagent_status: "completed", subagent_usage: expect.objectContaining({ total_tokens: expect.any(Number) }) });
    expect(messages.at(-1)?.content).toBe("Tool task returned: Task Succeeded. Result: You said: research cats");
  });

  it("carries the child's cumulative token usage and model on task_running and task_completed (the subtask card reads them)", async () => {
    const { custom, messages } = await runParent(taskCall("measure the usage"));
    const running = custom.filter((e) => e.type === "task_running");
    const completed = custom.at(-1)!;
    const result = messages.find((m) => ToolMessage.isInstance(m)) as ToolMessage;
    const total = (result.additional_kwargs.subagent_usage as { total_tokens: number }).total_tokens;
    expect(total).toBeGreaterThan(0);
    expect(running.at(-1)!.usage).toEqual(result.additional_kwargs.subagent_usage);
    expect(completed).toMatchObject({ type: "task_completed", usage: result.additional_kwargs.subagent_usage, model_name: "s" });
    expect(completed.usage.total_tokens).toBe(completed.usage.input_tokens + completed.usage.output_tokens);
    expect(result.additional_kwargs).toMatchObject({ subagent_token_usage: result.additional_kwargs.subagent_usage, subagent_model_name: "s" });
  });

  it("folds the subagent's tokens into the dispatching message", async () => {
    const { messages } = await runParent(taskCall("count tokens"));
    const dispatch = messages.find((m) => AIMessage.isInstance(m) && m.tool_calls?.length) as AIMessage;
    const result = messages.find((m) => ToolMessage.isInstance(m)) as ToolMessage;
    const sub = result.additional_kwargs.subagent_usage as { total_tokens: number };
    expect(result.additional_kwargs.subagent_usage_attributed).toBe(true);
    expect(dispatch.usage_metadata!.total_tokens).toBeGreaterThan(sub.total_tokens);
    expect(dispatch.additional_kwargs.token_usage_attribution).toMatchObject({ kind: "subagent_dispatch" });
  });

  it("reports a failing child as task_failed and a 'Task failed' result", async () => {
    const { custom, messages } = await runParent(taskCall("!fail the child broke"));
    expect(custom.at(-1)).toMatchObject({ type: "task_failed", error: "the child broke" });
    const result = messages.find((m) => ToolMessage.isInstance(m)) as ToolMessage;
    expect(String(result.content)).toContain("Task failed. Error: Error: the child broke");
    expect(result.status).toBe("error");
  });

  it("refuses an unknown subagent type, listing the available ones", async () => {
    const { messages } = await runParent(taskCall("x", "wizard"));
    const result = messages.find((m) => ToolMessage.isInstance(m)) as ToolMessage;
    expect(String(result.content)).toContain("unknown subagent type 'wizard'. Available subagent types: general-purpose");
  });

  it("gives the child no task, no ask_clarification, no list_uploaded_files and a subagent prompt", async () => {
    const context = { thread_id: "t", app_config: appConfig, [SUBAGENT_CONTEXT_KEY]: { type: "general-purpose", tool_groups: null, available_skills: [] } };
    const agent = await _makeLeadAgent({ context: { ...context, subagent_enabled: true } }, { appConfig });
    const names = ((agent.nodes.tools as unknown as { bound: { tools: { name: string }[] } } | undefined)?.bound.tools ?? []).map((t) => t.name);
    expect(names).not.toContain("task");
    expect(names).not.toContain("present_files"); // upstream's disallowed_tools of the built-in types
    expect(names).not.toContain("ask_clarification");
    expect(names).not.toContain("list_uploaded_files"); // agent-factory.md §7: subagents get no upload history tool
    expect(runContextOf({ context }).subagent).toEqual({ type: "general-purpose", tool_groups: null, available_skills: [] });
    expect(runContextOf({ context: { other: 1 } }).subagent).toBeUndefined();
  });
});
