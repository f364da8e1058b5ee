// What a crash mid-write leaves on disk, and the sweep at start-up that removes it: agent staging directories,
// agent directories a pre-atomic create left without config.yaml, temp files of atomic writes, and upload parts.
import { lstatSync, readdirSync, rmSync, statSync } from "node:fs";
import path from "node:path";
import { strayVersionEntries } from "./agent-version.js";
import { ATOMIC_TEMP, LEFTOVER_MIN_AGE_MS } from "./atomic-write.js";

/** A staged upload or sandbox write (`.upload-<uuid>.part`, `.write-<uuid>.part`). */
const PART_FILE = /^\.(upload|write)-.*\.part$/;
/** Staging directory of an agent create (`.staging-<name>-<hex>`). */
const AGENT_STAGING = /^\.staging-[a-z0-9-]+-[0-9a-f]{12}$/;

/** Leftovers younger than this are left alone, in ms (see atomic-write.ts). */
export { LEFTOVER_MIN_AGE_MS };

/** What {@link sweepLeftovers} removed (counts). */
export interface SweepReport {
  agentStaging: number;
  agentDirs: number;
  /** Agent versions a killed update left (not the current one) and half-swapped version pointers. */
  agentVersions: number;
  tempFiles: number;
  uploadParts: number;
  bytes: number;
}

const entries = (dir: string): string[] => {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
};
const isDir = (p: string) => {
  try {
    return lstatSync(p).isDirectory();
  } catch {
    return false;
  }
};

/**
 * Whether an agent directory is what a crash during a pre-atomic create left behind: no `config.yaml`, and nothing
 * in it but temp files of atomic writes (or nothing at all). Memory data (`memory.json`) or a SOUL.md is kept.
 */
export function isLeftoverAgentDir(dir: string): boolean {
  const names = entries(dir);
  return !names.includes("config.yaml") && names.every((n) => ATOMIC_TEMP.test(n));
}

/**
 * Removes, under the agents directory (`<agents>/<user>/<name>/`) and the runtime home
 * (`<home>/users/<user>/threads/<thread>/user-data/uploads/`), what crashed writers left and is older than
 * `minAgeMs`: agent staging directories, leftover agent directories ({@link isLeftoverAgentDir}), agent versions no
 * pointer names (`<name>/.versions/<hex>`, see agent-version.ts), atomic-write
 * temp files, and `.upload-*.part` / `.write-*.part` files. Never throws; unreadable entries are skipped.
 * @param now Current time in ms since the epoch (tests pass a later time instead of ageing files).
 */
export function sweepLeftovers(agentsDir: string, home: string, minAgeMs = LEFTOVER_MIN_AGE_MS, now = Date.now()): SweepReport {
  const report: SweepReport = { agentStaging: 0, agentDirs: 0, agentVersions: 0, tempFiles: 0, uploadParts: 0, bytes: 0 };
  const old = (p: string) => {
    try {
      return now - lstatSync(p).mtimeMs >= minAgeMs;
    } catch {
      return false;
    }
  };
  const remove = (p: string, kind: keyof Omit<SweepReport, "bytes">) => {
    try {
      const info = lstatSync(p);
      if (info.isFile()) report.bytes += info.size;
      rmSync(p, { recursive: true, force: true });
      report[kind]++;
    } catch {
      // Gone already, or not ours to remove: leave it.
    }
  };
  for (const name of entries(agentsDir)) if (ATOMIC_TEMP.test(name) && old(path.join(agentsDir, name))) remove(path.join(agentsDir, name), "tempFiles");
  for (const user of entries(agentsDir)) {
    const userRoot = path.join(agentsDir, user);
    if (!isDir(userRoot)) continue;
    for (const name of entries(userRoot)) {
      const full = path.join(userRoot, name);
      if (!isDir(full)) continue;
      if (AGENT_STAGING.test(name)) {
        if (old(full)) remove(full, "agentStaging");
        continue;
      }
      for (const inner of entries(full)) if (ATOMIC_TEMP.test(inner) && old(path.join(full, inner))) remove(path.join(full, inner), "tempFiles");
      for (const stray of strayVersionEntries(full)) if (old(stray)) remove(stray, "agentVersions");
      if (isLeftoverAgentDir(full) && old(full)) remove(full, "agentDirs");
    }
  }
  const usersRoot = path.join(home, "users");
  for (const user of entries(usersRoot)) {
    const threadsRoot = path.join(usersRoot, user, "threads");
    for (const thread of entries(threadsRoot)) {
      const dataRoot = path.join(threadsRoot, thread, "user-data");
      for (const area of ["uploads", "workspace", "outputs"]) {
        const dir = path.join(dataRoot, area);
        for (const name of entries(dir)) {
          const full = path.join(dir, name);
          if (PART_FILE.test(name) && old(full)) {
            try {
              if (!statSync(full).isFile()) continue;
            } catch {
              continue;
            }
            remove(full, "uploadParts");
          }
        }
      }
    }
  }
  return report;
}
