import { it } from "vitest";
import { HumanMessage } from "@langchain/core/messages";
import { _makeLeadAgent } from "../src/agents/lead-agent/agent.js";
import { parseAppConfig } from "../src/config/schema.js";
import { startFakeOpenAI } from "./support/fake-openai.js";
it("aborts", async () => {
  const fake = await startFakeOpenAI();
  fake.respond = () => ({ content: "late", delayMs: 5000 });
  const appConfig = parseAppConfig({ models: [{ name: "m", use: "langchain_openai:ChatOpenAI", model: "x", api_key: "k", base_url: fake.url }] });
  const context = { thread_id: "t1", user_id: "default", app_config: appConfig };
  const agent = await _makeLeadAgent({ context, configurable: { thread_id: "t1" } }, { appConfig });
  const ac = new AbortController();
  setTimeout(() => ac.abort(new Error("deadline")), 300);
  try {
    const s = await agent.stream({ messages: [new HumanMessage("hi")] } as never, { context, configurable: { thread_id: "t1" }, streamMode: "values", signal: ac.signal, recursionLimit: 50 } as never);
    for await (const _ of s as any) {}
  } catch (e) { console.log("err", (e as Error).message); }
  await new Promise((r) => setTimeout(r, 200));
  console.log("abandoned", fake.abandoned, "inflight", fake.inFlight);
});
