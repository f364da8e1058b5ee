// Skill install and skill details (DeerFlow app/gateway/routers/skills.py `install_skill`, `get_skill`).
import type { FastifyInstance } from "fastify";
import { z } from "zod";
import { principalOf } from "../src/auth/principal.js";
import { NotFoundError } from "../src/errors.js";
import { assertThreadId } from "../src/runtime/runs/run-service.js";
import { installSkillFromThread, skillView, userSkillStorage } from "../src/runtime/webapp/custom-skills.js";
import { currentExtensions } from "../src/runtime/webapp/extensions-admin.js";
import { doc, validInput } from "./openapi.js";
import { requireAdmin } from "./settings.js";

const InstallBody = z.looseObject({ thread_id: z.string().min(1).max(128), path: z.string().min(1).max(4096) });

/**
 * `POST /api/skills/install` `{thread_id, path}`: installs the `.skill` archive at `path` of the caller's thread
 * (an artifact under outputs, or a file under uploads; `mnt/user-data/...` as the app sends it) into the caller's
 * custom skills; answers `{success, skill_name, message}`. Admin only (403), as upstream. Another user's thread and
 * a missing file are 404; a refused archive 400 (see skill-install.ts); an existing custom skill of that name 409.
 * `GET /api/skills/:skill_name`: one skill the caller sees (upstream `SkillResponse`), 404 when none.
 * Register under `/api`.
 */
export async function skillInstallRoutes(app: FastifyInstance): Promise<void> {
  const { getAppConfig, sandbox: provider, persistence } = app.deerflow;

  app.post("/skills/install", { schema: doc("skills", "Install a .skill archive from a thread's artifact or upload", { body: InstallBody }) }, async (request) => {
    requireAdmin(request);
    const body = validInput(InstallBody, request.body);
    assertThreadId(body.thread_id);
    const userId = principalOf(request).id;
    const thread = await persistence.threads.getOwned(body.thread_id, userId);
    if (!thread) throw new NotFoundError(`Thread ${body.thread_id} not found`);
    const storage = userSkillStorage(getAppConfig().skills, userId);
    return installSkillFromThread(provider, thread, storage, body.path);
  });

  app.get<{ Params: { skill_name: string } }>("/skills/:skill_name", { schema: doc("skills", "One skill you see, with its category and enabled state") }, async (request) => {
    const name = request.params.skill_name.replace(/[\r\n]/g, "");
    const skill = userSkillStorage(getAppConfig().skills, principalOf(request).id).loadSkills(currentExtensions()).find((s) => s.name === name);
    if (!skill) throw new NotFoundError(`Skill '${name}' not found`);
    return skillView(skill);
  });
}
