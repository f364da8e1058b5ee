// CPU of one guarded tool call in GuardrailMiddleware.wrapToolCall over the bare handler (allowlist provider, no
// run scope). Run: npx tsx bench/guard-call.bench.ts
import { ToolMessage } from "@langchain/core/messages";
import { AllowlistProvider, GuardrailMiddleware } from "../src/agents/middlewares/guardrails.js";
const mw = new GuardrailMiddleware(new AllowlistProvider({ denied_tools: ["bash"] }));
const msg = new ToolMessage({ content: "ok", tool_call_id: "1", name: "echo" });
const req = { toolCall: { name: "echo", args: { text: "x" }, id: "1" }, runtime: { context: { thread_id: "t", run_id: "r", user_id: "u" } } } as never;
const handler = async () => msg;
for (let i = 0; i < 20000; i++) await mw.wrapToolCall(req, handler as never);
const N = 100000;
const c = process.cpuUsage();
for (let i = 0; i < N; i++) await mw.wrapToolCall(req, handler as never);
const u = process.cpuUsage(c);
const d = process.cpuUsage();
for (let i = 0; i < N; i++) await handler();
const v = process.cpuUsage(d);
console.log(`wrapToolCall ${(((u.user + u.system) - (v.user + v.system)) / N).toFixed(2)} µs CPU per guarded tool call (over the bare handler)`);
