// The bubblewrap provider over HTTP with the scripted model: bash without opt-in, isolation, skills, /health,
// /metrics and the audit line.
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { captureLogs } from "../support/capture-logs.js";
import { uploadFiles, type Harness } from "../support/harness.js";
import { bash, newThread, say, lastTool, startBwrapGateway } from "./bwrap-support.js";

let h: Harness;
beforeAll(async () => {
  h = await startBwrapGateway("  bash_command_timeout: 20");
});
afterAll(() => h.close());

describe("BubblewrapSandboxProvider", () => {
  it("gives the agent bash without allow_host_bash, in /mnt/user-data/workspace with an empty environment", async () => {
    const t = await newThread(h);
    const out = await bash(h, t, 'pwd; env | sort | cut -d= -f1 | tr "\\n" " "; echo; id -u; hostname');
    const [pwd, envNames, , host] = out.split("\n");
    expect(pwd).toBe("/mnt/user-data/workspace");
    // Only what the sandbox sets and bash adds itself: nothing of the gateway's environment.
    const allowed = new Set(["HOME", "LANG", "OLDPWD", "PATH", "PWD", "SHLVL", "TERM", "_"]);
    expect(envNames.trim().split(" ").filter((n) => !allowed.has(n))).toEqual([]);
    expect(envNames).toContain("PATH");
    expect(host).toBe("sandbox");
  });

  it("reports the active provider on /health", async () => {
    expect(await (await fetch(`${h.url}/health`)).json()).toMatchObject({ status: "healthy", sandbox: "bubblewrap" });
  });

  it("writes only under /mnt/user-data; the files reach the file tools and the artifacts route", async () => {
    const t = await newThread(h);
    expect(await bash(h, t, "echo made > /mnt/user-data/outputs/a.txt && cat /mnt/user-data/outputs/a.txt")).toBe("made");
    expect(lastTool(await say(h, t, '!call read_file {"path": "/mnt/user-data/outputs/a.txt"}'))).toBe("made\n");
    for (const target of ["/usr/x", "/etc/x", "/mnt/skills/public/x", "/x", "/dev/x", "/mnt/x"]) {
      expect(await bash(h, t, `echo no > ${target}`)).toMatch(/Read-only file system/);
    }
  });

  it("keeps threads apart: another thread's files are not there", async () => {
    const a = await newThread(h);
    const b = await newThread(h);
    await bash(h, a, "echo secret-a > /mnt/user-data/workspace/s.txt");
    expect(await bash(h, b, "ls -A /mnt/user-data/workspace; cat /mnt/user-data/workspace/s.txt")).toContain("No such file");
  });

  it("counts commands in /metrics and writes an audit line per command", async () => {
    const t = await newThread(h);
    const logs = captureLogs();
    try {
      await bash(h, t, "echo audited; exit 3");
    } finally {
      logs.restore();
    }
    const audit = logs.lines().filter((l) => l.sandbox_audit?.thread === t);
    expect(audit).toHaveLength(1);
    expect(audit[0].sandbox_audit).toMatchObject({ user: "default", command: "echo audited; exit 3", exit_code: 3, limit: null, refused: null, run: expect.any(String) });
    expect(audit[0].sandbox_audit.duration_ms).toBeGreaterThanOrEqual(0);
    const text = await (await fetch(`${h.url}/metrics`)).text();
    expect(text).toMatch(/deerflow_sandbox_commands_total\{outcome="error",limit="none"\} [1-9]/);
    expect(text).toMatch(/deerflow_sandbox_command_duration_seconds_count [1-9]/);
  });
});

describe("skills in the sandbox", () => {
  it("runs the shipped csv-profile skill's script on an uploaded CSV and the report is downloadable", async () => {
    const t = await newThread(h);
    const upload = await uploadFiles(h.url, t, [["sales.csv", "region,units,price\nnorth,10,2.5\nsouth,,3\neast,7,4\n", "text/csv"]]);
    expect(upload.status).toBe(200);
    const skill = await bash(h, t, "cat /mnt/skills/public/csv-profile/SKILL.md | head -3");
    expect(skill).toContain("name: csv-profile");
    const out = await bash(h, t, "python3 /mnt/skills/public/csv-profile/scripts/profile_csv.py /mnt/user-data/uploads/sales.csv /mnt/user-data/outputs/sales-profile.md");
    expect(out).toBe("Profiled 3 rows x 3 columns; missing values in: units; report: /mnt/user-data/outputs/sales-profile.md");
    const shown = await say(h, t, '!call present_files {"filepaths": ["/mnt/user-data/outputs/sales-profile.md"]}');
    expect(shown.artifacts).toEqual(["/mnt/user-data/outputs/sales-profile.md"]);
    const report = await (await fetch(`${h.url}/api/threads/${t}/artifacts/mnt/user-data/outputs/sales-profile.md`)).text();
    expect(report).toContain("| units | 2 | 1 | number | 7 | 8.5 | 10 |");
    expect(await bash(h, t, "echo x > /mnt/skills/public/csv-profile/x")).toContain("Read-only file system");
  });

  it("runs a script of a DeerFlow-style skills checkout given as skills.path", async () => {
    const root = path.join(h.dir, "deerflow-skills");
    mkdirSync(path.join(root, "public", "data-analysis", "scripts"), { recursive: true });
    writeFileSync(path.join(root, "public", "data-analysis", "SKILL.md"), "---\nname: data-analysis\ndescription: Analyse data with a script.\n---\n# Data analysis\n");
    writeFileSync(path.join(root, "public", "data-analysis", "scripts", "analyze.py"), "import sys\nprint('rows', sum(1 for _ in open(sys.argv[1])) - 1)\n");
    const other = await startBwrapGateway("", root);
    try {
      const t = await newThread(other);
      await uploadFiles(other.url, t, [["d.csv", "a\n1\n2\n"]]);
      expect(await bash(other, t, "python3 /mnt/skills/public/data-analysis/scripts/analyze.py /mnt/user-data/uploads/d.csv")).toBe("rows 2");
    } finally {
      await other.close();
    }
  });
});
