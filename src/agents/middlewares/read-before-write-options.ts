// The `read_before_write` option schema (DeerFlow config/read_before_write_config.py), a zod-only leaf module.
import { z } from "zod";

/** `read_before_write`: refuse `write_file` / `str_replace` on an existing file not read at its current version. */
export const ReadBeforeWriteConfigSchema = z.looseObject({
  enabled: z.boolean().default(true),
});
/** A validated `read_before_write` section. */
export type ReadBeforeWriteConfig = z.infer<typeof ReadBeforeWriteConfigSchema>;
