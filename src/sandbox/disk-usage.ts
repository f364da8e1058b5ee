// How much of a thread's `/mnt/user-data` is used, for the bubblewrap provider's disk quota.
import { lstat, opendir } from "node:fs/promises";
import path from "node:path";

/** Bytes counted per directory (an entry in its parent; what `du` shows for an empty one on ext4). */
const DIR_BYTES = 4096;
/** Most entries walked: a tree larger than this is reported as over any quota (`Infinity`). */
const MAX_ENTRIES = 200_000;

/**
 * Bytes used under `root`: the apparent size of every regular file (sparse files count whole, so `truncate -s`
 * cannot hide usage) plus {@link DIR_BYTES} per directory; symlinks are not followed (counted as their own
 * small size). Stops early, returning a value above `stopAbove`, once the count passes it (quota checks need no
 * exact number past the quota). Entries that vanish during the walk are skipped; a tree of more than
 * {@link MAX_ENTRIES} entries reads as `Infinity`.
 */
export async function diskUsage(root: string, stopAbove = Infinity): Promise<number> {
  let total = 0;
  let entries = 0;
  const stack = [root];
  while (stack.length) {
    const dir = stack.pop()!;
    total += DIR_BYTES;
    let handle;
    try {
      handle = await opendir(dir);
    } catch {
      continue;
    }
    for await (const entry of handle) {
      if (++entries > MAX_ENTRIES) return Infinity;
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) stack.push(full);
      else {
        try {
          total += (await lstat(full)).size;
        } catch {
          // removed mid-walk
        }
      }
      if (total > stopAbove) return total;
    }
  }
  return total;
}
