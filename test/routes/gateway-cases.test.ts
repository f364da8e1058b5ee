import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { useFakeOpenAI } from "../support/fake-openai.js";
import { postJson, startHarness, type Harness } from "../support/harness.js";
import { parseSse } from "../support/sse.js";

const fake = useFakeOpenAI();
let h: Harness;
beforeAll(async () => {
  h = await startHarness(`models:
  - {name: m-default, use: "langchain_openai:ChatOpenAI", model: gpt-test, api_key: sk-test, base_url: "${fake.url}"}
  - {name: m-think, use: "langchain_openai:ChatOpenAI", model: gpt-think, api_key: sk-test, base_url: "${fake.url}", supports_thinking: true}
agents_api: {enabled: true}
`);
});
afterAll(async () => { await h.close(); });
/** One expectation of a case, reported with its id and what was seen; the other checks of the case still run. */
const check = (label: string, ok: unknown, seen: unknown) => expect.soft(Boolean(ok), `${label}: ${JSON.stringify(seen)?.slice(0, 400)}`).toBe(true);
const get = async (p: string) => { const r = await fetch(h.url + p); return { s: r.status, b: await r.text() }; };
const post = async (p: string, body: unknown) => { const r = await postJson(h.url + p, body); return { s: r.status, b: await r.text(), h: r.headers }; };
const j = (t: string) => { try { return JSON.parse(t); } catch { return t; } };

