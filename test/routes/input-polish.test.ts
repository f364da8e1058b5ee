import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { postJson, startHarness, type Harness } from "../support/harness.js";

// Issue 46: `input_polish` is one of DeerFlow's keys this gateway implements: its switch and draft cap are honoured.
const MODEL = "models:\n  - name: s\n    use: deerflow-gateway:ScriptedChatModel\n    model: s\n";
let h: Harness;
beforeAll(async () => {
  h = await startHarness(`${MODEL}input_polish:\n  enabled: true\n  max_chars: 10\n`);
});
afterAll(async () => h.close());

describe("POST /api/input-polish and the input_polish section", () => {
  it("polishes a draft within max_chars (counted in characters), refuses a longer one", async () => {
    h.writeConfig(`${MODEL}input_polish:\n  enabled: true\n  max_chars: 10\n`);
    expect((await postJson(`${h.url}/api/input-polish`, { text: "héllo 😀" })).status).toBe(200);
    const res = await postJson(`${h.url}/api/input-polish`, { text: "a draft longer than ten" });
    expect(res.status).toBe(400);
    expect(JSON.stringify(await res.json())).toContain("Input text exceeds 10 characters");
  });

  it("answers 404 when input_polish.enabled is false", async () => {
    h.writeConfig(`${MODEL}input_polish:\n  enabled: false\n`);
    const res = await postJson(`${h.url}/api/input-polish`, { text: "hi" });
    expect(res.status).toBe(404);
  });
});
