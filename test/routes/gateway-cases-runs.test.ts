import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { useFakeOpenAI } from "../support/fake-openai.js";
import { postJson, startHarness, type Harness } from "../support/harness.js";
import { parseSse } from "../support/sse.js";
import { until } from "../support/wait.js";

// The gateway's run-lifecycle acceptance cases (streaming, waiting, cancelling, joining; the GW-* ids) over HTTP,
// against the fake OpenAI server (its streamed reply stands in for the fixture's "echo" graph). "boom" is an agent
// error: the scripted model's `!fail boom` (a provider's HTTP error is no longer one: LLMErrorHandlingMiddleware
// answers it with user-facing text, as upstream does).
const fake = useFakeOpenAI();
let h: Harness;
beforeAll(async () => {
  h = await startHarness(`models:
  - {name: m-default, use: "langchain_openai:ChatOpenAI", model: gpt-test, api_key: sk-test, base_url: "${fake.url}", max_retries: 0}
  - {name: m-boom, use: "deerflow-gateway:ScriptedChatModel", model: scripted, token_delay_ms: 0}
`);
});
afterAll(async () => {
  await h.close();
});

/** One expectation of a case, reported with its id and what was seen; the other checks of the case still run. */
const check = (label: string, ok: unknown, seen: unknown) => expect.soft(Boolean(ok), `${label}: ${JSON.stringify(seen)?.slice(0, 600)}`).toBe(true);
const post = async (p: string, body: unknown) => {
  const r = await postJson(h.url + p, body);
  return { s: r.status, b: await r.text(), h: r.headers };
};
const get = async (p: string) => {
  const r = await fetch(h.url + p);
  return { s: r.status, b: await r.text() };
};
const hi = { messages: [{ role: "user", content: "hi" }] };
/** The fixture's "boom" run: an agent error (the scripted model failing with "boom"). */
const boom = { input: { messages: [{ role: "user", content: "!fail boom" }] }, context: { model_name: "m-boom" } };
const newThread = async (id?: string) => JSON.parse((await post("/threads", id ? { thread_id: id } : {})).b).thread_id as string;

