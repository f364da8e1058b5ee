import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { parse } from "yaml";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { startHarness, type Harness } from "../support/harness.js";

const CONFIG = (enabled: boolean) =>
  `agents_api:\n  enabled: ${enabled}\nmodels:\n  - name: agent-model\n    use: deerflow-gateway:ScriptedChatModel\n    model: s\n  - name: deepseek-v3\n    use: deerflow-gateway:ScriptedChatModel\n    model: d\n`;

let h: Harness;
let agents: string;
beforeEach(async () => {
  h = await startHarness(CONFIG(true));
  agents = path.join(process.env.DEER_FLOW_AGENTS_DIR!, "default");
});
afterEach(async () => h.close());

const req = (method: string, url: string, payload?: unknown) =>
  h.app.inject({ method: method as never, url, ...(payload !== undefined ? { payload: payload as never } : {}) });

describe("agents API gate", () => {
  it("answers 403 on every route when agents_api.enabled is false, and writes nothing", async () => {
    h.writeConfig(CONFIG(false));
    const calls: [string, string, unknown?][] = [
      ["GET", "/api/agents"], ["GET", "/api/agents/example-agent"], ["GET", "/api/agents/check?name=example-agent"],
      ["POST", "/api/agents", { name: "example-agent", soul: "blocked" }], ["PUT", "/api/agents/example-agent", { description: "blocked" }],
      ["DELETE", "/api/agents/example-agent"], ["GET", "/api/user-profile"], ["PUT", "/api/user-profile", { content: "blocked" }],
    ];
    for (const [method, url, body] of calls) {
      const res = await req(method, url, body);
      expect(res.statusCode, `${method} ${url}`).toBe(403);
      expect(res.json().detail).toContain("agents_api.enabled=true");
    }
    expect(existsSync(process.env.DEER_FLOW_AGENTS_DIR!)).toBe(false);
  });
});

