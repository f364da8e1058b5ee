// A run's workspace changes (DeerFlow workspace_changes/diff.py + api.py): the files of `/mnt/user-data/{workspace,
// outputs}` a run added, changed or removed, with unified diffs within upstream's limits, in the shape the web app's
// changes badge and diff panel read (frontend core/workspace-changes/types.ts).
import { structuredPatch } from "diff";
import { DEFAULT_LIMITS, type DiffUnavailableReason, type FileSnapshot, type WorkspaceChangeLimits, type WorkspaceSnapshot } from "./workspace-snapshot.js";

/** Upstream WorkspaceChangeStatus. */
export type WorkspaceChangeStatus = "created" | "modified" | "deleted" | "symlink_created";

/** Upstream WorkspaceChangeSummary: file counts by status, changed lines, and whether anything was cut. */
export interface WorkspaceChangeSummary {
  created: number;
  modified: number;
  deleted: number;
  symlink_created: number;
  additions: number;
  deletions: number;
  truncated: boolean;
}

/** One changed file (upstream WorkspaceFileChange); sizes in bytes, `diff` a unified diff (`a<path>` / `b<path>`). */
export interface WorkspaceFileChange {
  path: string;
  root: string;
  status: WorkspaceChangeStatus;
  binary: boolean;
  sensitive: boolean;
  size_before: number | null;
  size_after: number | null;
  sha256_before: string | null;
  sha256_after: string | null;
  diff: string;
  diff_truncated: boolean;
  diff_unavailable_reason: DiffUnavailableReason | null;
  additions: number;
  deletions: number;
  symlink: boolean;
  symlink_target_before: string | null;
  symlink_target_after: string | null;
}

/** The recorded payload (upstream WorkspaceChangeResult.to_dict). */
export interface WorkspaceChangeResult {
  version: 1;
  summary: WorkspaceChangeSummary;
  files: WorkspaceFileChange[];
  limits: WorkspaceChangeLimits;
}

/** The route's answer (upstream get_workspace_changes_response): the payload plus `available`. */
export type WorkspaceChangesResponse = Omit<WorkspaceChangeResult, "limits" | "version"> & { available: boolean; version: number; limits: Partial<WorkspaceChangeLimits> };

const EMPTY_SUMMARY: WorkspaceChangeSummary = { created: 0, modified: 0, deleted: 0, symlink_created: 0, additions: 0, deletions: 0, truncated: false };

const sameFile = (a: FileSnapshot, b: FileSnapshot) =>
  a.sha256 !== null && b.sha256 !== null ? a.sha256 === b.sha256 : a.size === b.size && a.mtimeMs === b.mtimeMs && a.symlinkTarget === b.symlinkTarget;

function statusOf(before: FileSnapshot | undefined, after: FileSnapshot | undefined): WorkspaceChangeStatus {
  if (!before) return after?.symlinkTarget !== null ? "symlink_created" : "created";
  return after ? "modified" : "deleted";
}

/** The reason a pair's diff is not shown, in upstream's order of preference. */
function unavailable(files: (FileSnapshot | undefined)[]): DiffUnavailableReason | null {
  for (const reason of ["symlink", "sensitive", "binary", "large"] as const) if (files.some((f) => f?.reason === reason)) return reason;
  return null;
}

/** A hunk range as unified diffs write it: `start` for one line, `start-1,0` for none, else `start,count`. */
const range = (start: number, count: number) => (count === 1 ? `${start}` : count === 0 ? `${Math.max(0, start - 1)},0` : `${start},${count}`);

/** The unified diff of a text pair with its added and removed line counts (headers not counted). */
function unifiedDiff(virtualPath: string, before: string, after: string): { diff: string; additions: number; deletions: number } {
  const patch = structuredPatch(`a${virtualPath}`, `b${virtualPath}`, before, after, undefined, undefined, { context: 3 });
  const lines = [`--- a${virtualPath}`, `+++ b${virtualPath}`];
  let additions = 0;
  let deletions = 0;
  for (const hunk of patch.hunks) {
    lines.push(`@@ -${range(hunk.oldStart, hunk.oldLines)} +${range(hunk.newStart, hunk.newLines)} @@`);
    for (const line of hunk.lines) {
      if (line.startsWith("\\")) continue; // "\ No newline at end of file": upstream diffs split lines, so none
      if (line.startsWith("+")) additions++;
      else if (line.startsWith("-")) deletions++;
      lines.push(line);
    }
  }
  return { diff: lines.join("\n"), additions, deletions };
}

