// Shared helpers of the benchmarks: timing samples, percentiles and the markdown table every benchmark prints.

/** One row of a benchmark table: a name and its timing samples in milliseconds. */
export interface BenchResult {
  name: string;
  samples: number[];
}

/** What a benchmark suite returns: its table rows, free-text notes printed under the table, and extra markdown. */
export interface BenchSuite {
  results: BenchResult[];
  notes: string[];
  /** A further markdown block (e.g. a second table) printed after the notes. */
  extra?: string;
}

/** Summary statistics of a sample set, in milliseconds. */
export interface Summary {
  n: number;
  p50: number;
  p90: number;
  p99: number;
  mean: number;
}

/**
 * The `p`-th percentile (0..100) of `sorted` (ascending), linearly interpolated between the closest ranks (the
 * same definition as numpy's default), so p50 of an even-sized set is the mean of the two middle values.
 * @throws RangeError for an empty sample set or `p` outside 0..100.
 */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) throw new RangeError("percentile of an empty sample set");
  if (!(p >= 0 && p <= 100)) throw new RangeError(`percentile must be within 0..100, got ${p}`);
  const rank = (p / 100) * (sorted.length - 1);
  const lo = Math.floor(rank);
  const hi = Math.ceil(rank);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (rank - lo);
}

/** n, p50, p90, p99 and mean of `samples` (any order; the input is not modified). */
export function summarize(samples: readonly number[]): Summary {
  const sorted = [...samples].sort((a, b) => a - b);
  const mean = sorted.reduce((sum, x) => sum + x, 0) / sorted.length;
  return { n: sorted.length, p50: percentile(sorted, 50), p90: percentile(sorted, 90), p99: percentile(sorted, 99), mean };
}

/**
 * Runs `fn` `warmup` times untimed, then `iterations` times timed with `performance.now()`; `fn` gets the
 * iteration index (warm-up iterations are numbered after the timed ones, so ids never collide).
 * @returns the timed samples in milliseconds.
 */
export async function measure(iterations: number, warmup: number, fn: (i: number) => Promise<unknown>): Promise<number[]> {
  for (let i = 0; i < warmup; i++) await fn(iterations + i);
  const samples: number[] = [];
  for (let i = 0; i < iterations; i++) {
    const start = performance.now();
    await fn(i);
    samples.push(performance.now() - start);
  }
  return samples;
}

/** The markdown table `| benchmark | n | p50 ms | p90 ms | p99 ms | mean ms |` of `results`. */
export function formatTable(results: readonly BenchResult[]): string {
  const ms = (x: number) => x.toFixed(3);
  const lines = ["| benchmark | n | p50 ms | p90 ms | p99 ms | mean ms |", "| --- | ---: | ---: | ---: | ---: | ---: |"];
  for (const r of results) {
    const s = summarize(r.samples);
    lines.push(`| ${r.name} | ${s.n} | ${ms(s.p50)} | ${ms(s.p90)} | ${ms(s.p99)} | ${ms(s.mean)} |`);
  }
  return lines.join("\n");
}
