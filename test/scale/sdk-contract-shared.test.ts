import pg from "pg";
import { afterAll, expect } from "vitest";
import { setContractBackend } from "../support/contract-backend.js";
import { createTestDatabase, sharedSections, testPrefix } from "../support/services.js";

// The whole SDK contract suite (test/e2e/sdk-contract.test.ts) again, on the scale-out stores: threads, runs and
// checkpoints in PostgreSQL, run events, admission and cancels through Redis.
const db = await createTestDatabase();
afterAll(async () => {
  // The suite really ran on PostgreSQL: its threads, runs and checkpoints are there.
  const client = new pg.Client({ connectionString: db.url });
  await client.connect();
  const count = async (table: string) => Number((await client.query(`SELECT count(*) AS n FROM ${table}`)).rows[0].n);
  const counts = { threads: await count("threads"), runs: await count("runs"), checkpoints: await count("checkpoints") };
  await client.end();
  await db.drop();
  expect(counts.threads).toBeGreaterThan(3);
  expect(counts.runs).toBeGreaterThan(10);
  expect(counts.checkpoints).toBeGreaterThan(10);
});
setContractBackend(sharedSections(db.url, testPrefix(), 10_000));
await import("../e2e/sdk-contract.test.js");