/**
 * Compares two snapshots (upstream compare_snapshots): every changed path counts in the summary, the first
 * `max_files` are listed, and diffs stop once `max_total_diff_bytes` of them were produced (`truncated`).
 */
export function compareSnapshots(before: WorkspaceSnapshot, after: WorkspaceSnapshot, limits: WorkspaceChangeLimits = DEFAULT_LIMITS): WorkspaceChangeResult {
  const summary = { ...EMPTY_SUMMARY, truncated: before.truncated || after.truncated };
  const files: WorkspaceFileChange[] = [];
  let diffBytes = 0;
  for (const p of [...new Set([...before.files.keys(), ...after.files.keys()])].sort()) {
    const a = before.files.get(p);
    const b = after.files.get(p);
    if (a && b && sameFile(a, b)) continue;
    const status = statusOf(a, b);
    summary[status]++;
    const reason = unavailable([a, b]);
    let change = { diff: "", additions: 0, deletions: 0, truncated: false, reason };
    if (!reason && (!a || a.text !== null) && (!b || b.text !== null)) {
      const d = unifiedDiff(p, a?.text ?? "", b?.text ?? "");
      const bytes = Buffer.byteLength(d.diff);
      change = bytes > limits.max_total_diff_bytes - diffBytes ? { ...d, diff: "", truncated: true, reason: "truncated" } : { ...d, truncated: false, reason: null };
      if (!change.truncated) diffBytes += bytes;
    }
    if (change.truncated || reason === "large") summary.truncated = true;
    summary.additions += change.additions;
    summary.deletions += change.deletions;
    if (files.length >= limits.max_files) {
      summary.truncated = true;
      continue;
    }
    const sample = (b ?? a)!;
    files.push({
      path: p, root: sample.root, status, binary: sample.binary, sensitive: sample.sensitive, size_before: a?.size ?? null, size_after: b?.size ?? null,
      sha256_before: a?.sha256 ?? null, sha256_after: b?.sha256 ?? null, diff: change.diff, diff_truncated: change.truncated, diff_unavailable_reason: change.reason,
      additions: change.additions, deletions: change.deletions, symlink: sample.symlinkTarget !== null, symlink_target_before: a?.symlinkTarget ?? null, symlink_target_after: b?.symlinkTarget ?? null,
    });
  }
  return { version: 1, summary, files, limits };
}

/** Whether a comparison found anything (upstream has_changes). */
export const hasChanges = (r: WorkspaceChangeResult) => Object.entries(r.summary).some(([k, v]) => k !== "truncated" && v !== 0);

/** The event content upstream records beside the payload: `N file(s) changed +A -D`. */
export function changesHeadline(r: WorkspaceChangeResult): string {
  const n = r.summary.created + r.summary.modified + r.summary.deleted + r.summary.symlink_created;
  return `${n} file${n === 1 ? "" : "s"} changed +${r.summary.additions} -${r.summary.deletions}`;
}

/**
 * The route's answer from a recorded payload (or none: `available: false`). `includeFiles: false` lists no files;
 * `includeDiff: false` blanks each file's diff.
 */
export function workspaceChangesResponse(payload: WorkspaceChangeResult | null, includeFiles = true, includeDiff = true): WorkspaceChangesResponse {
  if (!payload) return { available: false, version: 1, summary: { ...EMPTY_SUMMARY }, files: [], limits: {} };
  const files = !includeFiles ? [] : includeDiff ? payload.files : payload.files.map((f) => ({ ...f, diff: "" }));
  return { ...payload, available: true, summary: payload.summary ?? { ...EMPTY_SUMMARY }, files };
}
