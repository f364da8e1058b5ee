// Port of DeerFlow tools/builtins/clarification_tool.py (ask_clarification).
import { tool } from "langchain";
import { z } from "zod";

/** The kinds of clarification DeerFlow distinguishes; each has its own icon in the rendered question. */
export const CLARIFICATION_TYPES = ["missing_info", "ambiguous_requirement", "approach_choice", "risk_confirmation", "suggestion"] as const;

/** Arguments of `ask_clarification`. */
export const AskClarificationSchema = z.object({
  question: z.string().describe("The question to ask the user. Be specific."),
  clarification_type: z.enum(CLARIFICATION_TYPES).default("missing_info").describe("Why the clarification is needed."),
  context: z.string().optional().describe("Why you are asking: what you know and what is missing."),
  options: z.union([z.array(z.union([z.string(), z.record(z.string(), z.unknown())])), z.string()]).optional()
    .describe("Choices to offer the user, when the answer is one of a few."),
  fields: z
    .union([
      z.array(
        z.object({
          name: z.string().describe("Unique identifier; avoid JavaScript prototype names such as constructor or toString."),
          label: z.string().optional().describe("Display text (defaults to name)."),
          type: z.string().optional().describe("text (default), textarea, number, select, multi_select, checkbox or date."),
          required: z.union([z.boolean(), z.string()]).optional(),
          options: z.array(z.string()).optional().describe("Choices; required for select and multi_select."),
          placeholder: z.string().optional(),
        }).passthrough(),
      ),
      z.string(),
    ])
    .optional()
    .describe(
      "A form collecting several values in one question; takes precedence over options. At most 16 fields, 24 options " +
        "per field and 200 characters per name, label, option or placeholder; exceeding a limit degrades the form to a plain question.",
    ),
});

/**
 * Creates the `ask_clarification` tool. The model calls it when it cannot proceed without the user;
 * ClarificationMiddleware intercepts the call, so the body only runs when that middleware is absent (full
 * takeover), and then returns the question. `returnDirect` ends the turn after the question is delivered.
 */
export function createAskClarificationTool() {
  return tool(async ({ question }) => question, {
    name: "ask_clarification",
    description:
      "Ask the user a clarifying question when the request is ambiguous, information is missing, several approaches " +
      "are possible, or an action is risky. The turn ends after the question; the user's reply arrives as the next message.",
    schema: AskClarificationSchema,
    returnDirect: true,
  });
}
