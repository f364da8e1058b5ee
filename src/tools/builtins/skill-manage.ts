// Port of DeerFlow tools/skill_manage_tool.py (skill_manage): the agent creates and evolves the user's custom
// skills, through the same SkillStorage the Settings routes use.
import { tool } from "langchain";
import { z } from "zod";
import { runContextOf, type RuntimeLike } from "../../agents/run-context.js";
import { getRuntimeHome } from "../../config/paths.js";
import { BadRequestError } from "../../errors.js";
import { SkillStorage, type SkillActor } from "../../skills/skill-storage.js";
import { validateSkillName } from "../../skills/validate-skill.js";

/** The actions of `skill_manage` (DeerFlow's six). */
export const SKILL_MANAGE_ACTIONS = ["create", "patch", "edit", "delete", "write_file", "remove_file"] as const;

/** Options of {@link createSkillManageTool}. */
export interface SkillManageToolOptions {
  /** The global skills root (public and legacy skills, read-only). */
  skillsRoot: string;
  /** Runtime home holding `users/<user>/skills/custom` (default `DEER_FLOW_HOME`, read per call). */
  home?: string;
}

const SkillManageArgs = z.object({
  action: z.string().describe("One of create, patch, edit, delete, write_file, remove_file."),
  name: z.string().describe("Skill name in hyphen-case."),
  content: z.string().nullish().describe("New file content for create, edit, or write_file."),
  path: z.string().nullish().describe("Supporting file path for write_file or remove_file."),
  find: z.string().nullish().describe("Existing text to replace for patch."),
  replace: z.string().nullish().describe("Replacement text for patch."),
  expected_count: z.number().int().min(1).nullish().describe("Optional expected number of replacements for patch."),
});

/**
 * Creates the `skill_manage` tool: `create` / `edit` (whole SKILL.md), `patch` (`find` -> `replace`, the first match
 * or exactly `expected_count`), `delete`, `write_file` / `remove_file` (supporting files under `references/`,
 * `templates/`, `scripts/`, `assets/`) of a custom skill of the run's user (`user_id` of the run context; never an
 * argument). Every change is validated, written atomically and recorded in the skill's history with the run's
 * thread (the Settings routes can roll it back). The next agent build lists the skill. A refused change throws a
 * domain error with DeerFlow's message, which the tool-error middleware turns into an error tool result the model
 * can act on; the run goes on.
 * @returns results as DeerFlow words them, e.g. "Created custom skill 'x'.".
 */
export function createSkillManageTool(options: SkillManageToolOptions) {
  return tool(
    async (args, config) => {
      const { userId, threadId } = runContextOf(config as RuntimeLike);
      const storage = new SkillStorage({ skillsRoot: options.skillsRoot, userId, home: options.home ?? getRuntimeHome() });
      const actor: SkillActor = { kind: "agent", threadId: threadId ?? null };
      const name = validateSkillName(args.name);
      const content = args.content ?? null;
      switch (args.action) {
        case "create":
          if (content === null) throw new BadRequestError("content is required for create.");
          storage.create(name, content, actor);
          return `Created custom skill '${name}'.`;
        case "edit":
          storage.ensureEditable(name);
          if (content === null) throw new BadRequestError("content is required for edit.");
          storage.edit(name, content, actor);
          return `Updated custom skill '${name}'.`;
        case "patch": {
          storage.ensureEditable(name);
          if (args.find == null || args.replace == null) throw new BadRequestError("find and replace are required for patch.");
          const { applied, found } = storage.patch(name, args.find, args.replace, args.expected_count ?? null, actor);
          return `Patched custom skill '${name}' (${applied} replacement(s) applied, ${found} match(es) found).`;
        }
        case "delete":
          storage.delete(name, actor);
          return `Deleted custom skill '${name}'.`;
        case "write_file":
          storage.ensureEditable(name);
          if (args.path == null || content === null) throw new BadRequestError("path and content are required for write_file.");
          storage.writeSupportFile(name, args.path, content, actor);
          return `Wrote '${args.path}' for custom skill '${name}'.`;
        case "remove_file":
          storage.ensureEditable(name);
          if (args.path == null) throw new BadRequestError("path is required for remove_file.");
          storage.removeSupportFile(name, args.path, actor);
          return `Removed '${args.path}' from custom skill '${name}'.`;
        default:
          if (storage.readOnlySkillKind(name)) throw new BadRequestError(`'${name}' is a read-only skill (built-in or legacy shared). To customise it, create your own version with the same name.`);
          throw new BadRequestError(`Unsupported action '${String(args.action).slice(0, 64)}'.`);
      }
    },
    { name: "skill_manage", description: "Manage custom skills under skills/custom/.", schema: SkillManageArgs },
  );
}
