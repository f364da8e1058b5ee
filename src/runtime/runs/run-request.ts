// The run-creation body (LangGraph RunCreate) and its validation (LangGraph API `RunCreateStateful`; unknown keys rejected as upstream's pydantic model does).
import { z } from "zod";
import { refuseServerOwnedState } from "../../agents/server-owned-state.js";
import { ValidationError, type ValidationIssue } from "../../errors.js";

import { MultitaskStrategySchema, OnDisconnectSchema, STREAM_MODES, type StreamModeName } from "../wire/wire-enums.js";

/** Stream modes a client may request (see {@link STREAM_MODES}). */
export const SUPPORTED_STREAM_MODES = STREAM_MODES;
export type { StreamModeName } from "../wire/wire-enums.js";

/** Options the SDK may send that this gateway does not support: any non-null value is a 422. */
const UNSUPPORTED_WHEN_SET = ["webhook", "on_completion", "after_seconds", "feedback_keys"] as const;

const messageLike = z.record(z.string(), z.unknown());

/** RunCreate: unknown keys are rejected (`extra_forbidden`), as upstream does. */
export const RunCreateSchema = z.strictObject({
  assistant_id: z.string().nullish(),
  input: z.looseObject({ messages: z.array(messageLike).optional() }).nullish(),
  command: z.looseObject({ resume: z.unknown().optional() }).nullish(),
  config: z.looseObject({
    configurable: z.record(z.string(), z.unknown()).nullish(),
    context: z.unknown().optional(),
    recursion_limit: z.unknown().optional(),
    metadata: z.record(z.string(), z.unknown()).nullish(),
    tags: z.array(z.string()).nullish(),
    run_name: z.string().nullish(),
  }).nullish(),
  context: z.record(z.string(), z.unknown()).nullish(),
  metadata: z.record(z.string(), z.unknown()).nullish(),
  checkpoint_id: z.string().nullish(),
  checkpoint: z.record(z.string(), z.unknown()).nullish(),
  interrupt_before: z.union([z.literal("*"), z.array(z.string())]).nullish(),
  interrupt_after: z.union([z.literal("*"), z.array(z.string())]).nullish(),
  stream_mode: z.union([z.string(), z.array(z.string())]).nullish(),
  stream_subgraphs: z.boolean().nullish(),
  stream_resumable: z.boolean().nullish(),
  on_disconnect: OnDisconnectSchema.nullish(),
  multitask_strategy: MultitaskStrategySchema.nullish(),
  if_not_exists: z.enum(["create", "reject"]).nullish(),
  webhook: z.unknown().optional(),
  on_completion: z.unknown().optional(),
  after_seconds: z.unknown().optional(),
  feedback_keys: z.unknown().optional(),
});
/** A parsed RunCreate body. */
export type RunCreate = z.infer<typeof RunCreateSchema>;

/** A validated run request: the body plus its normalised stream modes. */
export interface RunRequest extends RunCreate {
  streamModes: StreamModeName[];
}

/** Converts zod issues to FastAPI-style 422 entries (`extra_forbidden` for unknown keys). */
export function zodIssuesToDetail(issues: z.core.$ZodIssue[], root: string = "body"): ValidationIssue[] {
  const out: ValidationIssue[] = [];
  for (const issue of issues) {
    if (issue.code === "unrecognized_keys") {
      for (const key of issue.keys) out.push({ type: "extra_forbidden", loc: [root, ...issue.path.map(String), key], msg: "Extra inputs are not permitted" });
    } else {
      const type = issue.code === "invalid_value" ? "literal_error" : issue.code === "invalid_type" ? "type_error" : issue.code;
      out.push({ type, loc: [root, ...issue.path.map((p) => (typeof p === "number" ? p : String(p)))], msg: issue.message });
    }
  }
  return out;
}

/**
 * Normalises `stream_mode`: missing, null or `[]` mean `["values"]`; duplicates are removed in order.
 * @throws ValidationError 422 `unsupported_stream_mode` listing each rejected mode once, in request order.
 */
export function normalizeStreamModes(raw: string | string[] | null | undefined): StreamModeName[] {
  const list = raw == null ? [] : Array.isArray(raw) ? raw : [raw];
  const modes = [...new Set(list)];
  const rejected = modes.filter((m) => !(SUPPORTED_STREAM_MODES as readonly string[]).includes(m));
  if (rejected.length) {
    const msg = `Unsupported stream mode(s): ${rejected.join(", ")}. Supported: ${SUPPORTED_STREAM_MODES.join(", ")}`;
    throw new ValidationError(msg, [{ type: "unsupported_stream_mode", loc: ["body", "stream_mode"], msg, input: raw, ctx: { modes: rejected } }]);
  }
  return modes.length ? (modes as StreamModeName[]) : ["values"];
}

/**
 * The rules of a run request beyond its schema, on a body {@link RunCreateSchema} has validated (the route's
 * validator did, once). Unsupported options (`webhook`, `on_completion`, `after_seconds`, `feedback_keys` with a
 * value; `if_not_exists: reject`) are 422 `unsupported_run_option`, each naming its field; server-owned state keys
 * in `input` are 422 `server_owned_field`; stream modes are normalised ({@link normalizeStreamModes}).
 * @throws ValidationError with a FastAPI-style `detail` list.
 */
export function checkRunRequest(data: RunCreate): RunRequest {
  const unsupported: ValidationIssue[] = [];
  const reject = (field: string, input: unknown) =>
    unsupported.push({ type: "unsupported_run_option", loc: ["body", field], msg: `Run option '${field}' is not supported by DeerFlow`, input, ctx: { option: field } });
  for (const field of UNSUPPORTED_WHEN_SET) if (data[field] !== undefined && data[field] !== null) reject(field, data[field]);
  if (data.if_not_exists === "reject") reject("if_not_exists", data.if_not_exists);
  if (unsupported.length) throw new ValidationError("Unsupported run options", unsupported);
  refuseServerOwnedState(data.input, ["body", "input"]);
  return { ...data, streamModes: normalizeStreamModes(data.stream_mode) };
}