describe("agents API", () => {
  it("creates an agent (201) with exactly the meaningful keys on disk", async () => {
    const res = await req("POST", "/api/agents", { name: "code-reviewer", description: "Reviews code", soul: "You are a code reviewer." });
    expect(res.statusCode).toBe(201);
    expect(res.json()).toEqual({
      name: "code-reviewer", description: "Reviews code", model: null, tool_groups: null, skills: null,
      model_settings: null, thinking_enabled: null, reasoning_effort: null, soul: "You are a code reviewer.",
    });
    expect(readFileSync(path.join(agents, "code-reviewer/config.yaml"), "utf8")).toBe("name: code-reviewer\ndescription: Reviews code\n");
    expect(readFileSync(path.join(agents, "code-reviewer/SOUL.md"), "utf8")).toBe("You are a code reviewer.");
  });

  it("writes plain keys before model keys, lists in block style at the parent's indentation", async () => {
    const res = await req("POST", "/api/agents", { name: "specialized", description: "Specialized agent", model: "deepseek-v3", tool_groups: ["file:read", "bash"], soul: "x" });
    expect(res.statusCode).toBe(201);
    expect(readFileSync(path.join(agents, "specialized/config.yaml"), "utf8")).toBe(
      "name: specialized\ndescription: Specialized agent\ntool_groups:\n- file:read\n- bash\nmodel: deepseek-v3\n",
    );
  });

  it("stores names lowercase and treats them case-insensitively; a second create is 409", async () => {
    const res = await req("POST", "/api/agents", { name: "Research-Bot", description: "d", soul: "Be brief." });
    expect(res.json()).toMatchObject({ name: "research-bot", soul: "Be brief." });
    expect(await req("GET", "/api/agents/check?name=RESEARCH-BOT").then((r) => r.json())).toEqual({ available: false, name: "research-bot" });
    const again = await req("POST", "/api/agents", { name: "research-BOT" });
    expect(again.statusCode).toBe(409);
    expect(again.json()).toEqual({ detail: "Agent 'research-bot' already exists" });
    expect((await req("GET", "/api/agents")).json().agents.map((a: any) => a.name)).toEqual(["research-bot"]);
    expect((await req("GET", "/api/agents/Research-Bot")).json().description).toBe("d");
  });

  it("lists agents sorted with their souls, skipping directories without config.yaml and corrupt agents", async () => {
    for (const name of ["z-agent", "a-agent", "m-agent"]) await req("POST", "/api/agents", { name, soul: `soul of ${name}` });
    mkdirSync(path.join(agents, "memory-only"), { recursive: true });
    mkdirSync(path.join(agents, "corrupt"), { recursive: true });
    writeFileSync(path.join(agents, "corrupt/config.yaml"), "name: [unclosed");
    const list = (await req("GET", "/api/agents")).json().agents;
    expect(list.map((a: any) => a.name)).toEqual(["a-agent", "m-agent", "z-agent"]);
    // Upstream's list carries each agent's soul; ?include_soul=false leaves them out.
    expect(list[0].soul).toBe("soul of a-agent");
    expect((await req("GET", "/api/agents?include_soul=false")).json().agents[0]).not.toHaveProperty("soul");
    // Souls are capped at 64 Ki characters: one more is a 422 on create and on update, and nothing changes.
    expect((await req("POST", "/api/agents", { name: "big-soul", soul: "s".repeat(64 * 1024 + 1) })).statusCode).toBe(422);
    expect((await req("PUT", "/api/agents/a-agent", { soul: "s".repeat(64 * 1024 + 1) })).statusCode).toBe(422);
    expect((await req("PUT", "/api/agents/a-agent", { soul: "s".repeat(64 * 1024) })).statusCode).toBe(200);
    expect((await req("GET", "/api/agents")).json().agents.map((a: any) => a.name)).not.toContain("big-soul");
  });

  it("returns soul as an empty string when the agent has none, and 404 for an unknown agent", async () => {
    await req("POST", "/api/agents", { name: "no-soul" });
    expect((await req("GET", "/api/agents/no-soul")).json().soul).toBe("");
    const missing = await req("GET", "/api/agents/nonexistent");
    expect(missing.statusCode).toBe(404);
    expect(missing.json()).toEqual({ detail: "Agent 'nonexistent' not found" });
  });

  it("updates partially: omitted fields kept, model_settings merged per sub-field, explicit null clears", async () => {
    const created = await req("POST", "/api/agents", {
      name: "researcher", model: "agent-model", model_settings: { temperature: 0.2, max_tokens: 12000 }, thinking_enabled: true, reasoning_effort: "high", soul: "You are a researcher.",
    });
    expect(created.statusCode).toBe(201);
    const onDisk = () => parse(readFileSync(path.join(agents, "researcher/config.yaml"), "utf8"));
    expect(Object.keys(onDisk())).toEqual(["name", "model", "model_settings", "thinking_enabled", "reasoning_effort"]);
    let res = (await req("PUT", "/api/agents/researcher", { description: "updated" })).json();
    expect(res).toMatchObject({ description: "updated", model_settings: { temperature: 0.2, max_tokens: 12000 }, thinking_enabled: true, soul: "You are a researcher." });
    res = (await req("PUT", "/api/agents/researcher", { model_settings: { temperature: 0.9 } })).json();
    expect(res.model_settings).toEqual({ temperature: 0.9, max_tokens: 12000 });
    res = (await req("PUT", "/api/agents/researcher", { model_settings: { max_tokens: null } })).json();
    expect(res.model_settings).toEqual({ temperature: 0.9, max_tokens: null });
    res = (await req("PUT", "/api/agents/researcher", { model: null })).json();
    expect(res.model).toBeNull();
    expect(onDisk()).not.toHaveProperty("model");
    res = (await req("PUT", "/api/agents/researcher", { soul: "New soul." })).json();
    expect(res.soul).toBe("New soul.");
  });

  it("keeps fields it does not manage (github) when rewriting config.yaml", async () => {
    await req("POST", "/api/agents", { name: "hooked", soul: "s" });
    writeFileSync(path.join(agents, "hooked/config.yaml"), "name: hooked\ngithub:\n  installation_id: 7\n");
    await req("PUT", "/api/agents/hooked", { description: "d" });
    expect(parse(readFileSync(path.join(agents, "hooked/config.yaml"), "utf8"))).toEqual({ name: "hooked", description: "d", github: { installation_id: 7 } });
  });

  it("rejects an empty or whitespace soul with 422 and keeps the old soul", async () => {
    await req("POST", "/api/agents", { name: "soulful", soul: "Original." });
    for (const soul of ["", "   \n\t"]) {
      const res = await req("PUT", "/api/agents/soulful", { soul });
      expect(res.statusCode).toBe(422);
    }
    expect(readFileSync(path.join(agents, "soulful/SOUL.md"), "utf8")).toBe("Original.");
  });

  it("rejects bad names and unknown models with 422, writing nothing", async () => {
    const bad = await req("POST", "/api/agents", { name: "bad_name!" });
    expect(bad.statusCode).toBe(422);
    expect(bad.json().detail).toContain("^[A-Za-z0-9-]+$");
    expect((await req("GET", "/api/agents/bad.name")).statusCode).toBe(422);
    expect((await req("GET", "/api/agents/check?name=a%20b")).statusCode).toBe(422);
    expect((await req("GET", "/api/agents/check")).statusCode).toBe(422);
    const model = await req("POST", "/api/agents", { name: "ok", model: "no-such-model" });
    expect(model.statusCode).toBe(422);
    expect(model.json().detail).toMatch(/^Unknown model 'no-such-model'/);
    for (const body of [{ name: "x1", model_settings: { temperature: 3 } }, { name: "x2", reasoning_effort: "minimal" }, { name: "x3", model_settings: { top_p: 1 } }]) {
      expect((await req("POST", "/api/agents", body)).statusCode).toBe(422);
    }
    await req("POST", "/api/agents", { name: "exists" });
    const put = await req("PUT", "/api/agents/exists", { model: "ghost-model" });
    expect(put.statusCode).toBe(422);
    expect(put.json().detail).toContain("ghost-model");
    expect(existsSync(path.join(agents, "ok"))).toBe(false);
    expect((await req("PUT", "/api/agents/ghost-agent", { soul: "new" })).statusCode).toBe(404);
  });

  it("deletes with 204, then 404; a memory-only directory is preserved with 409", async () => {
    await req("POST", "/api/agents", { name: "del-me", soul: "x" });
    const res = await req("DELETE", "/api/agents/del-me");
    expect(res.statusCode).toBe(204);
    expect(res.body).toBe("");
    expect((await req("GET", "/api/agents/del-me")).statusCode).toBe(404);
    expect(existsSync(path.join(agents, "del-me"))).toBe(false);
    expect((await req("DELETE", "/api/agents/does-not-exist")).statusCode).toBe(404);
    mkdirSync(path.join(agents, "lead-agent/facts"), { recursive: true });
    writeFileSync(path.join(agents, "lead-agent/facts/fact_keep.md"), "memory data");
    expect((await req("DELETE", "/api/agents/lead-agent")).statusCode).toBe(409);
    expect(readFileSync(path.join(agents, "lead-agent/facts/fact_keep.md"), "utf8")).toBe("memory data");
    expect((await req("GET", "/api/agents/check?name=lead-agent")).json().available).toBe(false);
  });

  it("reads and writes the user profile", async () => {
    expect((await req("GET", "/api/user-profile")).json()).toEqual({ content: null });
    const text = "# User Profile\n\nI am a developer.";
    expect((await req("PUT", "/api/user-profile", { content: text })).json()).toEqual({ content: text });
    expect(readFileSync(path.join(process.env.DEER_FLOW_AGENTS_DIR!, "USER.md"), "utf8")).toBe(text);
    expect((await req("GET", "/api/user-profile")).json()).toEqual({ content: text });
    expect((await req("PUT", "/api/user-profile", { content: "" })).json()).toEqual({ content: null });
  });
});

