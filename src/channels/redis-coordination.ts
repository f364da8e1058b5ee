// The dedupe store and the poll lease on Redis, for gateway processes on several hosts (`stream_bridge.type: redis`):
// an event id is recorded with SET NX PX (the first process to record it handles it), a lease is a key whose value
// names its holder, renewed by the holder only (compare-and-set in a Lua script) and free once it expires.
import type { Redis } from "ioredis";
import type { DedupeStore, LeaseStore } from "./store.js";

const RENEW = `local v = redis.call('GET', KEYS[1])
if v == false then return redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2]) and 1 or 0 end
if v == ARGV[1] then redis.call('PEXPIRE', KEYS[1], ARGV[2]) return 1 end
return 0`;
const RELEASE = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`;

/** Dedupe ids and leases under `deerflow:channels:` in one Redis database. */
export class RedisChannelCoordination implements DedupeStore, LeaseStore {
  constructor(private readonly redis: Redis, private readonly prefix = "deerflow:channels:") {}

  async tryRecord(key: string, ttlMs: number): Promise<boolean> {
    return (await this.redis.set(`${this.prefix}seen:${key}`, "1", "PX", ttlMs, "NX")) === "OK";
  }

  async release(key: string): Promise<void> {
    await this.redis.del(`${this.prefix}seen:${key}`);
  }

  async acquireLease(name: string, holder: string, ttlMs: number): Promise<boolean> {
    return (await this.redis.eval(RENEW, 1, `${this.prefix}lease:${name}`, holder, String(ttlMs))) === 1;
  }

  async releaseLease(name: string, holder: string): Promise<void> {
    await this.redis.eval(RELEASE, 1, `${this.prefix}lease:${name}`, holder);
  }

  async close(): Promise<void> {
    this.redis.disconnect();
  }
}
