// Tracks one run's workspace changes (DeerFlow workspace_changes/recorder.py): a snapshot of the thread's
// workspace and outputs when the run starts, a second when it ends, and the comparison recorded as the run's
// `workspace_changes` event, which `GET .../runs/{run_id}/workspace-changes` reads back.
import { threadDataPaths } from "../../config/paths.js";
import { changesHeadline, compareSnapshots, hasChanges, type WorkspaceChangeResult } from "./workspace-changes.js";
import { DEFAULT_LIMITS, scanWorkspace, workspaceRoots, type WorkspaceSnapshot } from "./workspace-snapshot.js";

/** Upstream WORKSPACE_CHANGES_EVENT_TYPE / _CATEGORY / _METADATA_KEY. */
export const WORKSPACE_CHANGES_EVENT = "workspace_changes";
export const WORKSPACE_CHANGES_CATEGORY = "workspace";
export const WORKSPACE_CHANGES_KEY = "workspace_changes";

/** Where the comparison is recorded: one stored run event (the run event log). */
export interface WorkspaceEventSink {
  append(runId: string, event: { event_type: string; category: string; content: unknown; metadata: Record<string, unknown> }): void;
}

/** A run's tracker: `finish()` scans again and records the changes. */
export interface RunWorkspaceTracker {
  /**
   * Records the run's changes (none recorded when nothing changed). Never throws. With `mayHaveChanged: false` (the
   * run ended normally and no tool answered during it) nothing is scanned: only tools write the thread's files.
   * @returns the comparison, or null.
   */
  finish(mayHaveChanged?: boolean): Promise<WorkspaceChangeResult | null>;
}

/** Options of {@link trackRunWorkspace}. */
export interface TrackOptions {
  /** The thread was created for this run: it has no files yet, so the first snapshot is empty without a scan. */
  fresh?: boolean;
}

/**
 * Starts tracking the thread's files for `runId`: the first scan starts now (the caller awaits {@link ready} before
 * the agent's tools may write). A thread or user id that is not a safe path segment tracks nothing.
 */
export function trackRunWorkspace(home: string, userId: string, threadId: string, runId: string, sink: WorkspaceEventSink, options: TrackOptions = {}): RunWorkspaceTracker & { ready: Promise<unknown> } {
  let roots: ReturnType<typeof workspaceRoots>;
  try {
    roots = workspaceRoots(threadDataPaths(home, userId, threadId));
  } catch {
    return { ready: Promise.resolve(), finish: async () => null };
  }
  // Two directory walks per run cost several percent of a chat run's CPU: skip the ones that cannot find anything.
  const before: Promise<WorkspaceSnapshot | null> = options.fresh ? Promise.resolve({ files: new Map(), truncated: false }) : scanWorkspace(roots, DEFAULT_LIMITS).catch(() => null);
  return {
    ready: before,
    async finish(mayHaveChanged = true) {
      if (!mayHaveChanged) return null;
      try {
        const start = await before;
        if (!start) return null;
        const result = compareSnapshots(start, await scanWorkspace(roots, DEFAULT_LIMITS), DEFAULT_LIMITS);
        if (!hasChanges(result)) return null;
        sink.append(runId, { event_type: WORKSPACE_CHANGES_EVENT, category: WORKSPACE_CHANGES_CATEGORY, content: changesHeadline(result), metadata: { [WORKSPACE_CHANGES_KEY]: result } });
        return result;
      } catch {
        return null; // the changes panel is a review aid; a failed scan must not fail the run
      }
    },
  };
}