describe("agents API under concurrency", () => {
  it("serializes 50 parallel PUTs on one agent: every response is valid and the final file parses", async () => {
    await req("POST", "/api/agents", { name: "busy", soul: "s0" });
    const results = await Promise.all(
      Array.from({ length: 50 }, (_, i) => req("PUT", "/api/agents/busy", { description: `d${i}`, soul: `soul ${i}`, model_settings: { max_tokens: 100 + i } })),
    );
    expect(results.every((r) => r.statusCode === 200)).toBe(true);
    const final = parse(readFileSync(path.join(agents, "busy/config.yaml"), "utf8"));
    const i = Number(String(final.description).slice(1));
    expect(final.model_settings).toEqual({ max_tokens: 100 + i });
    expect(readFileSync(path.join(agents, "busy/SOUL.md"), "utf8")).toBe(`soul ${i}`);
    const leftovers = (await import("node:fs")).readdirSync(path.join(agents, "busy")).filter((f) => f.endsWith(".tmp"));
    expect(leftovers).toEqual([]);
  });

  it("answers exactly one 201 and one 409 when the same name is created twice at once", async () => {
    const [a, b] = await Promise.all([req("POST", "/api/agents", { name: "twin", soul: "a" }), req("POST", "/api/agents", { name: "TWIN", soul: "b" })]);
    expect([a.statusCode, b.statusCode].sort()).toEqual([201, 409]);
  });
});

