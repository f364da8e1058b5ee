// The fence around every speed patch of a dependency's internals. Each patch names the package and the exact version
// it was written against; the server installs them (never an SDK import), each one only over that version and the
// shape it checks, and logs which are on. Results are unchanged with or without any of them (test/perf/).
import { createRequire } from "node:module";
import { installLinearCallbackCopy, uninstallLinearCallbackCopy } from "./callback-copy.js";
import { pregelStreamShapeOk } from "./pregel-stream.js";
import { installLeanRunnableScope, uninstallLeanRunnableScope } from "./runnable-scope.js";
import { markPerfPatch, PERF_PATCH_NAMES, perfPatchOn, type PerfPatchName } from "./state.js";

export { PERF_PATCH_NAMES, perfPatchOn, perfPatchesOn, type PerfPatchName } from "./state.js";

/** One patch: what it reaches into, the version it was written for, and how it is put in place. */
export interface PerfPatch {
  name: PerfPatchName;
  /** The npm package whose internals it replaces or calls. */
  package: string;
  /** The exact installed version it was written and measured against; any other version: it stands down. */
  version: string;
  /** Checks the shape it relies on and puts it in place; false when the shape is not there (nothing changed). */
  install(): boolean;
  /** Puts the library's own code back (tests). */
  uninstall(): void;
}

/** What {@link installPerfPatches} did with each patch: `on`, `off` (switched off) or why it stood down. */
export type PerfPatchReport = Record<PerfPatchName, string>;

const noop = (): void => undefined;

/** Every patch, in the order they are installed. */
export const PERF_PATCHES: readonly PerfPatch[] = [
  { name: "callback-copy", package: "@langchain/core", version: "1.4.0", install: installLinearCallbackCopy, uninstall: uninstallLinearCallbackCopy },
  { name: "runnable-scope", package: "@langchain/core", version: "1.4.0", install: installLeanRunnableScope, uninstall: uninstallLeanRunnableScope },
  // Call-site mechanisms: `streamAgent` and `createDeerflowAgent` ask perfPatchOn() and take the public path otherwise.
  { name: "pregel-stream", package: "@langchain/langgraph", version: "1.7.3", install: pregelStreamShapeOk, uninstall: noop },
  // The fused chain re-implements langchain's per-layer wrapModelCall rules, so it is pinned to the langchain that has them.
  { name: "model-call-chain", package: "langchain", version: "1.5.14", install: () => true, uninstall: noop },
];

/** The installed version of `pkg` as this module resolves it (its package.json), or null when it cannot be read. */
export function installedVersion(pkg: string): string | null {
  try {
    const require = createRequire(import.meta.url);
    return (require(`${pkg}/package.json`) as { version?: unknown }).version as string;
  } catch {
    return null;
  }
}

/**
 * Installs the patches in `enabled` (default: all) and reports each: `on`, `off` (not in `enabled`), or
 * `stood down: ...` when the installed package is not the pinned version or its shape is not the expected one.
 * Only the server calls this (src/server.ts), and the test setup so the suite runs what the server runs; importing
 * the SDK entry (src/index.ts) installs nothing. Idempotent for patches already on.
 *
 * @param enabled The patch names to install (from `DEER_FLOW_PERF_PATCHES`, see src/config/server-env.ts).
 * @param versionOf Reads a package's installed version (tests pass another to simulate an upgrade).
 * @returns One entry per patch, in {@link PERF_PATCH_NAMES} order.
 */
export function installPerfPatches(enabled: ReadonlySet<PerfPatchName> = new Set(PERF_PATCH_NAMES), versionOf: (pkg: string) => string | null = installedVersion): PerfPatchReport {
  const report = {} as PerfPatchReport;
  for (const patch of PERF_PATCHES) {
    if (!enabled.has(patch.name)) {
      report[patch.name] = "off";
      continue;
    }
    if (perfPatchOn(patch.name)) {
      report[patch.name] = "on";
      continue;
    }
    const version = versionOf(patch.package);
    if (version !== patch.version) {
      report[patch.name] = `stood down: ${patch.package} ${version ?? "unreadable"} is not ${patch.version}`;
      continue;
    }
    if (!patch.install()) {
      report[patch.name] = `stood down: ${patch.package} ${version} no longer has the code it replaces`;
      continue;
    }
    markPerfPatch(patch.name, true);
    report[patch.name] = "on";
  }
  return report;
}

/** Removes every installed patch (tests). */
export function uninstallPerfPatches(): void {
  for (const patch of PERF_PATCHES) {
    if (!perfPatchOn(patch.name)) continue;
    patch.uninstall();
    markPerfPatch(patch.name, false);
  }
}

/** Removes one installed patch (tests comparing patched with unpatched). */
export function uninstallPerfPatch(name: PerfPatchName): void {
  if (!perfPatchOn(name)) return;
  PERF_PATCHES.find((p) => p.name === name)!.uninstall();
  markPerfPatch(name, false);
}
