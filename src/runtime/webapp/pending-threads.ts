// Threads that exist only as upload directories: the DeerFlow web app uploads a new chat's files before the
// thread record exists (upstream uploads.py creates the directories on first upload). The first uploader claims
// the thread id; the claim is a file created with O_EXCL, so two users racing for one id cannot both win.
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";

/** Directory of the claims under the runtime home: one file per thread id, holding the owner's user id. */
export function pendingThreadsDir(home: string): string {
  return path.join(home, "pending-threads");
}

/**
 * The user who claimed `threadId` by uploading to it before it existed, or null when nobody did.
 * @param threadId A validated thread id (a safe path segment).
 */
export function pendingThreadOwner(home: string, threadId: string): string | null {
  try {
    return readFileSync(path.join(pendingThreadsDir(home), threadId), "utf8").trim() || null;
  } catch {
    return null;
  }
}

/**
 * Claims `threadId` for `userId` unless another user already holds it.
 * @returns true when `userId` holds the claim afterwards (new or existing), false when another user holds it.
 */
export function claimPendingThread(home: string, threadId: string, userId: string): boolean {
  const dir = pendingThreadsDir(home);
  mkdirSync(dir, { recursive: true });
  try {
    writeFileSync(path.join(dir, threadId), userId, { flag: "wx" });
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
    return pendingThreadOwner(home, threadId) === userId;
  }
}

/** Drops the claim (thread deleted). Idempotent. */
export function releasePendingThread(home: string, threadId: string): void {
  rmSync(path.join(pendingThreadsDir(home), threadId), { force: true });
}
