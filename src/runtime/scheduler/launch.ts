// How a scheduled firing starts its agent run: through the run service, the one run-creation path (validation,
// the user's quotas and limits, the thread's admission), as the task's user. Upstream builds the same body
// (app/gateway/services.py `launch_scheduled_thread_run`): the prompt as one user message, `non_interactive`,
// `on_disconnect: continue`, `multitask_strategy: reject`.
import type { RunService } from "../runs/run-service.js";
import type { RunCreate } from "../runs/run-request.js";
import type { LaunchRun } from "./dispatch.js";

/**
 * A {@link LaunchRun} over `runService`. A fresh thread is named in `config.configurable.thread_id` (created for
 * the run, owned by the task's user); a reused one must still be the user's (else NotFoundError). The task's
 * `model_name` goes in the run context. `done` resolves with the run's terminal status and error.
 */
export function launchWith(runService: RunService): LaunchRun {
  return async (task, threadId, fresh, metadata) => {
    const body: RunCreate = {
      assistant_id: task.assistant_id,
      input: { messages: [{ role: "user", content: task.prompt }] },
      metadata,
      context: { non_interactive: true, ...(task.model_name ? { model_name: task.model_name } : {}) },
      on_disconnect: "continue",
      multitask_strategy: "reject",
      ...(fresh ? { config: { configurable: { thread_id: threadId } } } : {}),
    };
    const { run } = await runService.start(fresh ? null : threadId, body, task.user_id);
    return { runId: run.record.run_id, threadId: run.record.thread_id, done: run.done.then(() => ({ status: run.record.status, error: run.record.error })) };
  };
}
