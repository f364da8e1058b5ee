// The skill shapes of the web app's Settings (DeerFlow app/gateway/routers/skills.py SkillResponse and
// CustomSkillContentResponse). Storage, validation and history live in src/skills/skill-storage.ts, shared with
// the agent's skill_manage tool.
import path from "node:path";
import type { ExtensionsConfig } from "../../config/extensions-config.js";
import { NotFoundError } from "../../errors.js";
import type { Skill } from "../../skills/parse-skill.js";
import { validateSkillName } from "../../skills/validate-skill.js";
import { installSkillArchive, type SkillInstallResult } from "../../skills/skill-install.js";
import { artifactVirtualPath, fetchThreadArtifact, openArtifact } from "../../sandbox/artifacts.js";
import type { LocalSandbox } from "../../sandbox/local-sandbox.js";
import { skillStorageFor, type SkillStorage } from "../../skills/skill-storage.js";

/** A skill as the Settings list shows it (upstream `SkillResponse`). */
export interface SkillView {
  name: string;
  description: string;
  license: string | null;
  /** `public`, `custom` (the user's own) or `legacy` (shared, read-only). */
  category: string;
  enabled: boolean;
  editable: boolean;
}

/** The API view of a loaded skill: only the user's custom skills are editable. */
export const skillView = (s: Skill): SkillView => ({ name: s.name, description: s.description, license: s.license, category: s.category, enabled: s.enabled, editable: s.category === "custom" });

/**
 * One of the user's custom skills with its SKILL.md text (upstream `CustomSkillContentResponse`).
 * @throws NotFoundError when the user has no custom skill of that name (or its SKILL.md no longer parses).
 */
export function customSkillView(storage: SkillStorage, name: string, extensions: ExtensionsConfig | null): SkillView & { content: string } {
  const clean = name.replace(/[\r\n]/g, "");
  let valid: string;
  try {
    valid = validateSkillName(clean);
  } catch {
    // A name that can never exist reads as missing, like any other unknown skill.
    throw new NotFoundError(`Custom skill '${clean}' not found`);
  }
  const skill = storage.loadSkills(extensions).find((s) => s.name === valid && s.category === "custom");
  if (!skill) throw new NotFoundError(`Custom skill '${valid}' not found`);
  return { ...skillView(skill), content: storage.readCustomSkill(valid) };
}

/**
 * The storage of the signed-in user for the current config's `skills` section: the one the lead agent and its
 * `skill_manage` tool use, so a change from Settings reaches the next run and the other way round.
 * @throws Error for a user id that is not a safe path segment.
 */
export function userSkillStorage(skills: { path?: string | null } | undefined, userId: string): SkillStorage {
  return skillStorageFor(skills, userId);
}

/**
 * Installs the `.skill` archive at `rawPath` of a thread (the artifact route's path forms: `mnt/user-data/outputs/x.skill`,
 * `uploads/x.skill`, ...) into `storage` (DeerFlow `install_skill` with `resolve_thread_virtual_path`). The local
 * sandbox's file is read through a descriptor opened without following symlinks; DeerFlow's container sandbox's
 * is downloaded first.
 * @throws NotFoundError (missing file), SandboxPathError (403), the installer's BadRequestError / ConflictError.
 */
export async function installSkillFromThread(
  provider: { sandboxFor(threadId: string, userId: string): LocalSandbox },
  thread: { thread_id: string; owner_id: string },
  storage: SkillStorage,
  rawPath: string,
): Promise<SkillInstallResult> {
  const fileName = path.posix.basename(artifactVirtualPath(rawPath));
  const fetched = await fetchThreadArtifact(provider, thread.thread_id, thread.owner_id, rawPath);
  if (fetched) return installSkillArchive(storage, { buffer: fetched.body }, fileName);
  const artifact = await openArtifact(provider.sandboxFor(thread.thread_id, thread.owner_id), rawPath);
  try {
    return await installSkillArchive(storage, { fd: artifact.handle.fd }, fileName);
  } finally {
    await artifact.handle.close();
  }
}
