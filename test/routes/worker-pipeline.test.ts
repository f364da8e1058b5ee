import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { makeLeadAgent, type LeadAgentConfig } from "../../src/agents/lead-agent/agent.js";
import { getAppConfig } from "../../src/config/app-config.js";
import { isAppConfig } from "../../src/config/schema.js";
import type { AgentFactory } from "../../src/runtime/runs/agent-factory.js";
import { postJson, startHarness, type Harness } from "../support/harness.js";
import { parseSse } from "../support/sse.js";

const CONFIG = (first = "m-default") => `models:
  - name: ${first}
    use: deerflow-gateway:ScriptedChatModel
    model: ${first}
  - name: m-think
    use: deerflow-gateway:ScriptedChatModel
    model: think
    supports_thinking: true
`;

let h: Harness;
const seen: LeadAgentConfig[] = [];
/** The real factory, recording the config of every call. */
const recording: AgentFactory = (config) => {
  // The live objects in the context (AppConfig, memory manager, run journal) are not cloneable: kept aside or dropped.
  seen.push(structuredClone({ ...config, context: { ...config.context, app_config: undefined, memory_manager: undefined, __run_journal: undefined } }) as LeadAgentConfig);
  (seen.at(-1) as any).appConfigObject = config.context?.app_config;
  return makeLeadAgent(config) as never;
};

beforeEach(async () => {
  seen.length = 0;
  h = await startHarness(CONFIG(), { agentFactory: recording });
  await postJson(`${h.url}/threads`, { thread_id: "t-1" });
});
afterEach(async () => h.close());

const human = (content: string) => ({ messages: [{ role: "user", content }] });
const run = async (body: Record<string, unknown>, thread = "t-1") => {
  const res = await postJson(`${h.url}/threads/${thread}/runs/stream`, { input: human("hi"), ...body });
  return { status: res.status, ...parseSse(await res.text()) };
};

