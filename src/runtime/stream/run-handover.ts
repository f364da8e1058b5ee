// Redis keys and scripts of durable runs (docs/durable-runs.md): what a run needs to be resumed by another process
// (its request, kept while it is in flight), how many times it was resumed, and the mark a cancel leaves so that a
// resume racing it never starts the run again.

/** Redis hash of in-flight runs' resume specs (run id -> JSON {@link ResumeSpec}). */
export const jobsKey = (prefix: string) => `${prefix}runs:jobs`;
/** Redis hash of how many times each in-flight run was resumed (run id -> count). */
export const attemptsKey = (prefix: string) => `${prefix}runs:attempts`;
/** Redis key set (before anything else) by a cancel of a run: a resume never claims a run that has it. */
export const cancelledKey = (prefix: string, runId: string) => `${prefix}run:${runId}:cancelled`;

/** What a process needs to run an admitted run again: the validated request body and who sent it. */
export interface ResumeSpec {
  /** The run's request body, as the route validated it (`RunCreate`). */
  body: Record<string, unknown>;
  userId: string;
  userRole?: string;
  requestId?: string;
}

/**
 * Takes over a run whose owner died, once across processes. KEYS: in-flight hash, attempts hash, cancel key.
 * ARGV: run id, the in-flight value seen (`<dead owner>|<thread>`), the new value, the most resumes allowed.
 * Returns `{'resume', n}` (the run is now this process's, resumed for the n-th time), `{'gone'}` (another process
 * took it), `{'cancelled'}` (a cancel came first) or `{'exhausted', n}` (resumed n times already); for the last two
 * the caller reaps the run (CLAIM_SCRIPT of the run manager).
 */
export const RESUME_CLAIM_SCRIPT = `
if redis.call('HGET', KEYS[1], ARGV[1]) ~= ARGV[2] then return {'gone'} end
if redis.call('EXISTS', KEYS[3]) == 1 then return {'cancelled'} end
local n = tonumber(redis.call('HGET', KEYS[2], ARGV[1]) or '0')
if n >= tonumber(ARGV[4]) then return {'exhausted', tostring(n)} end
redis.call('HSET', KEYS[2], ARGV[1], n + 1)
redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
return {'resume', tostring(n + 1)}
`;

/** Why a run that could not be resumed again ended, for its record and its stream's `error` frame. */
export const resumeLimitMessage = (times: number) =>
  `The gateway process running this run stopped, and the run was already resumed ${times} time${times === 1 ? "" : "s"} (stream_bridge.max_resumes)`;
