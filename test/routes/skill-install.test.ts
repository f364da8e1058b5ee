import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import JSZip from "jszip";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { Session, signUp } from "../support/auth-client.js";
import { useFakeOpenAI, type FakeReply } from "../support/fake-openai.js";
import { startHarness, type Harness } from "../support/harness.js";
import { installSkillArchive } from "../../src/skills/skill-install.js";
import { SkillStorage } from "../../src/skills/skill-storage.js";

// Issue 47 item 5: POST /api/skills/install installs a `.skill` archive (a zip) from a thread's artifact or upload
// into the caller's custom skills, validated as DeerFlow's installer does; GET /api/skills/{name}.
vi.setConfig({ testTimeout: 60_000, hookTimeout: 60_000 });

const fake = useFakeOpenAI();
const PASSWORD = "correct-horse-battery";
let h: Harness;
let alice: Session;
let bob: Session;
let aliceId: string;
let bobThread: string;

beforeAll(async () => {
  h = await startHarness(`models:
  - {name: fake-gpt, use: "langchain_openai:ChatOpenAI", model: gpt-test, api_key: sk-test, base_url: "${fake.url}"}
title: {enabled: false}
memory: {enabled: false}
`, { authDisabled: false });
  alice = await signUp(h.url, "alice@example.com", PASSWORD, "initialize");
  bob = await signUp(h.url, "bob@example.com", PASSWORD);
  aliceId = (await (await alice.fetch("/api/v1/auth/me")).json()).id;
  bobThread = (await (await bob.fetch("/threads", { json: {} })).json()).thread_id;
});
afterAll(async () => h.close());

const SKILL_MD = (name: string, body = "Always answer in exactly three bullet points.") => `---\nname: ${name}\ndescription: Answers as three bullets\n---\n\n# ${name}\n\n${body}\n`;
const customRoot = () => path.join(process.env.DEER_FLOW_HOME!, "users", aliceId, "skills", "custom");
const installed = () => (existsSync(customRoot()) ? readdirSync(customRoot()).filter((n) => n !== ".history") : []);

/** A zip of `files` (name -> content, or [content, unix mode]). */
async function zip(files: Record<string, string | Buffer | [string, number]>): Promise<Buffer> {
  const z = new JSZip();
  for (const [name, v] of Object.entries(files)) {
    if (Array.isArray(v)) z.file(name, v[0], { unixPermissions: v[1] });
    else z.file(name, v);
  }
  return z.generateAsync({ type: "nodebuffer", compression: "DEFLATE", platform: "UNIX" });
}

/** Sets the declared uncompressed size of the entry `name` (local and central headers) to `size`. */
function declareSize(buf: Buffer, name: string, size: number): Buffer {
  const out = Buffer.from(buf);
  for (let i = 0; i < out.length - 4; i++) {
    const sig = out.readUInt32LE(i);
    if (sig === 0x04034b50 && out.toString("utf8", i + 30, i + 30 + out.readUInt16LE(i + 26)) === name) out.writeUInt32LE(size, i + 22);
    if (sig === 0x02014b50 && out.toString("utf8", i + 46, i + 46 + out.readUInt16LE(i + 28)) === name) out.writeUInt32LE(size, i + 24);
  }
  return out;
}

/** A new thread of Alice's with `bytes` written at outputs/<name>. */
async function artifact(name: string, bytes: Buffer): Promise<string> {
  const thread = (await (await alice.fetch("/threads", { json: {} })).json()).thread_id as string;
  const outputs = path.join(process.env.DEER_FLOW_HOME!, "users", aliceId, "threads", thread, "user-data", "outputs");
  mkdirSync(outputs, { recursive: true });
  writeFileSync(path.join(outputs, name), bytes);
  return thread;
}

const install = (session: Session, thread_id: string, p: string) => session.fetch("/api/skills/install", { json: { thread_id, path: p } });

