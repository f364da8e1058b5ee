import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { useFakeOpenAI } from "../support/fake-openai.js";
import { postJson, startHarness, type Harness } from "../support/harness.js";

// ask_clarification takes `fields`; a valid form is a version-2 `form` request,
// a broken one degrades whole to options / free text. Over HTTP against the fake OpenAI server.
const fake = useFakeOpenAI();
let h: Harness;

beforeAll(async () => {
  h = await startHarness(`models:
  - {name: fake-gpt, use: "langchain_openai:ChatOpenAI", model: gpt-test, api_key: sk-test, base_url: "${fake.url}"}
`);
});
afterAll(async () => {
  await h.close();
});

/** Runs one turn in which the model calls ask_clarification with `args`; returns the clarification tool message. */
async function clarify(args: Record<string, unknown>): Promise<any> {
  fake.respond = () => ({ toolCalls: [{ name: "ask_clarification", args, id: "call-form" }] });
  const res = await postJson(`${h.url}/runs/wait`, { input: { messages: [{ role: "user", content: "book me a trip" }] } });
  expect(res.status).toBe(200);
  const body = await res.json();
  return body.messages.find((m: any) => m.type === "tool" && m.name === "ask_clarification");
}

describe("ask_clarification forms (agent-factory.md §6.20)", () => {
  it("offers `fields` to the model and turns a valid form into a version-2 form request with a text fallback", async () => {
    const msg = await clarify({
      question: "Trip details?",
      options: ["ignored because fields win"],
      fields: [
        { name: "city", label: "City", required: true },
        { name: "nights", type: "number", placeholder: " 3 " },
        { name: "extras", type: "multi_select", options: ["Breakfast", "<b>Parking</b>", "Breakfast", " "] },
        { name: "class", type: "select", options: [] },
        { name: "mode", type: "hovercraft" },
      ],
    });
    const schema = fake.requests[0].body.tools.find((t: any) => t.function.name === "ask_clarification").function.parameters;
    expect(schema.properties).toHaveProperty("fields");
    expect(msg.content).toBe(
      "❓ Trip details?\n  1. City (required)\n  2. nights\n  3. extras — options: Breakfast / Parking (multiple allowed)\n  4. class\n  5. mode\n\nPlease reply with a value for each field.",
    );
    expect(msg.artifact.human_input).toEqual({
      version: 2,
      kind: "human_input_request",
      source: "ask_clarification",
      input_mode: "form",
      request_id: "clarification:call-form",
      clarification_type: "missing_info",
      question: "Trip details?",
      tool_call_id: "call-form",
      fields: [
        { name: "city", label: "City", type: "text", required: true },
        { name: "nights", label: "nights", type: "number", required: false, placeholder: "3" },
        { name: "extras", label: "extras", type: "multi_select", required: false, options: [{ id: "extras-option-1", label: "Breakfast", value: "Breakfast" }, { id: "extras-option-2", label: "Parking", value: "Parking" }] },
        { name: "class", label: "class", type: "text", required: false },
        { name: "mode", label: "mode", type: "text", required: false },
      ],
    });
  });

  it("discards a whole form with a reserved, duplicate or over-long entry and falls back to options", async () => {
    for (const fields of [
      [{ name: "city" }, { name: "constructor" }],
      [{ name: "city" }, { name: "city" }],
      [{ name: "city", label: "x".repeat(201) }],
      Array.from({ length: 17 }, (_, i) => ({ name: `f${i}` })),
      [{ name: "pick", type: "select", options: Array.from({ length: 25 }, (_, i) => `o${i}`) }],
      [{ name: "city" }, "not an object"],
    ]) {
      fake.reset();
      const msg = await clarify({ question: "Where?", options: ["Paris", "Rome"], fields });
      expect(msg.artifact.human_input).toMatchObject({ version: 1, input_mode: "choice_with_other" });
      expect(msg.artifact.human_input).not.toHaveProperty("fields");
      expect(msg.content).toBe("❓ Where?\n  1. Paris\n  2. Rome");
    }
  });

  it("decodes fields sent as a JSON string", async () => {
    const msg = await clarify({ question: "Name?", fields: JSON.stringify([{ name: "first", required: "true" }]) });
    expect(msg.artifact.human_input).toMatchObject({ version: 2, input_mode: "form", fields: [{ name: "first", label: "first", type: "text", required: true }] });
  });
});
