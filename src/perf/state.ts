// Which speed patches are on in this process: read by the call sites of the call-site mechanisms (streamAgent,
// createDeerflowAgent), written only by src/perf/patches.ts. A leaf, so the SDK loads no patch code to ask.

/** The patches, by the name `DEER_FLOW_PERF_PATCHES` uses (docs/performance-patches.md). */
export const PERF_PATCH_NAMES = ["callback-copy", "runnable-scope", "pregel-stream", "model-call-chain"] as const;
export type PerfPatchName = (typeof PERF_PATCH_NAMES)[number];

const on = new Set<PerfPatchName>();

/** Whether patch `name` is in place in this process (false in any process that did not call installPerfPatches). */
export function perfPatchOn(name: PerfPatchName): boolean {
  return on.has(name);
}

/** The patches that are on, in {@link PERF_PATCH_NAMES} order. */
export function perfPatchesOn(): PerfPatchName[] {
  return PERF_PATCH_NAMES.filter((name) => on.has(name));
}

/** Records that `name` was installed (true) or removed (false); for src/perf/patches.ts only. */
export function markPerfPatch(name: PerfPatchName, installed: boolean): void {
  if (installed) on.add(name);
  else on.delete(name);
}