// The gateway's acceptance cases for health, models, assistants, agents, threads and run validation that no other
// test names, over HTTP. Where the LangGraph SDK and upstream disagree the SDK wins (`stream_resumable` is accepted,
// `enqueue` is supported), and an unknown model name falls back to the default model instead of a 400.
describe("gateway acceptance cases A-C (spec/cases/gateway.md)", () => {
  it("health, models, assistants and the agents API answer as GW-001..GW-007 say", async () => {
    let r: any = await get("/health"); check("GW-001", r.s === 200 && j(r.b).status === "healthy" && j(r.b).service === "deer-flow-gateway", r);
    r = await post("/assistants/search", {}); const a = j(r.b);
    check("GW-004 item0", r.s === 200 && a[0].assistant_id === "lead_agent" && a[0].graph_id === "lead_agent" && a[0].name === "lead_agent" && a[0].version === 1 && JSON.stringify(a[0].config) === "{}" && a[0].metadata?.created_by === "system", a[0]);
    r = await post("/assistants/search", { name: "LEAD" }); check("GW-004 name", j(r.b).length === 1, r);
    r = await get("/assistants/lead_agent/schemas"); check("GW-004 schemas", ["graph_id", "input_schema", "output_schema", "state_schema", "config_schema"].every((k) => k in j(r.b)), r);
    r = await get("/assistants/lead_agent/graph"); check("GW-004 graph", j(r.b).graph_id && Array.isArray(j(r.b).nodes), r);
    for (const p of ["/assistants/ghost", "/assistants/ghost/graph", "/assistants/ghost/schemas"]) { r = await get(p); check("GW-005 " + p, r.s === 404 && j(r.b).detail === "Assistant ghost not found", r); }
    r = await post("/api/agents", { name: "Research-Bot", description: "d", soul: "Be brief." }); check("GW-006 create", r.s === 201 && j(r.b).name === "research-bot", r);
    r = await post("/api/agents", { name: "Research-Bot", description: "d", soul: "Be brief." }); check("GW-006 409", r.s === 409 && j(r.b).detail === "Agent 'research-bot' already exists", r);
    r = await get("/api/agents/check?name=research-bot"); check("GW-006 check", j(r.b).available === false && j(r.b).name === "research-bot", r);
    r = await post("/api/agents", { name: "bad_name!" }); check("GW-007 name", r.s === 422 && JSON.stringify(j(r.b).detail).includes("^[A-Za-z0-9-]+$"), r);
    r = await get("/api/agents/bad.name"); check("GW-007 get", r.s === 422, r);
    r = await get("/api/agents/check?name=a%20b"); check("GW-007 check", r.s === 422, r);
    r = await post("/api/agents", { name: "ok", model: "no-such-model" }); check("GW-007 model", r.s === 422 && String(j(r.b).detail).startsWith("Unknown model 'no-such-model'"), r);
  });

  it("threads answer as GW-008..GW-016 say", async () => {
    let r: any = await post("/threads", {}); const t0 = j(r.b); check("GW-008", r.s === 200 && t0.status === "idle" && JSON.stringify(t0.metadata) === "{}" && JSON.stringify(t0.values) === "{}" && JSON.stringify(t0.interrupts) === "{}" && t0.created_at && t0.updated_at, t0);
    r = await post("/threads", { thread_id: "t-1", metadata: { a: 1, user_id: "evil" } }); r = await post("/threads", { thread_id: "t-1", metadata: { a: 2 } }); check("GW-009", r.s === 200 && JSON.stringify(j(r.b).metadata) === '{"a":1}', r);
    r = await post("/threads", { thread_id: "bad.id" }); check("GW-010 create", r.s === 422, r);
    r = await get("/threads/bad.id/state"); check("GW-010 state", r.s === 422, r);
    r = await post("/threads/bad.id/runs/stream", {}); check("GW-010 stream", r.s === 422, r);
    for (const tid of ["../escape", "", "x".repeat(65), 123]) { r = await post("/runs/stream", { config: { configurable: { thread_id: tid } } }); check("GW-010 stateless " + String(tid).slice(0, 10), r.s === 422, r); }
    r = await get("/threads/7d0c1f9e-0000-4000-8000-000000000000"); check("GW-011", r.s === 404 && j(r.b).detail === "Thread 7d0c1f9e-0000-4000-8000-000000000000 not found", r);
    r = await post("/threads/never-made/history", {}); check("GW-015 unknown thread", r.s === 200 && r.b === "[]", r);
    r = await fetch(h.url + "/threads/t-1", { method: "PATCH", headers: { "content-type": "application/json" }, body: JSON.stringify({ metadata: { agent_name: "x" } }) }); const pb = await r.json(); check("GW-012", r.status === 200 && JSON.stringify(pb.metadata) === '{"a":1,"agent_name":"x"}', pb);
    r = await fetch(h.url + "/threads/never-made", { method: "PATCH", headers: { "content-type": "application/json" }, body: JSON.stringify({ metadata: {} }) }); check("GW-012 404", r.status === 404, r.status);
    r = await post("/threads/search", { limit: 10, offset: 0 }); const items = j(r.b); check("GW-013", r.s === 200 && items.some((x: any) => x.thread_id === "t-1") && items.every((x: any) => ["thread_id", "status", "created_at", "updated_at", "metadata", "values", "interrupts"].every((k) => k in x)), items[0]);
    r = await post("/threads/search", { metadata: { agent_name: "x" } }); check("GW-013 filter", j(r.b).length === 1, r);
    r = await post("/threads/search", { limit: 0 }); check("GW-013 limit0", r.s === 422, r);
    r = await post("/threads/search", { sort_by: "created_at", select: ["thread_id"], ids: ["t-1"] }); check("GW-013 sdk keys", r.s === 200, r);
    r = await get("/threads/t-1/state"); const st = j(r.b); check("GW-014 fresh", r.s === 200 && JSON.stringify(st.values) === "{}" && Array.isArray(st.next) && typeof st.checkpoint?.checkpoint_id === "string", st);
    r = await post("/threads/t-1/state", { values: { title: "Renamed" } }); check("GW-014 update", r.s === 200 && j(r.b).values?.title === "Renamed", r);
    r = await get("/threads/t-1"); check("GW-014 title", j(r.b).values?.title === "Renamed", r);
    r = await post("/threads/t-1/state", { values: { not_a_channel: 1 } }); check("GW-014 unknown", r.s === 422 && JSON.stringify(j(r.b)).includes("Unknown thread-state field(s): not_a_channel"), r);
    r = await post("/threads/t-1/history", { limit: 0 }); check("GW-015 0", r.s === 422, r);
    r = await post("/threads/t-1/history", { limit: 101 }); check("GW-015 101", r.s === 422, r);
    const t2 = j((await post("/threads", {})).b).thread_id;
    r = await fetch(h.url + `/threads/${t2}`, { method: "DELETE" }); const db = await r.json(); check("GW-016", r.status === 200 && db.success === true && typeof db.message === "string", db);
    r = await fetch(h.url + `/threads/${t2}`, { method: "DELETE" }); check("GW-016 404", r.status === 404, r.status);
  });

  it("run admission and validation answer as GW-019..GW-030, GW-039 and GW-052 say", async () => {
    let r: any;
    // Its own thread: the threads case may run after this one (any order).
    const t = "t-runs-" + Math.random().toString(36).slice(2, 8);
    expect((await post("/threads", { thread_id: t })).s).toBe(200);
    const modes = async (sm: unknown) => { const res = await post(`/threads/${t}/runs/stream`, { input: { messages: [{ role: "user", content: "hi" }] }, ...(sm === undefined ? {} : { stream_mode: sm }) }); return parseSse(res.b).frames.map((f) => f.event).join(","); };
    const base = await modes(["values"]);
    for (const sm of [undefined, null, "values", []]) { const m = await modes(sm); check("GW-019 " + JSON.stringify(sm), m === base, [m, base]); }
    const dup = await modes(["values", "values"]); check("GW-019 dup", dup === base, [dup, base]);
    for (const [k, v] of [["webhook", "https://x"], ["on_completion", "keep"], ["on_completion", "delete"], ["after_seconds", 1.5], ["if_not_exists", "reject"], ["feedback_keys", []]] as const) {
      r = await post(`/threads/${t}/runs/stream`, { [k]: v }); const d = j(r.b).detail?.[0];
      check("GW-021 " + k, r.s === 422 && d?.type === "unsupported_run_option" && JSON.stringify(d.loc) === JSON.stringify(["body", k]) && d.msg === `Run option '${k}' is not supported by DeerFlow` && JSON.stringify(d.input) === JSON.stringify(v) && d.ctx?.option === k, r);
    }
    r = await post(`/threads/${t}/runs/stream`, { multitask_strategy: [] }); check("GW-021 list", r.s === 422 && j(r.b).detail?.[0]?.type !== "unsupported_run_option", r);
    let raw = await fetch(h.url + `/threads/${t}/runs/stream`, { method: "POST", headers: { "content-type": "application/json" }, body: '{"input":' }); let rb = await raw.text(); check("GW-023", raw.status === 422 && j(rb).detail, rb);
    raw = await fetch(h.url + `/threads/${t}/runs/stream`, { method: "POST", headers: { "content-type": "application/json" }, body: "[]" }); rb = await raw.text(); check("GW-023 array", raw.status === 422, rb);
    for (const p of ["/threads/never-made/runs/stream", "/threads/never-made/runs", "/threads/never-made/runs/wait"]) { r = await post(p, { input: { messages: [{ role: "user", content: "x" }] } }); check("GW-025 " + p, r.s === 404 && j(r.b).detail === "Thread never-made not found", r); }
    r = await post(`/threads/${t}/runs/stream`, { assistant_id: "ghost-agent", input: { messages: [{ role: "user", content: "x" }] } }); const ev = parseSse(r.b).frames; check("GW-028", r.s === 200 && ev.map((f) => f.event).join(",") === "metadata,error,end" && String(ev[1].data.message).includes("ghost-agent") && typeof ev[1].data.name === "string", ev);
    for (const body of [{ assistant_id: "Bad Name!" }, { assistant_id: "../etc" }, { context: { agent_name: "../etc" } }]) { r = await post(`/threads/${t}/runs/stream`, body); check("GW-029 " + JSON.stringify(body), r.s === 422, r); }
    r = await post(`/threads/${t}/runs/stream`, { checkpoint_id: "does-not-exist", input: { messages: [{ role: "user", content: "x" }] } }); check("GW-030 a", r.s === 404 && String(j(r.b).detail).includes("Checkpoint does-not-exist not found"), r);
    r = await post(`/threads/${t}/runs/stream`, { checkpoint: { thread_id: "other", checkpoint_id: "x" }, input: { messages: [{ role: "user", content: "x" }] } }); check("GW-030 b", r.s === 400 && String(j(r.b).detail).includes("checkpoint thread_id does not match request thread_id"), r);
    r = await post(`/threads/${t}/runs/stream`, { config: { context: "bad" } }); check("GW-039 bad ctx", r.s === 422, r);
    r = await post("/runs/stream", { config: { configurable: null }, input: { messages: [{ role: "user", content: "x" }] } }); check("GW-052 null configurable", r.s === 200, r);
  }, 60_000);
});