describe("gateway acceptance cases: runs (spec/cases/gateway.md)", () => {
  it("streams a basic run: metadata, values, end; increasing ids; Content-Location without suffix (GW-017, GW-018)", async () => {
    fake.respond = () => ({ content: "Hello" });
    const t = await newThread("t-17");
    const r = await post(`/threads/${t}/runs/stream`, { assistant_id: "lead_agent", input: hi, stream_mode: ["values", "messages-tuple"] });
    check("GW-017 status", r.s === 200 && r.h.get("content-type")?.startsWith("text/event-stream"), r.h.get("content-type"));
    // An SSE response is neither cached nor buffered by a proxy.
    check("GW-017 headers", r.h.get("cache-control") === "no-cache" && r.h.get("x-accel-buffering") === "no", Object.fromEntries(r.h));
    const loc = r.h.get("content-location") ?? "";
    check("GW-017 content-location", /\/threads\/t-17\/runs\/[^/]+$/.test(loc), loc);
    const rid = loc.split("/").at(-1)!;
    const { frames } = parseSse(r.b);
    const events = frames.map((f) => f.event);
    check("GW-017 order", events[0] === "metadata" && events.at(-1) === "end" && !events.includes("messages-tuple") && events.includes("messages"), events);
    check("GW-017 metadata", frames[0].data.run_id === rid && frames[0].data.thread_id === "t-17", frames[0].data);
    const last = frames.filter((f) => f.event === "values").at(-1)!.data.messages.at(-1);
    check("GW-017 final", last.type === "ai" && last.content === "Hello" && !("lc" in last) && !("kwargs" in last), last);
    const ids = frames.filter((f) => f.event !== "end").map((f) => f.id);
    check("GW-017 ids", ids.every(Boolean) && ids.every((id, i) => i === 0 || String(id) > String(ids[i - 1]) || Number(String(id).split("-").at(-1)) > Number(String(ids[i - 1]).split("-").at(-1))), ids);
    check("GW-017 end", frames.at(-1)!.data === null && !frames.at(-1)!.id, frames.at(-1));
    const tuples = frames.filter((f) => f.event === "messages").map((f) => f.data);
    check("GW-018 tuples", tuples.length > 0 && tuples.every((d) => Array.isArray(d) && d.length === 2 && typeof d[0].type === "string" && d[0].id && typeof d[1] === "object"), tuples[0]);
    const aiChunks = tuples.filter((d) => d[0].type === "ai" || d[0].type === "AIMessageChunk");
    check("GW-018 deltas", aiChunks.map((d) => d[0].content).join("") === "Hello" && new Set(aiChunks.map((d) => d[0].id)).size === 1, aiChunks.map((d) => d[0]));
    const run = JSON.parse((await get(`/threads/t-17/runs/${rid}`)).b);
    check("GW-017 run status", run.status === "success", run.status);
    check("GW-017 thread idle", JSON.parse((await get("/threads/t-17")).b).status === "idle", null);
  });

  it("reports a model failure as error then end, with message and name, and an error run and thread (GW-031)", async () => {
    const t = await newThread();
    const r = await post(`/threads/${t}/runs/stream`, { ...boom, stream_mode: ["values"] });
    const { frames } = parseSse(r.b);
    const events = frames.map((f) => f.event);
    check("GW-031 order", events[0] === "metadata" && events.at(-2) === "error" && events.at(-1) === "end", events);
    const err = frames.find((f) => f.event === "error")?.data;
    check("GW-031 payload", err?.message === "boom" && typeof err?.name === "string" && err?.error === err?.name, err);
    const rid = (r.h.get("content-location") ?? "").split("/").at(-1);
    const run = JSON.parse((await get(`/threads/${t}/runs/${rid}`)).b);
    check("GW-031 run", run.status === "error", run);
    check("GW-031 thread", JSON.parse((await get(`/threads/${t}`)).b).status === "error", null);
  });

  it("creates the thread of a stateless stream and continues a named one (GW-052)", async () => {
    const r = await post("/runs/stream", { input: hi });
    const loc = r.h.get("content-location") ?? "";
    const tid = loc.split("/")[loc.split("/").indexOf("threads") + 1];
    const { frames } = parseSse(r.b);
    check("GW-052 location", /^\/(api\/)?threads\/[0-9a-f-]{36}\/runs\/[^/]+$/.test(loc) && frames[0].data.thread_id === tid, loc);
    check("GW-052 thread exists", (await get(`/threads/${tid}`)).s === 200, tid);
    await post("/runs/stream", { input: hi, config: { configurable: { thread_id: "t-9" } } });
    const second = parseSse((await post("/runs/stream", { input: hi, config: { configurable: { thread_id: "t-9" } } })).b).frames;
    check("GW-052 continues", second.filter((f) => f.event === "values").at(-1)!.data.messages.length === 4, second.at(-2));
  });

  it("waits for final values, and reports a failure as __error__ (GW-053)", async () => {
    fake.respond = () => ({ content: "Hello" });
    const t = await newThread();
    let r = await post(`/threads/${t}/runs/wait`, { input: hi });
    let body = JSON.parse(r.b);
    check("GW-053 values", r.s === 200 && body.messages.at(-1).content === "Hello" && !Object.keys(body).some((k) => k.startsWith("__pregel")), body);
    r = await post("/runs/wait", { input: hi });
    check("GW-053 stateless", r.s === 200 && JSON.parse(r.b).messages.at(-1).content === "Hello", r);
    r = await post(`/threads/${t}/runs/wait`, boom);
    body = JSON.parse(r.b);
    check("GW-053 error", r.s === 200 && typeof body.__error__?.error === "string" && typeof body.__error__?.message === "string", body);
  });

  it("creates a background run and joins it as JSON; lists runs newest first (GW-054, GW-055)", async () => {
    fake.respond = () => ({ content: "Hello" });
    const t = await newThread();
    const r = await post(`/threads/${t}/runs`, { input: hi, metadata: { tag: "first" } });
    const run = JSON.parse(r.b);
    check("GW-054 run", r.s === 200 && run.run_id && run.thread_id === t && run.assistant_id && ["pending", "running"].includes(run.status) && run.created_at && r.h.get("content-location"), run);
    const joined = await get(`/threads/${t}/runs/${run.run_id}/join`);
    check("GW-054 join", joined.s === 200 && JSON.parse(joined.b).messages.at(-1).content === "Hello", joined);
    await post(`/threads/${t}/runs/wait`, { input: hi });
    const list = JSON.parse((await get(`/threads/${t}/runs?limit=10&offset=0`)).b);
    const keys = ["run_id", "thread_id", "assistant_id", "status", "metadata", "kwargs", "multitask_strategy", "created_at", "updated_at"];
    check("GW-055 list", list.length === 2 && list[1].run_id === run.run_id && list.every((x: any) => keys.every((k) => k in x)), list.map((x: any) => Object.keys(x)));
    check("GW-055 metadata", list[1].metadata?.tag === "first", list[1].metadata);
    const one = JSON.parse((await get(`/threads/${t}/runs/${run.run_id}`)).b);
    check("GW-055 get", keys.every((k) => k in one), Object.keys(one));
  });

  it("cancels a run waiting for its predecessor without building it: just end, interrupted, no model call (GW-049)", async () => {
    fake.respond = () => ({ content: "slow answer", delayMs: 800 });
    const t = await newThread();
    const r1 = JSON.parse((await post(`/threads/${t}/runs`, { input: hi })).b);
    await until(async () => fake.requests.length === 1);
    const r2 = JSON.parse((await post(`/threads/${t}/runs`, { input: hi, multitask_strategy: "enqueue" })).b);
    check("GW-049 pending", r2.status === "pending", r2.status);
    const cancel = await fetch(`${h.url}/threads/${t}/runs/${r2.run_id}/cancel?wait=1`, { method: "POST" });
    check("GW-049 cancel", cancel.status === 204, cancel.status);
    check("GW-049 status", JSON.parse((await get(`/threads/${t}/runs/${r2.run_id}`)).b).status === "interrupted", null);
    const events = parseSse((await get(`/threads/${t}/runs/${r2.run_id}/stream`)).b).frames.map((f) => f.event);
    check("GW-049 stream", events.join(",") === "end", events);
    await get(`/threads/${t}/runs/${r1.run_id}/join`);
    check("GW-049 no model call", fake.requests.length === 1, fake.requests.length);
  });

  it("cancels then streams what remains; again on an interrupted run is not 409; re-cancel is 202 (GW-058, §3.5)", async () => {
    fake.respond = () => ({ content: "slow answer", delayMs: 800 });
    const t = await newThread();
    const run = JSON.parse((await post(`/threads/${t}/runs`, { input: hi })).b);
    await until(async () => fake.requests.length === 1);
    const first = await post(`/threads/${t}/runs/${run.run_id}/stream?action=interrupt`, {});
    check("GW-058 stream", first.s === 200 && parseSse(first.b).frames.at(-1)?.event === "end", first);
    check("GW-058 status", JSON.parse((await get(`/threads/${t}/runs/${run.run_id}`)).b).status === "interrupted", null);
    const again = await post(`/threads/${t}/runs/${run.run_id}/stream?action=interrupt`, {});
    check("GW-058 again", again.s !== 409 && (again.s === 202 || parseSse(again.b).frames.at(-1)?.event === "end"), again);
    const waited = await post(`/threads/${t}/runs/${run.run_id}/stream?action=interrupt&wait=1`, {});
    check("GW-058 wait", waited.s === 204, waited);
    const recancel = await fetch(`${h.url}/threads/${t}/runs/${run.run_id}/cancel`, { method: "POST" });
    check("§3.5 idempotent cancel", recancel.status === 202, recancel.status);
  });
});
