// Scheduler firing delay: N one-shot tasks due at the same instant, one gateway (SQLite, the offline scripted model),
// the real clock. For each task: the agent run's `created_at` (the run record, written when the run service admits
// it) minus the task's due time. Prints p50/p90/p99/max and the wall time until every run was created.
//   npx tsx bench/scheduler-firing.ts [tasks=1000] [max_concurrent_runs=32] [poll_interval_seconds=5]
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { buildApp } from "../src/app.js";
import { resetAppConfig } from "../src/config/app-config.js";
import { formatTable } from "./stats.js";

const [tasks = 1000, maxConcurrent = 32, poll = 5] = process.argv.slice(2).map(Number);
const dir = mkdtempSync(path.join(tmpdir(), "dfgw-sched-bench-"));
writeFileSync(path.join(dir, "config.yaml"), `models:
  - name: s
    use: deerflow-gateway:ScriptedChatModel
    model: s
scheduler:
  enabled: true
  poll_interval_seconds: ${poll}
  max_concurrent_runs: ${maxConcurrent}
  min_once_delay_seconds: 1
  max_tasks_per_user: 10000
limits:
  max_concurrent_runs_per_user: 1000
`);
process.env.DEER_FLOW_CONFIG_PATH = path.join(dir, "config.yaml");
process.env.DEER_FLOW_HOME = path.join(dir, "home");
process.env.DEER_FLOW_AGENTS_DIR = path.join(dir, "agents");
resetAppConfig();
const app = await buildApp({ authDisabled: true, heartbeatMs: 0, logger: undefined });
try {
  // Due far enough ahead that every create has landed; the same instant for all.
  const due = new Date(Math.ceil((Date.now() + 20_000) / 1000) * 1000);
  const ids: string[] = [];
  for (let i = 0; i < tasks; i++) {
    const res = await app.inject({ method: "POST", url: "/api/scheduled-tasks", payload: { title: `t${i}`, prompt: `task ${i}`, schedule_type: "once", schedule_spec: { run_at: due.toISOString() }, timezone: "UTC" } });
    if (res.statusCode !== 200) throw new Error(`create ${i}: ${res.statusCode} ${res.body}`);
    ids.push(res.json().id);
  }
  console.log(`${tasks} tasks due at ${due.toISOString()} (${((due.getTime() - Date.now()) / 1000).toFixed(1)} s from now)`);
  const store = app.deerflow.persistence.scheduledTasks;
  const delays: number[] = [];
  for (const pending = new Set(ids); pending.size; ) {
    await new Promise((r) => setTimeout(r, 500));
    for (const id of [...pending]) {
      const [run] = await store.listRuns(id, 1, 0);
      if (!run?.run_id) continue;
      const record = await app.deerflow.persistence.runs.get(run.run_id);
      if (!record) continue;
      delays.push(Date.parse(record.created_at) - due.getTime());
      pending.delete(id);
    }
  }
  console.log(formatTable([{ name: `firing delay, ${tasks} tasks due together (max_concurrent_runs ${maxConcurrent}, poll ${poll} s)`, samples: delays }]));
  console.log(`last run created ${(Math.max(...delays) / 1000).toFixed(2)} s after the due time`);
} finally {
  await app.close();
  rmSync(dir, { recursive: true, force: true });
}
