// How a middleware reports a decision to the run's journal (DeerFlow RunJournal.record_middleware, reached through
// `runtime.context["__run_journal"]`): the worker puts the journal in the run context under the same key; an
// embedded agent without one records nothing.

/** Context key of the run's journal (upstream's). */
export const RUN_JOURNAL_KEY = "__run_journal";

/** One middleware decision: the class name, the hook, the action and what it changed (upstream's content shape). */
export interface MiddlewareEvent {
  name: string;
  hook: string;
  action: string;
  changes: Record<string, unknown>;
}

/** What a run's journal offers a middleware. */
export interface RunJournalSink {
  /** Records `middleware:{tag}` (category `middleware`) with `event` as its content. */
  recordMiddleware(tag: string, event: MiddlewareEvent): void;
}

/**
 * Records a middleware decision in the journal of the run `runtime` belongs to (a LangGraph runtime or anything
 * with a `context` object); nothing when the run has none. Never throws: an audit event must not break a run.
 */
export function recordMiddlewareEvent(runtime: unknown, tag: string, event: MiddlewareEvent): void {
  const context = (runtime as { context?: unknown } | null | undefined)?.context;
  const journal = context && typeof context === "object" ? (context as Record<string, unknown>)[RUN_JOURNAL_KEY] : undefined;
  if (!journal || typeof (journal as RunJournalSink).recordMiddleware !== "function") return;
  try {
    (journal as RunJournalSink).recordMiddleware(tag, event);
  } catch {
    // The journal is an audit copy.
  }
}
