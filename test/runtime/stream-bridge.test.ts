import { describe, expect, it } from "vitest";
import { until } from "../support/wait.js";
import { MemoryStreamBridge, PACK_GROUP_MAX, type BridgeItem } from "../../src/runtime/stream/stream-bridge.js";

async function collect(items: AsyncIterable<BridgeItem>): Promise<BridgeItem[]> {
  const out: BridgeItem[] = [];
  for await (const item of items) out.push(item);
  return out;
}

const eventsOf = (items: BridgeItem[]) => items.flatMap((i) => (i.kind === "event" ? [[i.event.event, JSON.parse(i.event.json)]] : [[i.kind]]));

describe("MemoryStreamBridge retention of finished runs", () => {
  it("packs a finished run's events and replays them unchanged, from the start and after a cursor", async () => {
    const bridge = new MemoryStreamBridge();
    bridge.open("r1");
    const ids = [bridge.publish("r1", "metadata", { run_id: "r1" }), bridge.publish("r1", "messages", [{ content: "héllo" }, { n: 1 }]), bridge.publish("r1", "values", { messages: [] })];
    // A subscriber that started before the end and is behind keeps reading across the packing.
    const live = bridge.subscribe("r1")[Symbol.asyncIterator]();
    expect(((await live.next()).value as BridgeItem & { kind: "event" }).event.id).toBe(ids[0]);
    bridge.publishEnd("r1");
    bridge.cleanup("r1", 60_000);
    const held = (bridge as unknown as { runs: Map<string, { events: unknown[]; packed?: { count: number } }> }).runs.get("r1")!;
    // Not while a subscriber still reads it (it would have to unpack the whole log).
    bridge.packPending();
    expect(held.packed).toBeUndefined();
    const rest: BridgeItem[] = [];
    for (let r = await live.next(); !r.done; r = await live.next()) rest.push(r.value);
    expect(eventsOf(rest)).toEqual([["messages", [{ content: "héllo" }, { n: 1 }]], ["values", { messages: [] }], ["end"]]);
    // Held compressed for the rest of the retention, once the last reader has left.
    bridge.packPending();
    expect(held.events).toEqual([]);
    expect(held.packed?.count).toBe(3);

    const all = await collect(bridge.subscribe("r1", { lastEventId: "-1" }));
    expect(eventsOf(all)).toEqual([["metadata", { run_id: "r1" }], ["messages", [{ content: "héllo" }, { n: 1 }]], ["values", { messages: [] }], ["end"]]);
    expect(all.flatMap((i) => (i.kind === "event" ? [i.event.id] : []))).toEqual(ids);
    const after = await collect(bridge.subscribe("r1", { lastEventId: ids[1] }));
    expect(eventsOf(after)).toEqual([["values", { messages: [] }], ["end"]]);
    bridge.close();
  });

  it("packs any text byte-exactly (every code point below 256, astral characters, escapes)", async () => {
    const bridge = new MemoryStreamBridge();
    bridge.open("r4");
    const text = Array.from({ length: 256 }, (_, i) => String.fromCharCode(i)).join("") + "🌍 日本語 \u2028 \"quoted\"";
    bridge.publish("r4", "messages", [{ content: text }]);
    bridge.publishEnd("r4");
    bridge.cleanup("r4", 60_000);
    bridge.packPending();
    expect((bridge as unknown as { runs: Map<string, { packed?: unknown }> }).runs.get("r4")!.packed).toBeDefined();
    expect(eventsOf(await collect(bridge.subscribe("r4")))).toEqual([["messages", [{ content: text }]], ["end"]]);
    // Should anything publish after the end, the log is unpacked, never appended to in its packed form.
    bridge.publish("r4", "custom", { late: true });
    expect(eventsOf(await collect(bridge.subscribe("r4")))).toEqual([["messages", [{ content: text }]], ["custom", { late: true }], ["end"]]);
    bridge.close();
  });

  it("packs a log whose last reader leaves early, and a reader that starts on a packed log reads it whole", async () => {
    const bridge = new MemoryStreamBridge();
    bridge.open("r3");
    bridge.publish("r3", "custom", { i: 0 });
    bridge.publish("r3", "custom", { i: 1 });
    bridge.publishEnd("r3");
    const early = bridge.subscribe("r3")[Symbol.asyncIterator]();
    await early.next();
    bridge.cleanup("r3", 60_000);
    const held = (bridge as unknown as { runs: Map<string, { packed?: unknown }> }).runs.get("r3")!;
    expect(held.packed).toBeUndefined();
    await early.return(undefined);
    bridge.packPending();
    expect(held.packed).toBeDefined();
    expect(eventsOf(await collect(bridge.subscribe("r3")))).toEqual([["custom", { i: 0 }], ["custom", { i: 1 }], ["end"]]);
    bridge.close();
  });

  it("packs runs that finish together in one group, each replaying its own events; a full group at once", async () => {
    const bridge = new MemoryStreamBridge();
    const held = (bridge as unknown as { runs: Map<string, { packed?: { group: object; index: number } }> }).runs;
    const finish = (runId: string, n: number) => {
      bridge.open(runId);
      for (let i = 0; i < n; i++) bridge.publish(runId, "messages", [{ content: `${runId} token ${i}` }]);
      bridge.publishEnd(runId);
      bridge.cleanup(runId, 60_000);
    };
    for (let r = 0; r < PACK_GROUP_MAX - 1; r++) finish(`g${r}`, 1 + (r % 4));
    // Waiting for company: nothing packed yet, and every log replays as it is.
    expect([...held.values()].every((log) => log.packed === undefined)).toBe(true);
    expect(eventsOf(await collect(bridge.subscribe("g2")))).toEqual([["messages", [{ content: "g2 token 0" }]], ["messages", [{ content: "g2 token 1" }]], ["messages", [{ content: "g2 token 2" }]], ["end"]]);
    // The reader left: g2 is queued again, and the group fills up.
    finish(`g${PACK_GROUP_MAX - 1}`, 2);
    const logs = [...held.values()];
    expect(logs.every((log) => log.packed !== undefined)).toBe(true);
    expect(new Set(logs.map((log) => log.packed!.group)).size).toBe(1);
    for (let r = 0; r < PACK_GROUP_MAX; r++) {
      const n = r === PACK_GROUP_MAX - 1 ? 2 : 1 + (r % 4);
      const expected = [...Array.from({ length: n }, (_, i) => ["messages", [{ content: `g${r} token ${i}` }]]), ["end"]];
      expect(eventsOf(await collect(bridge.subscribe(`g${r}`)))).toEqual(expected);
    }
    // A log dropped or read again before its group is packed is left out of it.
    finish("late", 1);
    finish("gone", 1);
    (bridge as unknown as { expire(runId: string): void }).expire("gone");
    const reader = bridge.subscribe("late")[Symbol.asyncIterator]();
    await reader.next();
    bridge.packPending();
    expect(held.get("late")!.packed).toBeUndefined();
    await reader.return(undefined);
    // Packed once PACK_DELAY_MS has passed since the reader let go.
    await until(() => held.get("late")!.packed !== undefined);
    expect(eventsOf(await collect(bridge.subscribe("late")))).toEqual([["messages", [{ content: "late token 0" }]], ["end"]]);
    bridge.close();
  });

  it("still reports a gap for a cursor evicted before the run ended", async () => {
    const bridge = new MemoryStreamBridge(2);
    bridge.open("r2");
    const first = bridge.publish("r2", "custom", { i: 0 });
    bridge.publish("r2", "custom", { i: 1 });
    bridge.publish("r2", "custom", { i: 2 });
    const last = bridge.publish("r2", "custom", { i: 3 });
    bridge.publishEnd("r2");
    bridge.cleanup("r2", 60_000);
    const items = await collect(bridge.subscribe("r2", { lastEventId: first }));
    expect(items).toHaveLength(1);
    expect(items[0]).toMatchObject({ kind: "gap", data: { code: "stream_replay_gap", latest_available_event_id: last } });
    // A cursor inside retention replays the rest.
    expect(eventsOf(await collect(bridge.subscribe("r2", { lastEventId: first.replace(/-0$/, "-2") })))).toEqual([["custom", { i: 3 }], ["end"]]);
    bridge.close();
  });
});
