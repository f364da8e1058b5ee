// Host bash inside bubblewrap (Debian package `bubblewrap`): new user/pid/net/ipc/uts/cgroup namespaces, a root
// file system holding only read-only system directories, the thread's `user-data` as /mnt/user-data, an empty
// environment and no network. Used when `bwrap` is installed and works on this machine; otherwise host bash runs
// unconfined (see the startup warning and docs/sandbox.md).
import { spawnSync } from "node:child_process";
import { existsSync, lstatSync, readlinkSync } from "node:fs";
import { VIRTUAL_ROOT } from "./paths.js";

/** Where `bwrap` is looked for, in order (absolute paths only: the gateway's PATH is not trusted here). */
const BWRAP_CANDIDATES = ["/usr/bin/bwrap", "/usr/local/bin/bwrap", "/bin/bwrap"];
/** Top-level system directories: bound read-only, or re-created as the same symlink on merged-/usr systems. */
const SYSTEM_DIRS = ["/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"];
/** Files of /etc that programs need to start (dynamic linker cache, TLS roots, time zone, alternatives). */
const ETC_FILES = ["/etc/alternatives", "/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/ssl", "/etc/ca-certificates", "/etc/localtime"];
/**
 * Host-wide /proc files programs commonly read (CPU count, memory, load): shown read-only in the sandbox's
 * otherwise empty /proc. Nothing per-process: those would include mountinfo.
 */
const PROC_FILES = ["/proc/cpuinfo", "/proc/meminfo", "/proc/loadavg", "/proc/uptime", "/proc/version"];
/** The environment inside the sandbox: nothing of the gateway's. */
const SANDBOX_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/** Files of /etc that name resolution needs, bound only with `network: full`. */
const NET_ETC_FILES = ["/etc/resolv.conf", "/etc/hosts", "/etc/nsswitch.conf", "/etc/host.conf", "/etc/gai.conf"];

/** Extras of {@link bubblewrapArgs} for the bubblewrap provider; host bash passes none. */
export interface BubblewrapOptions {
  /** `full` shares the host's network namespace; default `none` (a new, empty one). */
  network?: "none" | "full";
  /** More binds after `/mnt/user-data`, in order (a parent before what is mounted inside it). */
  mounts?: readonly { host: string; virtual: string; readOnly: boolean }[];
  /**
   * Size in bytes of /tmp and /dev/shm (each a tmpfs); when set, the sandbox's root and the rest of /dev are also
   * read-only. Unset (host bash): an unbounded /tmp, as before.
   */
  tmpBytes?: number;
  /** Positional arguments of the shell (`$0`, `$1`, ...) after the `-c` script. */
  argv?: readonly string[];
}

/** Whether host bash can be isolated on this machine, and how. */
export interface BubblewrapStatus {
  available: boolean;
  /** Absolute path of `bwrap` when available. */
  path?: string;
  /** Why it is not available (not installed, or the probe failed: e.g. namespaces not permitted). */
  reason?: string;
}

let cached: BubblewrapStatus | undefined;

/**
 * The argv (after `bwrap`) that runs `command` with `/bin/bash -c` in a fresh sandbox whose only writable mount is
 * `hostRoot` (the thread's real `user-data` directory) at `/mnt/user-data`; the working directory is
 * `/mnt/user-data/workspace`, `HOME` too. `--die-with-parent` ends the sandbox with the gateway, `--new-session`
 * keeps it off the gateway's terminal. /proc is not a procfs (it would show the host path in mountinfo): see below. The gateway's environment never enters: `bwrap` itself is started with an
 * empty one (its `/proc/<pid>/environ` is what a shell would read through `$PPID`), and `--clearenv` clears the
 * child's.
 */
export function bubblewrapArgs(hostRoot: string, command: string, options: BubblewrapOptions = {}): string[] {
  const args = ["--unshare-all", "--die-with-parent", "--new-session", "--clearenv", "--hostname", "sandbox"];
  // `full` network: the host's network namespace, and the files name resolution reads.
  if (options.network === "full") args.push("--share-net", ...NET_ETC_FILES.flatMap((f) => ["--ro-bind-try", f, f]));
  for (const dir of SYSTEM_DIRS) {
    let info;
    try {
      info = lstatSync(dir);
    } catch {
      continue;
    }
    if (info.isSymbolicLink()) args.push("--symlink", readlinkSync(dir), dir);
    else if (info.isDirectory()) args.push("--ro-bind", dir, dir);
  }
  for (const file of ETC_FILES) args.push("--ro-bind-try", file, file);
  // No procfs: /proc/<pid>/mountinfo (and mounts, mountstats) would show the bind's source, the thread's host path
  // (runtime home, user id), and a bind mount cannot hide it. /proc is an empty tmpfs with a few global files;
  // what needs per-process /proc (/dev/fd, /dev/stdin, `<(...)`, ps) does not work in the sandbox.
  args.push("--tmpfs", "/proc");
  for (const file of PROC_FILES) args.push("--ro-bind-try", file, file);
  if (options.tmpBytes === undefined) args.push("--dev", "/dev", "--tmpfs", "/tmp");
  else {
    // Bounded scratch space (tmpfs is memory): /tmp and /dev/shm of the given size, the rest of /dev read-only.
    const size = String(options.tmpBytes);
    args.push("--dev", "/dev", "--size", size, "--tmpfs", "/dev/shm", "--remount-ro", "/dev", "--size", size, "--tmpfs", "/tmp");
  }
  args.push("--bind", hostRoot, VIRTUAL_ROOT);
  for (const m of options.mounts ?? []) args.push(m.readOnly ? "--ro-bind" : "--bind", m.host, m.virtual);
  // The new root is a tmpfs bwrap builds the tree in: read-only once built, so nothing outside the binds is written.
  if (options.tmpBytes !== undefined) args.push("--remount-ro", "/");
  args.push("--chdir", `${VIRTUAL_ROOT}/workspace`);
  args.push("--setenv", "PATH", SANDBOX_PATH, "--setenv", "HOME", `${VIRTUAL_ROOT}/workspace`, "--setenv", "LANG", "C.UTF-8", "--setenv", "TERM", "dumb");
  args.push("--", "/bin/bash", "-c", command, ...(options.argv ?? []));
  return args;
}

/**
 * Finds `bwrap` and checks once per process that it can build a sandbox here (it needs namespaces, which some
 * containers forbid): runs `true` inside the same kind of sandbox host bash gets. The result is cached.
 * @param refresh Probe again instead of using the cached result (tests).
 */
export function bubblewrapStatus(refresh = false): BubblewrapStatus {
  if (cached && !refresh) return cached;
  const path = BWRAP_CANDIDATES.find((p) => existsSync(p));
  if (!path) return (cached = { available: false, reason: "bwrap is not installed (Debian: apt-get install bubblewrap)" });
  const probe = spawnSync(path, bubblewrapArgs("/tmp", "true").map((a) => (a === `${VIRTUAL_ROOT}/workspace` ? VIRTUAL_ROOT : a)), {
    env: {},
    timeout: 10_000,
    encoding: "utf8",
  });
  if (probe.status === 0) return (cached = { available: true, path });
  const why = (probe.stderr || probe.error?.message || `exit status ${probe.status}`).trim().split("\n")[0];
  return (cached = { available: false, path, reason: `bwrap cannot create a sandbox here: ${why}` });
}
