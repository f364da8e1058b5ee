import { AIMessage, AIMessageChunk, HumanMessage, ToolMessage } from "@langchain/core/messages";
import { tool } from "langchain";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { countWords, ScriptedChatModel, scriptedTokens } from "../../src/models/scripted-chat-model.js";

const weather = tool(async ({ city }: { city: string }) => `sunny in ${city}`, {
  name: "get_weather",
  description: "weather",
  schema: z.object({ city: z.string() }),
});

describe("ScriptedChatModel", () => {
  it("echoes the last human message", async () => {
    const out = await new ScriptedChatModel({}).invoke([new HumanMessage("hello there")]);
    expect(out.content).toBe("You said: hello there");
    expect(out.response_metadata.model_name).toBe("scripted");
    expect(out.usage_metadata).toMatchObject({ input_tokens: 2, output_tokens: 4, total_tokens: 6 });
  });

  it("calls a bound tool for `!call <tool> {json}` with a reproducible id", async () => {
    const bound = new ScriptedChatModel({}).bindTools([weather]);
    const out = (await bound.invoke([new HumanMessage('!call get_weather {"city":"Paris"}')])) as AIMessage;
    expect(out.tool_calls).toEqual([{ name: "get_weather", args: { city: "Paris" }, id: "call_1", type: "tool_call" }]);
    expect(out.response_metadata.finish_reason).toBe("tool_calls");
  });

  it("answers with text instead of calling a tool that is not bound", async () => {
    const out = (await new ScriptedChatModel({}).invoke([new HumanMessage('!call get_weather {"city":"Paris"}')])) as AIMessage;
    expect(out.tool_calls ?? []).toEqual([]);
    expect(out.content).toBe("Tool 'get_weather' is not available. Bound tools: (none).");
  });

  it("reports arguments that are not a JSON object", async () => {
    const bound = new ScriptedChatModel({}).bindTools([weather]);
    expect((await bound.invoke([new HumanMessage("!call get_weather {oops")])).content).toBe("The arguments for 'get_weather' are not valid JSON.");
    expect((await bound.invoke([new HumanMessage("!call get_weather [1]")])).content).toBe("The arguments for 'get_weather' must be a JSON object.");
  });

  it("throws for `!fail <message>`", async () => {
    await expect(new ScriptedChatModel({}).invoke([new HumanMessage("!fail upstream exploded")])).rejects.toThrow("upstream exploded");
  });

  it("replies to a tool result with its content", async () => {
    const out = await new ScriptedChatModel({}).invoke([
      new HumanMessage("!call get_weather {}"),
      new AIMessage({ content: "", tool_calls: [{ name: "get_weather", args: {}, id: "call_1" }] }),
      new ToolMessage({ content: "sunny", tool_call_id: "call_1", name: "get_weather" }),
    ]);
    expect(out.content).toBe("Tool get_weather returned: sunny");
  });

  it("streams tokens that join back to the full text", async () => {
    const chunks: AIMessageChunk[] = [];
    for await (const c of await new ScriptedChatModel({ tokenDelayMs: 1 }).stream([new HumanMessage("one  two three")])) chunks.push(c);
    expect(chunks.length).toBeGreaterThan(3);
    expect(chunks.map((c) => c.content).join("")).toBe("You said: one  two three");
    expect(chunks.at(-1)?.response_metadata.finish_reason).toBe("stop");
  });

  it("streams a tool call as one tool-call chunk", async () => {
    const bound = new ScriptedChatModel({}).bindTools([weather]);
    let full: AIMessageChunk | undefined;
    for await (const c of await bound.stream([new HumanMessage('!call get_weather {"city":"Rome"}')])) full = full ? full.concat(c) : c;
    expect(full?.tool_calls).toEqual([{ name: "get_weather", args: { city: "Rome" }, id: "call_1", type: "tool_call" }]);
  });

  it("stops streaming when aborted", async () => {
    const ac = new AbortController();
    const stream = await new ScriptedChatModel({ tokenDelayMs: 20 }).stream([new HumanMessage("a b c d e f g h")], { signal: ac.signal });
    const seen: string[] = [];
    await expect(
      (async () => {
        for await (const c of stream) {
          seen.push(String(c.content));
          if (seen.length === 2) ac.abort();
        }
      })(),
    ).rejects.toThrow();
    expect(seen.length).toBeLessThan(8);
  });
});

describe("scriptedTokens", () => {
  it("keeps whitespace so the tokens join back exactly", () => {
    expect(scriptedTokens("a  b\nc ")).toEqual(["a  ", "b\n", "c "]);
    expect(scriptedTokens("")).toEqual([]);
  });
});

describe("countWords", () => {
  it("counts what /\\S+/g matches, for every kind of whitespace", () => {
    const pieces = ["a", "bc", "é", "😀", "\u0000", "-", " ", "\t", "\n", "\r", "\v", "\f", "\u00a0", "\u1680", "\u2000", "\u200a", "\u200b", "\u2028", "\u2029", "\u202f", "\u205f", "\u3000", "\ufeff", "\u0085"];
    let seed = 7;
    const rand = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
    for (let n = 0; n < 500; n++) {
      const text = Array.from({ length: Math.floor(rand() * 30) }, () => pieces[Math.floor(rand() * pieces.length)]).join("");
      expect(countWords(text)).toBe((text.match(/\S+/g) ?? []).length);
    }
    expect(countWords("")).toBe(0);
    expect(countWords("  two words ")).toBe(2);
  });
});
