// The PostgreSQL and Redis the scale-out tests share (started by vitest.global-setup.ts or CI): a fresh database
// and a fresh key prefix per test file, so files never see each other's threads, runs or streams.
import { randomUUID } from "node:crypto";
import pg from "pg";

/** The service URLs; throws (never skips) when global setup did not provide them. */
export function serviceUrls(): { pgUrl: string; redisUrl: string } {
  const pgUrl = process.env.DEERFLOW_TEST_PG_URL;
  const redisUrl = process.env.DEERFLOW_TEST_REDIS_URL;
  if (!pgUrl || !redisUrl) throw new Error("DEERFLOW_TEST_PG_URL / DEERFLOW_TEST_REDIS_URL are not set: run `npm test` (global setup starts the services)");
  return { pgUrl, redisUrl };
}

/** A new empty database on the test server; `drop()` removes it (closing leftover connections). */
export async function createTestDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  const { pgUrl } = serviceUrls();
  const name = `dftest_${randomUUID().replace(/-/g, "")}`;
  const admin = new pg.Client({ connectionString: pgUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(pgUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      const c = new pg.Client({ connectionString: pgUrl });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await c.end();
    },
  };
}

/** config.yaml sections that put a gateway on the shared database and Redis. */
export function sharedSections(dbUrl: string, prefix: string, leaseMs = 1_500): string {
  const { redisUrl } = serviceUrls();
  return `database:
  backend: postgres
  url: ${dbUrl}
stream_bridge:
  type: redis
  url: ${redisUrl}
  key_prefix: "${prefix}"
  lease_ms: ${leaseMs}
`;
}

/** A key prefix no other test uses. */
export const testPrefix = () => `dftest:${randomUUID().slice(0, 8)}:`;