describe("agent files edited by hand", () => {
  it("reports an agent whose config.yaml breaks the model_settings rules as unloadable, and skips it in the list", async () => {
    await req("POST", "/api/agents", { name: "good", soul: "g" });
    mkdirSync(path.join(agents, "hot"), { recursive: true });
    writeFileSync(path.join(agents, "hot/config.yaml"), "name: hot\nmodel_settings:\n  temperature: 2.5\n  top_p: 1\nreasoning_effort: turbo\n");
    const res = await req("GET", "/api/agents/hot");
    expect(res.statusCode).toBe(500);
    expect(res.json().detail).toBe(
      "Invalid agent config default/hot/config.yaml: model_settings.temperature: Too big: expected number to be <=2; model_settings: Unrecognized key: \"top_p\"; reasoning_effort: Invalid option: expected one of \"low\"|\"medium\"|\"high\"",
    );
    expect((await req("GET", "/api/agents")).json().agents.map((a: any) => a.name)).toEqual(["good"]);
  });
});

describe("deleting an agent deletes its memory", () => {
  it("a new agent of the same name starts with no memory of the old one's conversations", async () => {
    expect((await req("POST", "/api/agents", { name: "research-bot", soul: "You research." })).statusCode).toBe(201);
    const run = await req("POST", "/runs/wait", { assistant_id: "research-bot", input: { messages: [{ role: "user", content: "remember the secret word pelican" }] } });
    expect(run.statusCode).toBe(200);
    const { memoryManager } = h.app.deerflow;
    await memoryManager.flush();
    const file = path.join(process.env.DEER_FLOW_HOME!, "users", "default", "memory", "research-bot.json");
    expect(readFileSync(file, "utf8")).toContain("pelican");
    expect((await req("DELETE", "/api/agents/research-bot")).statusCode).toBe(204);
    expect(existsSync(file)).toBe(false);
    expect((await req("POST", "/api/agents", { name: "research-bot", soul: "You research again." })).statusCode).toBe(201);
    await memoryManager.flush();
    expect(existsSync(file)).toBe(false);
    expect(JSON.stringify((await req("GET", "/api/memory?agent_name=research-bot")).json())).not.toContain("pelican");
  });
});
