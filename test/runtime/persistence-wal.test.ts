import { mkdtempSync, rmSync, statSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { openPersistence, WAL_AUTOCHECKPOINT_PAGES } from "../../src/runtime/persistence/persistence.js";
import { parseAppConfig } from "../../src/config/schema.js";

const homes: string[] = [];
afterEach(() => {
  for (const home of homes.splice(0)) rmSync(home, { recursive: true, force: true });
});

describe("gateway database (SQLite)", () => {
  it("lets the WAL grow past SQLite's 1,000-page default before a checkpoint, and no further than the set interval", async () => {
    const home = mkdtempSync(path.join(os.tmpdir(), "df-wal-"));
    homes.push(home);
    const persistence = await openPersistence(parseAppConfig({ models: [] }), home);
    try {
      const wal = `${persistence.location}-wal`;
      const base = { thread_id: "t", assistant_id: "lead_agent", status: "success" as const, metadata: {}, multitask_strategy: "reject" as const, created_at: "a", updated_at: "a" };
      // Each save is its own commit of ~3 pages (a 6 KB row spills to overflow pages): ~2,400 WAL frames in all.
      for (let i = 0; i < 800; i++) await persistence.runs.save({ ...base, run_id: `r${String(i).padStart(4, "0")}`, kwargs: { input: "x".repeat(6000), config: {} } });
      const pageBytes = 4096 + 24; // a WAL frame: header + page
      const size = statSync(wal).size;
      // With SQLite's default the WAL restarts at ~1,000 frames and its file stays near 4 MB.
      expect(size).toBeGreaterThan(1_500 * pageBytes);
      expect(size).toBeLessThanOrEqual((WAL_AUTOCHECKPOINT_PAGES + 64) * pageBytes);
      expect(await persistence.runs.get("r0799")).toMatchObject({ status: "success" });
    } finally {
      await persistence.close();
    }
  });
});
