// The security-relevant middleware decisions upstream journals (guardrails/middleware.py,
// safety_finish_reason_middleware.py, skill_activation_middleware.py) reach a run's stored events over HTTP:
// `middleware:guardrail` for a denied tool call and `middleware:skill_activation` for a slash-activated skill.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { postJson, startHarness, type Harness } from "../support/harness.js";

vi.setConfig({ testTimeout: 60_000 });
const work = mkdtempSync(path.join(tmpdir(), "run-events-mw-"));
const skills = path.join(work, "skills");
let h: Harness;

beforeAll(async () => {
  mkdirSync(path.join(skills, "public", "greeter"), { recursive: true });
  writeFileSync(path.join(skills, "public", "greeter", "SKILL.md"), "---\nname: greeter\ndescription: Greets people warmly.\n---\nSay hello.\n");
  h = await startHarness(
    [
      "models:\n  - {name: s, use: \"deerflow-gateway:ScriptedChatModel\", model: s}",
      "memory: {enabled: false}",
      "title: {enabled: false}",
      `skills: {path: ${JSON.stringify(skills)}}`,
      "tool_groups:\n  - name: file:read",
      "tools:\n  - name: read_file\n    group: file:read\n    use: deerflow-gateway/sandbox:readFileTool",
      "guardrails:\n  enabled: true\n  provider:\n    use: deerflow.guardrails.builtin:AllowlistProvider\n    config:\n      denied_tools: [\"read_file\"]",
      "",
    ].join("\n"),
  );
}, 120_000);
afterAll(async () => {
  await h?.close();
  rmSync(work, { recursive: true, force: true });
});

/** Runs `content` on a new thread to completion; returns the run's `middleware:*` events. */
async function middlewareEvents(content: string): Promise<any[]> {
  const { thread_id: threadId } = (await (await postJson(`${h.url}/threads`, {})).json()) as { thread_id: string };
  const res = await postJson(`${h.url}/threads/${threadId}/runs/wait`, { assistant_id: "lead_agent", input: { messages: [{ type: "human", content }] } });
  expect(res.status).toBe(200);
  await res.text();
  const [run] = (await (await fetch(`${h.url}/threads/${threadId}/runs`)).json()) as { run_id: string }[];
  const events = await fetch(`${h.url}/api/threads/${threadId}/runs/${run.run_id}/events?event_types=middleware:*`);
  expect(events.status).toBe(200);
  return (await events.json()) as any[];
}

describe("middleware decisions in the run event catalog", () => {
  it("records a denied tool call as middleware:guardrail with upstream's fields", async () => {
    const events = await middlewareEvents(`!call read_file ${JSON.stringify({ path: "/mnt/user-data/workspace/a.txt", description: "peek" })}`);
    expect(events.map((e) => e.event_type)).toEqual(["middleware:guardrail"]);
    expect(events[0]).toMatchObject({
      category: "middleware",
      content: { name: "GuardrailMiddleware", hook: "wrap_tool_call", action: "deny_tool_call", changes: { tool_name: "read_file", allow: false, provider_error: false, fail_closed: true } },
    });
    expect(events[0].content.changes.reason_codes.length).toBeGreaterThan(0);
  });

  it("records a slash-activated skill as middleware:skill_activation with its path and content hash", async () => {
    const events = await middlewareEvents("/greeter say hi to Ada");
    expect(events.map((e) => e.event_type)).toEqual(["middleware:skill_activation"]);
    expect(events[0].content).toMatchObject({
      name: "SkillActivationMiddleware",
      action: "activate",
      changes: { skill_name: "greeter", category: "public", path: "/mnt/skills/public/greeter/SKILL.md", content_hash: expect.stringMatching(/^[0-9a-f]{64}$/) },
    });
  });
});
