import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { getSubagentTypes } from "../../src/agents/lead-agent/subagent-types.js";
import { parseAppConfigText } from "../../src/config/app-config.js";
import { useFakeOpenAI, systemText } from "../support/fake-openai.js";
import { postJson, startHarness, type Harness } from "../support/harness.js";
import { parseSse, type SseFrame } from "../support/sse.js";

// Subagents as configured (`subagents:` in config.yaml), over HTTP against the fake OpenAI server: how many run at
// once, per-type deadlines that abort the child, custom types with their own prompt, tools and model.
const fake = useFakeOpenAI();
let h: Harness;

const config = (url: string, extra = "") => `models:
  - name: fake-gpt
    use: langchain_openai:ChatOpenAI
    model: gpt-test
    api_key: sk-test
    base_url: ${url}
  - name: fake-mini
    use: langchain_openai:ChatOpenAI
    model: gpt-mini
    api_key: sk-test
    base_url: ${url}
tools:
  - {name: ls, group: file:read, use: "deerflow.sandbox.tools:ls_tool"}
  - {name: read_file, group: file:read, use: "deerflow.sandbox.tools:read_file_tool"}
subagents:
  max_concurrent: 2
  agents:
    analyst:
      model: fake-mini
  custom_agents:
    analyst:
      description: "Data <analysis> specialist\\nsecond line never shown"
      system_prompt: "ANALYST ROLE MARKER: you analyse data."
      tools: [read_file]
    slowpoke:
      description: Takes its time
      system_prompt: "SLOWPOKE ROLE MARKER"
      timeout_seconds: 1
${extra}`;

beforeAll(async () => {
  h = await startHarness(config(fake.url));
});
afterAll(async () => {
  await h.close();
});

const isChild = (body: Record<string, any>, marker: string) => systemText(body).includes(marker);
const toolNames = (body: Record<string, any>): string[] => (body.tools ?? []).map((t: any) => t.function.name);
const task = (id: string, type: string, prompt = `work ${id}`) => ({ name: "task", id, args: { description: `task ${id}`, prompt, subagent_type: type } });

async function run(text: string): Promise<SseFrame[]> {
  const thread = await (await postJson(`${h.url}/threads`, {})).json();
  const res = await postJson(`${h.url}/threads/${thread.thread_id}/runs/stream`, {
    input: { messages: [{ role: "user", content: text }] },
    stream_mode: ["values", "custom"],
    context: { subagent_enabled: true },
  });
  expect(res.status).toBe(200);
  return parseSse(await res.text()).frames;
}
const customOf = (frames: SseFrame[]) => frames.filter((f) => f.event === "custom").map((f) => f.data);
const lastMessages = (frames: SseFrame[]) => frames.filter((f) => f.event === "values").at(-1)!.data.messages as any[];

describe("subagents from config over HTTP", () => {
  it("runs at most subagents.max_concurrent task calls of one response, and those in parallel", async () => {
    fake.respond = (body) => {
      if (isChild(body, "general-purpose subagent")) return { content: `done ${body.messages.at(-1).content}`, delayMs: 300 };
      if (body.messages.at(-1).role === "tool") return { content: "parent done" };
      return { toolCalls: [task("t1", "general-purpose"), task("t2", "general-purpose"), task("t3", "general-purpose")] };
    };
    const frames = await run("split the work");
    expect(frames.some((f) => f.event === "error")).toBe(false);
    const started = customOf(frames).filter((e) => e.type === "task_started").map((e) => e.task_id);
    expect(started.sort()).toEqual(["t1", "t2"]);
    expect(fake.requests.filter((r) => isChild(r.body, "general-purpose subagent"))).toHaveLength(2);
    // Both children's model calls were open at the same time: the two tasks ran in parallel, not one by one.
    expect(fake.maxInFlight).toBe(2);
    expect(systemText(fake.requests[0].body)).toContain("MAXIMUM 2 `task` CALLS PER RESPONSE");
    expect(lastMessages(frames).at(-1).content).toBe("parent done");
  });

  it("aborts a subagent past its type's timeout_seconds and reports task_failed with the reason", async () => {
    fake.respond = (body) => {
      if (isChild(body, "SLOWPOKE ROLE MARKER")) return { content: "too late", delayMs: 30_000 };
      if (body.messages.at(-1).role === "tool") return { content: "parent recovered" };
      return { toolCalls: [task("slow-1", "slowpoke")] };
    };
    const frames = await run("take your time");
    expect(frames.some((f) => f.event === "error")).toBe(false);
    const failed = customOf(frames).find((e) => e.type === "task_failed");
    expect(failed).toMatchObject({ task_id: "slow-1", error: "Subagent 'slowpoke' execution timed out after 1 seconds" });
    expect(customOf(frames).some((e) => e.type === "task_completed")).toBe(false);
    const result = lastMessages(frames).find((m) => m.type === "tool");
    expect(result.content).toContain("Task failed. Error: SubagentTimeoutError: Subagent 'slowpoke' execution timed out after 1 seconds");
    // The child's model request was cancelled (the client hung up), not left running.
    expect(fake.abandoned).toBe(1);
    expect(lastMessages(frames).at(-1).content).toBe("parent recovered");
  });

  it("offers custom types with their own role, tool allowlist and model, and lists them in the lead's prompt (AF-042)", async () => {
    fake.respond = (body) => {
      if (isChild(body, "ANALYST ROLE MARKER")) return { content: "analysis ready" };
      if (body.messages.at(-1).role === "tool") return { content: "parent done" };
      return { toolCalls: [task("a1", "analyst", "analyse the sales")] };
    };
    const frames = await run("analyse");
    const lead = systemText(fake.requests[0].body);
    expect(lead).toContain("- **analyst**: Data &lt;analysis&gt; specialist");
    expect(lead).not.toContain("second line never shown");
    expect(lead).toContain("- **slowpoke**: Takes its time");
    expect(lead).toContain("- **general-purpose**:");
    expect(lead).not.toContain("**bash**"); // host bash is off
    const child = fake.requests.find((r) => isChild(r.body, "ANALYST ROLE MARKER"))!.body;
    expect(child.model).toBe("gpt-mini");
    expect(toolNames(child)).toEqual(["read_file"]);
    expect(customOf(frames).find((e) => e.type === "task_completed")).toMatchObject({ task_id: "a1", result: "analysis ready" });
  });

  it("refuses an unknown subagent type, naming the available ones", async () => {
    fake.respond = (body) => (body.messages.at(-1).role === "tool" ? { content: "ok" } : { toolCalls: [task("x1", "bash")] });
    const frames = await run("use bash");
    const result = lastMessages(frames).find((m) => m.type === "tool");
    expect(result.content).toContain("unknown subagent type 'bash'. Available subagent types: general-purpose, analyst, slowpoke.");
  });
});