describe("POST /api/skills/install", () => {
  it("installs from an artifact with its supporting files and history; /name then puts it in the model's request", async () => {
    const thread = await artifact("three-bullets.skill", await zip({ "three-bullets/SKILL.md": SKILL_MD("three-bullets"), "three-bullets/references/style.md": "Short bullets." }));
    const res = await install(alice, thread, "/mnt/user-data/outputs/three-bullets.skill");

    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ success: true, skill_name: "three-bullets", message: "Skill 'three-bullets' installed successfully" });
    expect(readFileSync(path.join(customRoot(), "three-bullets", "references", "style.md"), "utf8")).toBe("Short bullets.");

    expect(await (await alice.fetch("/api/skills/three-bullets")).json()).toEqual({ name: "three-bullets", description: "Answers as three bullets", license: null, category: "custom", enabled: true, editable: true });
    const history = (await (await alice.fetch("/api/skills/custom/three-bullets/history")).json()).history;
    expect(history.map((e: any) => [e.action, e.author, e.new_content])).toEqual([["human_install", "human", SKILL_MD("three-bullets")]]);

    fake.respond = (): FakeReply => ({ content: "done" });
    const before = fake.requests.length;
    const run = await alice.fetch(`/threads/${thread}/runs/wait`, { json: { assistant_id: "lead_agent", input: { messages: [{ type: "human", content: "/three-bullets what is HTTP?" }] } } });
    expect(run.status).toBe(200);
    const sent = JSON.stringify(fake.requests.slice(before)[0].body.messages);
    expect(sent).toContain("<slash_skill_activation>");
    expect(sent).toContain("Always answer in exactly three bullet points.");
  });

  it("installs from an upload with SKILL.md at the archive's root; a second install of the name is 409", async () => {
    const body = await zip({ "SKILL.md": SKILL_MD("from-upload"), ".DS_Store": "x" });
    const thread = (await (await alice.fetch("/threads", { json: {} })).json()).thread_id as string;
    const form = new FormData();
    form.append("files", new Blob([new Uint8Array(body)]), "from-upload.skill");
    expect((await alice.fetch(`/api/threads/${thread}/uploads`, { method: "POST", body: form })).status).toBe(200);
    expect((await install(alice, thread, "mnt/user-data/uploads/from-upload.skill")).status).toBe(200);
    const again = await install(alice, thread, "mnt/user-data/uploads/from-upload.skill");
    expect(again.status).toBe(409);
    expect((await again.json()).detail).toBe("Skill 'from-upload' already exists");
  });

  it.each([
    ["a '../' path", { "ok/SKILL.md": SKILL_MD("ok-a"), "../evil.txt": "x" }, /^Archive contains an unsafe or unreadable member: invalid relative path: \.\.\//],
    ["an absolute path", { "/etc/evil.txt": "x", "SKILL.md": SKILL_MD("ok-b") }, /absolute path/],
    ["a symlink", { "s/SKILL.md": SKILL_MD("ok-c"), "s/link": ["/etc/passwd", 0o120777] }, /symbolic link: 's\/link'/],
    ["no SKILL.md", { "s/README.md": "hi" }, /^Invalid skill: SKILL.md not found$/],
    ["bad front matter", { "s/SKILL.md": "---\nname: Bad_Name\ndescription: x\n---\n" }, /^Invalid skill: Name 'Bad_Name' should be hyphen-case/],
    ["a nested SKILL.md", { "s/SKILL.md": SKILL_MD("ok-d"), "s/references/SKILL.md": SKILL_MD("ok-e") }, /nested SKILL.md/],
    ["an executable binary", { "s/SKILL.md": SKILL_MD("ok-f"), "s/scripts/run": Buffer.from("\x7fELF\x02\x01\x01rest", "latin1") }, /executable binary member: 's\/scripts\/run'/],
  ] as const)("refuses %s with a 400 and installs nothing", async (_label, files, message) => {
    const thread = await artifact("x.skill", await zip(files as Record<string, string | Buffer | [string, number]>));
    const before = installed();
    const res = await install(alice, thread, "mnt/user-data/outputs/x.skill");
    expect(res.status).toBe(400);
    const detail = (await res.json()).detail as string;
    expect(detail).toMatch(message);
    expect(detail).not.toContain(h.dir);
    expect(installed()).toEqual(before);
  });

  it("refuses a zip bomb (declared or actual size over 512 MiB), too many entries, not a zip, not .skill", async () => {
    const before = installed();
    const plain = await zip({ "s/SKILL.md": SKILL_MD("bomb"), "s/references/a.txt": "a".repeat(1000) });
    const declared = await install(alice, await artifact("d.skill", declareSize(plain, "s/references/a.txt", 0x30000000)), "outputs/d.skill");
    expect(declared.status).toBe(400);
    expect((await declared.json()).detail).toBe("Skill archive is too large or appears highly compressed.");
    // A header that under-declares: the bytes are counted while extracting.
    const lying = await install(alice, await artifact("l.skill", declareSize(plain, "s/references/a.txt", 10)), "outputs/l.skill");
    expect(lying.status).toBe(400);
    expect((await lying.json()).detail).toMatch(/corrupt|too many bytes/);
    const many = Object.fromEntries([["s/SKILL.md", SKILL_MD("many")], ...Array.from({ length: 4100 }, (_, i) => [`s/references/${i}.txt`, ""])]);
    const tooMany = await install(alice, await artifact("m.skill", await zip(many)), "outputs/m.skill");
    expect(tooMany.status).toBe(400);
    expect((await tooMany.json()).detail).toMatch(/^Skill archive contains too many entries \(410\d > 4096\)\.$/);
    const notZip = await install(alice, await artifact("n.skill", Buffer.from("not a zip at all")), "outputs/n.skill");
    expect([notZip.status, (await notZip.json()).detail]).toEqual([400, "File is not a valid ZIP archive"]);
    const ext = await install(alice, await artifact("s.zip", plain), "outputs/s.zip");
    expect([ext.status, (await ext.json()).detail]).toEqual([400, "File must have .skill extension"]);
    expect(installed()).toEqual(before);
  });

  it("answers 404 for a missing file and for another user's thread; 403 for a non-admin; GET of an unknown skill 404", async () => {
    const thread = await artifact("x.skill", await zip({ "SKILL.md": SKILL_MD("x") }));
    expect((await install(alice, thread, "outputs/missing.skill")).status).toBe(404);
    expect((await install(alice, bobThread, "outputs/x.skill")).status).toBe(404);
    expect((await install(bob, bobThread, "outputs/x.skill")).status).toBe(403);
    expect((await alice.fetch("/api/skills/no-such-skill")).status).toBe(404);
  });
});

describe("installSkillArchive", () => {
  it("stops a real high-ratio archive at the actual byte budget and leaves no staging behind", async () => {
    const home = mkdtempSync(path.join(tmpdir(), "skill-install-"));
    try {
      const storage = new SkillStorage({ skillsRoot: path.join(home, "skills"), userId: "u1", home });
      const bomb = await zip({ "s/SKILL.md": SKILL_MD("zeros"), "s/assets/zeros.bin": Buffer.alloc(4 * 1024 * 1024) });
      expect(bomb.length).toBeLessThan(64 * 1024);
      await expect(installSkillArchive(storage, { buffer: bomb }, "z.skill", { maxEntries: 10, maxTotalBytes: 1024 * 1024 })).rejects.toThrow("too large or appears highly compressed");
      expect(readdirSync(storage.userCustomRoot)).toEqual([]);
      await expect(installSkillArchive(storage, { buffer: bomb }, "z.skill", { maxEntries: 10, maxTotalBytes: 8 * 1024 * 1024 })).resolves.toMatchObject({ skill_name: "zeros" });
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });
});