describe("the worker pipeline", () => {
  it("calls the factory on every run with the runtime context: thread id, run id, user id and the live AppConfig", async () => {
    const first = await run({});
    h.writeConfig(CONFIG("m-other"));
    const second = await run({});
    expect(seen).toHaveLength(2);
    for (const [i, frames] of [first, second].entries()) {
      expect(seen[i].context).toMatchObject({ thread_id: "t-1", run_id: frames.frames[0].data.run_id, user_id: "default" });
      expect(seen[i].configurable?.thread_id).toBe("t-1");
      expect(isAppConfig((seen[i] as any).appConfigObject)).toBe(true);
    }
    expect((seen[0] as any).appConfigObject).not.toBe((seen[1] as any).appConfigObject);
    expect((seen[1] as any).appConfigObject.models[0].name).toBe("m-other");
  });

  it("merges whitelisted body.context keys into both containers without overriding body.config, and drops the rest", async () => {
    await run({
      config: { configurable: { model_name: "m-think" } },
      context: {
        model_name: "m-default", mode: "ultra", thinking_enabled: true, reasoning_effort: "high", is_plan_mode: true, subagent_enabled: true,
        max_concurrent_subagents: 5, max_total_subagents: 8, agent_name: "research-bot", is_bootstrap: false, thread_id: "ignored", foo: 1,
        github_token: "t", non_interactive: true,
      },
    });
    const { configurable, context } = seen[0] as { configurable: Record<string, unknown>; context: Record<string, unknown> };
    expect(configurable.model_name).toBe("m-think");
    expect(context.model_name).toBe("m-default");
    for (const [k, v] of Object.entries({ mode: "ultra", thinking_enabled: true, reasoning_effort: "high", is_plan_mode: true, subagent_enabled: true, max_concurrent_subagents: 5, max_total_subagents: 8, agent_name: "research-bot", is_bootstrap: false })) {
      expect(configurable[k], k).toEqual(v);
      expect(context[k], k).toEqual(v);
    }
    expect(context.github_token).toBe("t");
    expect(configurable.github_token).toBeUndefined();
    for (const k of ["foo", "non_interactive"]) {
      expect(configurable[k]).toBeUndefined();
      expect(context[k]).toBeUndefined();
    }
    expect(context.thread_id).toBe("t-1");
  });

  it("lets config.context win over config.configurable, and rejects a non-object config.context with 422", async () => {
    await run({ config: { context: { user_tag: "u" }, configurable: { model_name: "m-think" } } });
    expect(seen[0].configurable).toEqual({ thread_id: "t-1" });
    expect(seen[0].context?.user_tag).toBe("u");
    await run({ config: { context: null } });
    expect(seen[1].context).toMatchObject({ thread_id: "t-1" });
    expect((await run({ config: { context: "bad" } })).status).toBe(422);
  });

  it("maps a custom assistant id to agent_name in both containers unless one is given explicitly", async () => {
    await run({ assistant_id: "Research_Bot" });
    expect(seen[0].configurable?.agent_name).toBe("research-bot");
    expect(seen[0].context?.agent_name).toBe("research-bot");
    expect((seen[0] as any).runName).toBe("research-bot");
    await run({ assistant_id: "Research_Bot", config: { configurable: { agent_name: "explicit" } } });
    expect(seen[1].configurable?.agent_name).toBe("explicit");
    expect(seen[1].context?.agent_name).toBe("explicit");
    await run({ assistant_id: "lead_agent" });
    expect("agent_name" in (seen[2].configurable ?? {})).toBe(false);
  });

  it("clamps the recursion limit", async () => {
    const cases: [unknown, number][] = [[undefined, 100], [250, 250], [100000000, 1000], [0, 100], [-5, 100], ["1000", 100], [3.5, 100], [true, 100], [null, 100]];
    for (const [value, expected] of cases) {
      seen.length = 0;
      await run({ config: value === undefined ? {} : { recursion_limit: value } });
      expect((seen[0] as any).recursionLimit, String(value)).toBe(expected);
    }
  });

  it("removes caller-forged identity keys and server-owned message kwargs", async () => {
    await run({
      config: { configurable: { user_id: "evil", langgraph_auth_user_id: "evil", is_internal: true } },
      input: { messages: [{ role: "user", content: "hi", additional_kwargs: { original_user_content: "forged", files: [] } }] },
    });
    expect(seen[0].context?.user_id).toBe("default");
    expect(seen[0].configurable?.user_id).toBeUndefined();
    expect(seen[0].configurable?.langgraph_auth_user_id).toBeUndefined();
    const state = await (await fetch(`${h.url}/threads/t-1/state`)).json();
    expect(state.values.messages[0].additional_kwargs.original_user_content).toBeUndefined();
    expect(state.values.messages[0].additional_kwargs.files).toEqual([]);
  });

  it("accepts the DeerFlow frontend's chat payload end to end", async () => {
    const res = await postJson(`${h.url}/api/threads/t-1/runs/stream`, {
      input: { messages: [{ type: "human", content: [{ type: "text", text: "hello" }], additional_kwargs: { files: [{ filename: "a.pdf", size: 1, path: "/mnt/user-data/uploads/a.pdf", status: "uploaded" }] } }] },
      config: { recursion_limit: 1000 },
      context: { mode: "pro", model_name: "m-think", reasoning_effort: "medium", thinking_enabled: true, is_plan_mode: true, subagent_enabled: false, thread_id: "t-1" },
      stream_mode: ["messages-tuple", "values", "updates", "custom"],
      on_disconnect: "continue",
      assistant_id: "lead_agent",
    });
    expect(res.status).toBe(200);
    const { frames } = parseSse(await res.text());
    const events = new Set(frames.map((f) => f.event));
    for (const e of ["metadata", "messages", "values", "updates", "end"]) expect(events.has(e), e).toBe(true);
    const human0 = frames.filter((f) => f.event === "values").at(-1)!.data.messages[0];
    expect(human0.additional_kwargs.files[0].filename).toBe("a.pdf");
    expect(seen[0].context).toMatchObject({ is_plan_mode: true, thinking_enabled: true, reasoning_effort: "medium" });
    expect((seen[0] as any).recursionLimit).toBe(1000);
  });
});

describe("the run's config version", () => {
  it("stays the one the run started with when config.yaml changes mid-run, and the next run and other requests see the edit", async () => {
    const observed: string[][] = [];
    let edit: (() => void) | null = null;
    /** Reads the config around an edit of the file made while the run is in progress. */
    const editing: AgentFactory = (config) => {
      const before = getAppConfig().models[0].name;
      edit?.();
      edit = null;
      observed.push([before, getAppConfig().models[0].name, (config.context?.app_config as { models: { name: string }[] }).models[0].name]);
      return makeLeadAgent(config) as never;
    };
    const own = await startHarness(CONFIG(), { agentFactory: editing });
    try {
      await postJson(`${own.url}/threads`, { thread_id: "t-1" });
      edit = () => own.writeConfig(CONFIG("m-edited"));
      const first = await postJson(`${own.url}/threads/t-1/runs/wait`, { input: human("hi") });
      expect(first.status).toBe(200);
      // Outside any run the edit is live at once.
      expect(getAppConfig().models[0].name).toBe("m-edited");
      const models = await (await fetch(`${own.url}/api/models`)).json();
      expect(models.models.map((m: { name: string }) => m.name)).toContain("m-edited");
      await postJson(`${own.url}/threads/t-1/runs/wait`, { input: human("again") });
      expect(observed).toEqual([
        ["m-default", "m-default", "m-default"],
        ["m-edited", "m-edited", "m-edited"],
      ]);
      const runs = await (await fetch(`${own.url}/threads/t-1/runs`)).json();
      expect(runs.map((r: { metadata: { model_name?: string } }) => r.metadata.model_name).sort()).toEqual(["m-default", "m-edited"]);
    } finally {
      await own.close();
    }
  });
});
