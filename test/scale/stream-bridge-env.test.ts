import { Redis } from "ioredis";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { parseAppConfig } from "../../src/config/schema.js";
import { DEFAULT_STREAM_BRIDGE_REDIS_URL, streamBridgeUrl } from "../../src/runtime/stream/scale-out.js";
import { postJson, startHarness, type Harness } from "../support/harness.js";
import { serviceUrls } from "../support/services.js";
import { parseSse } from "../support/sse.js";

// With no stream_bridge section, DEER_FLOW_STREAM_BRIDGE_REDIS_URL selects the Redis bridge; a
// redis bridge without a URL falls back to that variable, then REDIS_URL, then redis://localhost:6379/0.
const MODELS = "models:\n  - {name: scripted, use: deerflow-gateway:ScriptedChatModel, model: s}\n";
let h: Harness | undefined;
const saved = process.env.DEER_FLOW_STREAM_BRIDGE_REDIS_URL;
afterEach(async () => {
  await h?.close();
  h = undefined;
  if (saved === undefined) delete process.env.DEER_FLOW_STREAM_BRIDGE_REDIS_URL;
  else process.env.DEER_FLOW_STREAM_BRIDGE_REDIS_URL = saved;
});
const redis = new Redis(serviceUrls().redisUrl, { lazyConnect: true });
afterAll(() => redis.disconnect());

describe("stream bridge selection from the environment (gateway.md §3.8)", () => {
  it("puts run events in Redis when DEER_FLOW_STREAM_BRIDGE_REDIS_URL is set and config.yaml has no stream_bridge", async () => {
    process.env.DEER_FLOW_STREAM_BRIDGE_REDIS_URL = serviceUrls().redisUrl;
    h = await startHarness(MODELS);
    const res = await postJson(`${h.url}/runs/stream`, { input: { messages: [{ role: "user", content: "hello redis" }] } });
    const runId = (res.headers.get("content-location") ?? "").split("/").at(-1)!;
    expect(parseSse(await res.text()).frames.at(-1)!.event).toBe("end");
    expect(await redis.xlen(`deerflow:run:${runId}:events`)).toBeGreaterThan(0);
    await redis.del(`deerflow:run:${runId}:events`, `deerflow:run:${runId}:open`);
  });

  it("keeps the in-memory bridge without the variable, and a configured section wins over it", () => {
    const none = parseAppConfig({});
    expect(streamBridgeUrl(none, {})).toBeNull();
    expect(streamBridgeUrl(none, { DEER_FLOW_STREAM_BRIDGE_REDIS_URL: "redis://env:1/0" })).toBe("redis://env:1/0");
    expect(streamBridgeUrl(parseAppConfig({ stream_bridge: { type: "memory" } }), { DEER_FLOW_STREAM_BRIDGE_REDIS_URL: "redis://env:1/0" })).toBeNull();
  });

  it("resolves a redis bridge's URL: url/redis_url, then DEER_FLOW_STREAM_BRIDGE_REDIS_URL, then REDIS_URL, then localhost", () => {
    const redisSection = (extra: object = {}) => parseAppConfig({ stream_bridge: { type: "redis", ...extra } });
    expect(streamBridgeUrl(redisSection({ redis_url: "redis://cfg:1/0" }), { REDIS_URL: "redis://r:1/0" })).toBe("redis://cfg:1/0");
    expect(streamBridgeUrl(redisSection(), { DEER_FLOW_STREAM_BRIDGE_REDIS_URL: "redis://env:1/0", REDIS_URL: "redis://r:1/0" })).toBe("redis://env:1/0");
    expect(streamBridgeUrl(redisSection(), { REDIS_URL: "redis://r:1/0" })).toBe("redis://r:1/0");
    expect(streamBridgeUrl(redisSection(), {})).toBe(DEFAULT_STREAM_BRIDGE_REDIS_URL);
  });
});
