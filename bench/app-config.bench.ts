// Cost of getAppConfig() on the request path (signature check of config.yaml on every call) and how fast an edit
// of config.yaml is served: by the next request, and pushed by the chokidar watcher.
import { mkdtempSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { Writable } from "node:stream";
import { tmpdir } from "node:os";
import path from "node:path";
import { pino } from "pino";
import { getAppConfig, resetAppConfig } from "../src/config/app-config.js";
import { watchAppConfig } from "../src/config/watcher.js";
import { getLogger, setLogger } from "../src/logger.js";
import type { BenchSuite } from "./stats.js";

const CALLS_PER_SAMPLE = 1000;
const SAMPLES = 200;
const EDITS = 50;

/** The shipped config's size class: a handful of models and sections. */
function configText(i: number): string {
  const models = Array.from({ length: 6 }, (_, k) => `  - name: m${k}\n    use: deerflow-gateway:ScriptedChatModel\n    model: v${i}-${k}\n    display_name: Model ${k}\n`).join("");
  return `config_version: 34\nmodels:\n${models}loop_detection:\n  enabled: true\ntitle:\n  enabled: true\n`;
}

/**
 * 1. `getAppConfig()` steady state: 200 samples of 1000 calls on an unchanged file; each sample is the mean cost
 *    of one call (reported in ms; the note gives microseconds).
 * 2. Edit to served: rewrite config.yaml, then call `getAppConfig()` until the new content is served (the next
 *    request after an edit pays this once).
 * 3. Edit to watcher reload: rewrite config.yaml and wait for the watcher's `config reloaded` log line
 *    (includes chokidar's 100 ms write-stability wait).
 */
export async function runAppConfigBench(): Promise<BenchSuite> {
  const dir = mkdtempSync(path.join(tmpdir(), "dfgw-bench-config-"));
  const file = path.join(dir, "config.yaml");
  const savedPath = process.env.DEER_FLOW_CONFIG_PATH;
  process.env.DEER_FLOW_CONFIG_PATH = file;
  resetAppConfig();
  writeFileSync(file, configText(0));
  try {
    getAppConfig();
    const steady: number[] = [];
    for (let s = 0; s < SAMPLES; s++) {
      const start = performance.now();
      for (let i = 0; i < CALLS_PER_SAMPLE; i++) getAppConfig();
      steady.push((performance.now() - start) / CALLS_PER_SAMPLE);
    }

    let bump = 0;
    const edit = (i: number) => {
      writeFileSync(file, configText(i));
      const t = new Date(Date.now() + ++bump * 1000);
      utimesSync(file, t, t);
    };
    const served: number[] = [];
    for (let i = 1; i <= EDITS; i++) {
      const start = performance.now();
      edit(i);
      while (getAppConfig().models[0].model !== `v${i}-0`);
      served.push(performance.now() - start);
    }

    const previous = getLogger();
    let onReload: (() => void) | null = null;
    setLogger(pino({ level: "info" }, new Writable({ write(chunk, _e, cb) { if (String(chunk).includes("config reloaded")) onReload?.(); cb(); } })));
    const watcher = watchAppConfig(file);
    const pushed: number[] = [];
    try {
      await new Promise<void>((resolve) => watcher.on("ready", () => resolve()));
      for (let i = EDITS + 1; i <= EDITS + 10; i++) {
        const reloaded = new Promise<void>((resolve) => (onReload = resolve));
        const start = performance.now();
        edit(i);
        await reloaded;
        pushed.push(performance.now() - start);
      }
    } finally {
      await watcher.close();
      setLogger(previous);
    }
    const p50us = ([...steady].sort((a, b) => a - b)[Math.floor(steady.length / 2)] * 1000).toFixed(1);
    return {
      results: [
        { name: "getAppConfig() per call, unchanged file", samples: steady },
        { name: "edit -> served by the next getAppConfig()", samples: served },
        { name: "edit -> watcher reload logged", samples: pushed },
      ],
      notes: [`getAppConfig() steady state: p50 ${p50us} us per call (goal: under 20 us)`, `config file: ${configText(0).length} bytes`],
    };
  } finally {
    resetAppConfig();
    if (savedPath === undefined) delete process.env.DEER_FLOW_CONFIG_PATH;
    else process.env.DEER_FLOW_CONFIG_PATH = savedPath;
    rmSync(dir, { recursive: true, force: true });
  }
}
