import { existsSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bubblewrapStatus } from "../../src/sandbox/bubblewrap.js";
import { warnAboutHostBash } from "../../src/sandbox/security.js";
import { postJson, startHarness, type Harness } from "../support/harness.js";

// Issue 13, host bash: with `sandbox.allow_host_bash: true` the escape probes of the security review (paths built
// with printf, base64 and $'\x2f', the gateway's environment through /proc) must not leave the thread, where
// bubblewrap works; where it does not, the startup warning must say what is not protected.
const CONFIG =
  "models:\n  - name: s\n    use: deerflow-gateway:ScriptedChatModel\n    model: s\n" +
  "sandbox:\n  allow_host_bash: true\n" +
  "tool_groups:\n  - name: bash\n" +
  "tools:\n  - name: bash\n    group: bash\n    use: deerflow.sandbox.tools:bash_tool\n";
const SECRET_ENV = "dfgw-probe-env-9f3a";
const SECRET_FILE = "dfgw-probe-file-51c7";
let h: Harness;
let secretPath: string;
beforeAll(async () => {
  process.env.DFGW_PROBE_SECRET = SECRET_ENV;
  h = await startHarness(CONFIG);
  secretPath = path.join(h.dir, "outside-secret.txt");
  writeFileSync(secretPath, SECRET_FILE);
});
afterAll(async () => {
  await h.close();
  delete process.env.DFGW_PROBE_SECRET;
});

/** Runs `command` through the bash tool (scripted `!call`) and returns the tool's result text. */
async function bash(threadId: string, command: string): Promise<string> {
  await postJson(`${h.url}/threads`, { thread_id: threadId });
  const res = await postJson(`${h.url}/threads/${threadId}/runs/wait`, { input: { messages: [{ role: "user", content: `!call bash ${JSON.stringify({ command })}` }] } });
  const values = await res.json();
  const tool = values.messages.find((m: { type: string }) => m.type === "tool");
  return String(tool?.content ?? JSON.stringify(values));
}
const hex = (s: string) => [...s].map((c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, "0")}`).join("");
const available = bubblewrapStatus().available;

describe.runIf(available)("host bash inside bubblewrap", () => {
  it("works on the thread's files", async () => {
    const out = await bash("ok", "echo hello > /mnt/user-data/outputs/x.txt; cat /mnt/user-data/outputs/x.txt; pwd");
    expect(out).toBe("hello\n/mnt/user-data/workspace");
    expect(existsSync(path.join(h.dir, ".deer-flow", "users", "default", "threads", "ok", "user-data", "outputs", "x.txt"))).toBe(true);
  });

  it.each<[string, (p: string) => string]>([
    ["printf", (p) => `cat "$(printf '${hex(p)}')"`],
    ["base64", (p) => `cat "$(echo ${Buffer.from(p).toString("base64")} | base64 -d)"`],
    ["ANSI-C quoting", (p) => `cat $'${hex(p)}'`],
    ["a relative glob from the root", () => `cd $'\\x2f' && find tmp -name outside-secret.txt -exec cat {} + 2>&1; echo done`],
  ])("cannot read a host file outside the thread through %s", async (label, command) => {
    const out = await bash(`read-${label.replace(/\W/g, "")}`, command(secretPath));
    expect(out).not.toContain(SECRET_FILE);
  });

  it("cannot read the gateway's environment, through /proc or its own", async () => {
    const out = await bash("env", `cat $'\\x2fproc'/$PPID/environ $'\\x2fproc'/1/environ 2>&1 | tr '\\0' '\\n'; env`);
    expect(out).not.toContain(SECRET_ENV);
    expect(out).not.toContain("DEER_FLOW_HOME");
  });

  it("cannot write outside the thread nor reach the network", async () => {
    const target = path.join(h.dir, "escaped.txt");
    const { port } = new URL(h.url);
    const out = await bash("write", `echo x > "$(printf '${hex(target)}')" 2>&1; (exec 3<>$'\\x2fdev/tcp/127.0.0.1/${port}') 2>&1 && echo connected || echo no-network`);
    expect(existsSync(target)).toBe(false);
    expect(out).toContain("no-network");
    expect(out).not.toContain("connected\n");
  });
});

describe("the startup warning", () => {
  it("says what host bash protects, or plainly what it does not", () => {
    const message = warnAboutHostBash();
    if (available) expect(message).toContain("inside bubblewrap");
    else expect(message).toMatch(/WITHOUT isolation.*read every file.*environ.*network/s);
  });
});
