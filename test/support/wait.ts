// Polling helper for conditions that become true asynchronously (run status, server start).

/**
 * Polls `check` every `everyMs` until it returns (or resolves) true; a throwing or rejected check counts as false.
 * Tests wait for the condition they assert on with this, never for a fixed time.
 * @param ms Give up after this many ms. @throws Error "condition not met in time".
 */
export async function until(check: () => boolean | Promise<boolean>, ms = 5000, everyMs = 25): Promise<void> {
  const end = Date.now() + ms;
  for (;;) {
    if (await Promise.resolve().then(check).catch(() => false)) return;
    if (Date.now() >= end) throw new Error(`condition not met in ${ms} ms: ${String(check).slice(0, 200)}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}
