import { existsSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Session, signUp } from "../support/auth-client.js";
import { captureLogs } from "../support/capture-logs.js";
import { useFakeOpenAI } from "../support/fake-openai.js";
import { startHarness, type Harness } from "../support/harness.js";
import { parseSse } from "../support/sse.js";

// Issue 46 item 2: DeerFlow's `authorization:` section (built-in RBAC) over HTTP with sign-in: the admin gets
// write_file, a user whose role denies it never has it bound (the tools sent to the fake model), and a call to it
// anyway (a forged tool call) is refused.
const fake = useFakeOpenAI();
const PASSWORD = "correct-horse-battery";
let h: Harness;
let admin: Session;
let user: Session;
let logs: ReturnType<typeof captureLogs>;

const config = () => `models:
  - name: fake-gpt
    use: langchain_openai:ChatOpenAI
    model: gpt-test
    api_key: sk-test
    base_url: ${fake.url}
tool_groups:
  - name: file:write
tools:
  - name: write_file
    group: file:write
    use: deerflow.sandbox.tools:write_file_tool
authorization:
  enabled: true
  fail_closed: true
  default_role: user
  provider:
    use: deerflow.authz.rbac:RbacAuthorizationProvider
    config:
      roles:
        admin:
          tools: {allow: "*"}
          routes: {allow: "*"}
          models: {allow: "*"}
        user:
          tools: {allow: "*", deny: ["write_file", "web_serch"]}
          routes: {allow: "*"}
# Both guards in one chain: authorization outer, then the guardrail (it allows write_file).
guardrails:
  enabled: true
  provider:
    use: deerflow.guardrails.builtin:AllowlistProvider
    config:
      denied_tools: ["bash"]
`;

beforeAll(async () => {
  logs = captureLogs();
  h = await startHarness(config(), { authDisabled: false });
  admin = await signUp(h.url, "admin@example.com", PASSWORD, "initialize");
  user = await signUp(h.url, "user@example.com", PASSWORD);
});
afterAll(async () => {
  await h.close();
  logs.restore();
});

const toolNames = (body: Record<string, any>): string[] => (body.tools ?? []).map((t: any) => t.function.name);

async function run(session: Session): Promise<{ threadId: string; messages: any[] }> {
  const thread = await (await session.fetch("/threads", { json: {} })).json();
  const res = await session.fetch(`/threads/${thread.thread_id}/runs/stream`, { json: { input: { messages: [{ role: "user", content: "write it" }] }, stream_mode: ["values"] } });
  expect(res.status).toBe(200);
  const frames = parseSse(await res.text()).frames;
  expect(frames.some((f) => f.event === "error")).toBe(false);
  return { threadId: thread.thread_id, messages: frames.filter((f) => f.event === "values").at(-1)!.data.messages };
}

/** The fake asks for write_file (bound or not), then repeats the tool result. */
function scriptWrite(file: string) {
  fake.respond = (body) => {
    const last = body.messages.at(-1);
    if (last.role === "tool") return { content: `tool said: ${last.content}` };
    return { toolCalls: [{ name: "write_file", args: { path: `/mnt/user-data/outputs/${file}`, content: "x", description: "save" } }] };
  };
}

async function ownerOf(session: Session): Promise<string> {
  return (await (await session.fetch("/api/v1/auth/me")).json()).id;
}
const outputFile = (userId: string, threadId: string, file: string) => path.join(h.dir, ".deer-flow", "users", userId, "threads", threadId, "user-data", "outputs", file);

describe("tool authorization by role", () => {
  it("binds write_file for the admin, who can use it", async () => {
    scriptWrite("admin.txt");
    const { threadId, messages } = await run(admin);
    expect(toolNames(fake.requests[0].body)).toContain("write_file");
    expect(messages.find((m) => m.type === "tool").status).not.toBe("error");
    expect(existsSync(outputFile(await ownerOf(admin), threadId, "admin.txt"))).toBe(true);
  });

  it("never binds write_file for a user whose role denies it, and refuses a forged call to it", async () => {
    scriptWrite("user.txt");
    const { threadId, messages } = await run(user);
    const sent = toolNames(fake.requests[0].body);
    expect(sent).not.toContain("write_file");
    expect(sent.length).toBeGreaterThan(0);
    const result = messages.find((m) => m.type === "tool");
    expect(result.status).toBe("error");
    expect(result.content).toBe("Guardrail denied: tool 'write_file' was blocked (authz.denied). Reason: role 'user' is denied 'write_file' on resource 'tool'. Choose an alternative approach.");
    expect(existsSync(outputFile(await ownerOf(user), threadId, "user.txt"))).toBe(false);
  });

  it("warns about a role naming a tool nothing provides, naming it (once)", async () => {
    fake.respond = () => ({ content: "ok" });
    await run(user);
    await run(admin);
    expect(logs.messages().filter((m) => m.includes("'web_serch'"))).toEqual([
      "authorization: a role names tool 'web_serch', which no configured tool or built-in has; check the name",
    ]);
  });
});
