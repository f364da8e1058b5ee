// `node --import tsx bench/crash-kills.ts [kills]`: issue 42 measurements with real SIGKILLs (no assertions).
// 1. agent updates: a child updates one agent (description vN + "soul of vN") in a loop and is killed at a random
//    moment; after each kill the two files are read as DeerFlow reads them and a mismatched pair counts as torn.
// 2. atomic-write temp files: a child rewrites memory-like files in a loop and is killed; the temp files left are
//    counted, aged past the sweep's age rule, and counted again after one later write to the same directory.
import { spawn } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, utimesSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { parse as parseYaml } from "yaml";
import { AgentStore } from "../src/config/agent-store.js";

const root = path.resolve(import.meta.dirname, "..");
const kills = Number(process.argv[2] ?? 40);

function killAtRandom(script: string, maxDelayMs: number): Promise<void> {
  const child = spawn(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], { cwd: root, stdio: ["ignore", "pipe", "inherit"] });
  child.stdout.on("data", (d) => String(d).includes("started") && setTimeout(() => child.kill("SIGKILL"), Math.random() * maxDelayMs));
  return new Promise((resolve) => child.on("exit", () => resolve()));
}

async function agentUpdates(): Promise<void> {
  const agents = mkdtempSync(path.join(tmpdir(), "dfgw-kills-agents-"));
  const store = new AgentStore(agents);
  await store.create({ name: "pair", description: "v0", soul: "soul of v0" });
  const script = `
    const { AgentStore } = await import(${JSON.stringify(path.join(root, "src/config/agent-store.ts"))});
    const store = new AgentStore(${JSON.stringify(agents)});
    process.stdout.write("started\\n");
    for (let i = 1; ; i++) { const v = "v" + Date.now() + "-" + i; await store.update("pair", { description: v, soul: "soul of " + v + "\\n" + "x".repeat(32768) }); }`;
  let torn = 0;
  for (let i = 0; i < kills; i++) {
    await killAtRandom(script, 300);
    const dir = path.join(agents, "default", "pair");
    const doc = parseYaml(readFileSync(path.join(dir, "config.yaml"), "utf8")) as { description: string };
    const soul = readFileSync(path.join(dir, "SOUL.md"), "utf8").split("\n")[0];
    if (soul !== `soul of ${doc.description}`) torn++;
  }
  console.log(`agent updates: ${torn} torn versions in ${kills} kills`);
  rmSync(agents, { recursive: true, force: true });
}

async function tempFiles(): Promise<void> {
  const dir = mkdtempSync(path.join(tmpdir(), "dfgw-kills-temps-"));
  const writer = (loop: boolean) => `
    const { atomicWriteFile } = await import(${JSON.stringify(path.join(root, "src/config/atomic-write.ts"))});
    process.stdout.write("started\\n");
    do { for (const f of ["memory.json", "USER.md", "extensions_config.json"]) atomicWriteFile(${JSON.stringify(dir)} + "/" + f, "x".repeat(1 << 20)); } while (${loop});`;
  for (let i = 0; i < kills; i++) await killAtRandom(writer(true), 300);
  const temps = () => readdirSync(dir).filter((n) => n.endsWith(".tmp"));
  const left = temps();
  const hourAgo = new Date(Date.now() - 3600_000);
  for (const n of left) utimesSync(path.join(dir, n), hourAgo, hourAgo);
  await killAtRandom(writer(false), 60_000);
  console.log(`atomic writes: ${left.length} temp files left by ${kills} kills; ${temps().length} after one later write (an hour on)`);
  rmSync(dir, { recursive: true, force: true });
}

await agentUpdates();
await tempFiles();