describe("the subagents section of config.yaml", () => {
  const base = "models:\n  - {name: m, use: 'deerflow-gateway:ScriptedChatModel', model: s}\n";
  it("refuses unknown keys with their path", () => {
    expect(() => parseAppConfigText(`${base}subagents:\n  timeout: 60\n`, "config.yaml")).toThrow(/subagents: Unrecognized key: "timeout"/);
    expect(() => parseAppConfigText(`${base}subagents:\n  agents:\n    bash: {timeout_secs: 5}\n`, "config.yaml")).toThrow(/subagents\.agents\.bash: Unrecognized key: "timeout_secs"/);
    expect(() => parseAppConfigText(`${base}subagents:\n  custom_agents:\n    x: {description: d}\n`, "config.yaml")).toThrow(/subagents\.custom_agents\.x\.system_prompt/);
  });

  it("accepts upstream's example section", () => {
    const cfg = parseAppConfigText(
      `${base}subagents:\n  timeout_seconds: 1800\n  max_total_per_run: 6\n  agents:\n    general-purpose: {timeout_seconds: 2700, max_turns: 250}\n    bash: {timeout_seconds: 300, max_turns: 80}\n  custom_agents:\n    analysis: {description: d, system_prompt: p, tools: [bash], skills: [data-analysis], model: inherit, max_turns: 80, timeout_seconds: 600}\n`,
      "config.yaml",
    );
    expect(cfg.subagents.agents["general-purpose"].timeout_seconds).toBe(2700);
    expect(cfg.subagents.custom_agents.analysis.disallowed_tools).toEqual(["task", "ask_clarification", "present_files"]);
  });
});

describe("getSubagentTypes", () => {
  const parse = (yaml: string) => parseAppConfigText(`models:\n  - {name: m, use: 'deerflow-gateway:ScriptedChatModel', model: s}\n${yaml}`, "config.yaml");
  it("offers bash only with host bash allowed, and applies the section's defaults to built-ins only", () => {
    expect(getSubagentTypes(parse("")).map((t) => t.name)).toEqual(["general-purpose"]);
    const cfg = parse("sandbox: {allow_host_bash: true}\nsubagents:\n  timeout_seconds: 120\n  max_turns: 40\n  agents: {bash: {timeout_seconds: 30}}\n  custom_agents:\n    c: {description: d, system_prompt: p}\n");
    const byName = Object.fromEntries(getSubagentTypes(cfg).map((t) => [t.name, t]));
    expect(Object.keys(byName)).toEqual(["general-purpose", "bash", "c"]);
    expect(byName["general-purpose"]).toMatchObject({ timeoutSeconds: 120, maxTurns: 40 });
    expect(byName.bash).toMatchObject({ timeoutSeconds: 30, maxTurns: 40 });
    expect(byName.c).toMatchObject({ timeoutSeconds: 900, maxTurns: 50, model: null });
  });
});
