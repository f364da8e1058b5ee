// Added cost of authentication per request: the credential resolution itself (API key, session cookie), and the
// end-to-end difference on a protected route between an auth-disabled app and an auth-enabled one.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import type { FastifyInstance } from "fastify";
import { buildApp } from "../src/app.js";
import { resetAppConfig } from "../src/config/app-config.js";
import { summarize, type BenchResult, type BenchSuite } from "./stats.js";

const DIRECT = 20_000;
const HTTP = 5_000;
const WARMUP = 1_000;
const CONFIG = "models:\n  - name: s\n    use: deerflow-gateway:ScriptedChatModel\n    model: s\n";

/** One timed call per sample, in ms. */
async function time(n: number, fn: () => Promise<unknown>): Promise<number[]> {
  for (let i = 0; i < WARMUP; i++) await fn();
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    await fn();
    out.push(performance.now() - t);
  }
  return out;
}

/**
 * 1. Resolution alone (what the auth hook adds): `principalFromApiKey` (SHA-256 + cached record + cached account)
 *    and `principalFromSession` (cached signature check + one uncached session-and-account lookup, a prepared
 *    SQLite statement + token-version compare), 20000 calls
 *    each; and the jose HS256 verification a token pays the first time this process sees it (2000 tokens).
 * 2. `GET /api/models` through `app.inject`, interleaved: auth disabled without credentials (baseline), auth on with
 *    `x-api-key`, auth on with the session cookie; 5000 requests each. The p50 difference is the added cost a client sees.
 */
export async function runAuthBench(): Promise<BenchSuite> {
  const dir = mkdtempSync(path.join(tmpdir(), "dfgw-bench-auth-"));
  writeFileSync(path.join(dir, "config.yaml"), CONFIG);
  const saved = { config: process.env.DEER_FLOW_CONFIG_PATH, home: process.env.DEER_FLOW_HOME };
  process.env.DEER_FLOW_CONFIG_PATH = path.join(dir, "config.yaml");
  process.env.DEER_FLOW_HOME = path.join(dir, "home");
  resetAppConfig();
  let on: FastifyInstance | null = null;
  let off: FastifyInstance | null = null;
  try {
    on = await buildApp({ authDisabled: false, heartbeatMs: 0, home: path.join(dir, "home-on") });
    off = await buildApp({ authDisabled: true, heartbeatMs: 0, home: path.join(dir, "home-off") });
    const init = await on.inject({ method: "POST", url: "/api/v1/auth/initialize", payload: { email: "bench@example.com", password: "tortoise-lantern-42" } });
    const token = init.cookies.find((c) => c.name === "access_token")!.value;
    const csrf = init.cookies.find((c) => c.name === "csrf_token")!.value;
    const keyRes = await on.inject({ method: "POST", url: "/api/v1/auth/api-keys", payload: { name: "bench" }, cookies: { access_token: token, csrf_token: csrf }, headers: { "x-csrf-token": csrf } });
    const key = (keyRes.json() as { key: string }).key;

    const service = on.auth.service;
    const apiKeyDirect = await time(DIRECT, () => service.principalFromApiKey(key));
    const cookieDirect = await time(DIRECT, () => service.principalFromSession(token));
    // First sight of a token (after login, or in another process): the jose signature check. Distinct tokens.
    const fresh: string[] = [];
    for (let i = 0; i < 2_000 + WARMUP; i++) fresh.push(await service.tokens.sign(`user-${i}`, 0, `session-${i}`));
    let next = 0;
    const firstVerify = await time(2_000, () => service.tokens.verify(fresh[next++]));

    const baseline: number[] = [];
    const withKey: number[] = [];
    const withCookie: number[] = [];
    const appOn = on;
    const appOff = off;
    const calls: [number[], () => Promise<unknown>][] = [
      [baseline, () => appOff.inject({ method: "GET", url: "/api/models" })],
      [withKey, () => appOn.inject({ method: "GET", url: "/api/models", headers: { "x-api-key": key } })],
      [withCookie, () => appOn.inject({ method: "GET", url: "/api/models", headers: { cookie: `access_token=${token}` } })],
    ];
    for (const [, fn] of calls) for (let i = 0; i < WARMUP; i++) await fn();
    for (let i = 0; i < HTTP; i++) {
      for (const [samples, fn] of calls) {
        const t = performance.now();
        const res = (await fn()) as { statusCode: number };
        samples.push(performance.now() - t);
        if (res.statusCode !== 200) throw new Error(`bench request failed: ${res.statusCode}`);
      }
    }
    const results: BenchResult[] = [
      { name: "resolve API key (hook work)", samples: apiKeyDirect },
      { name: "resolve session cookie (hook work)", samples: cookieDirect },
      { name: "verify a token not seen before (jose HS256)", samples: firstVerify },
      { name: "GET /api/models, auth disabled (baseline)", samples: baseline },
      { name: "GET /api/models, x-api-key", samples: withKey },
      { name: "GET /api/models, session cookie", samples: withCookie },
    ];
    const us = (ms: number) => `${(ms * 1000).toFixed(1)} us`;
    const b = summarize(baseline);
    const k = summarize(withKey);
    const c = summarize(withCookie);
    const dk = summarize(apiKeyDirect);
    const dc = summarize(cookieDirect);
    return {
      results,
      notes: [
        `API key: resolution p50 ${us(dk.p50)}, p99 ${us(dk.p99)}; end to end +${us(k.p50 - b.p50)} at p50, +${us(k.p99 - b.p99)} at p99 over the baseline`,
        `Session cookie: resolution p50 ${us(dc.p50)}, p99 ${us(dc.p99)}; end to end +${us(c.p50 - b.p50)} at p50, +${us(c.p99 - b.p99)} at p99 over the baseline`,
      ],
    };
  } finally {
    await on?.close();
    await off?.close();
    resetAppConfig();
    for (const [k, v] of [["DEER_FLOW_CONFIG_PATH", saved.config], ["DEER_FLOW_HOME", saved.home]] as const) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
    rmSync(dir, { recursive: true, force: true });
  }
}
