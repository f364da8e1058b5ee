// Polling helper for conditions that become true asynchronously (run status, server start).

/**
 * Polls `check` every `everyMs` until it resolves true; a rejected check counts as false.
 * @param ms Give up after this many ms. @throws Error "condition not met in time".
 */
export async function until(check: () => Promise<boolean>, ms = 5000, everyMs = 25): Promise<void> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await check().catch(() => false)) return;
    await new Promise((r) => setTimeout(r, everyMs));
  }
  throw new Error("condition not met in time");
}
