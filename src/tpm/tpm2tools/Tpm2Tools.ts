/**
 * `Tpm` through tpm2-tools: `Tpm2Tools.layer({ tcti, workDir?, timeout? })`. The TCTI defaults to
 * the kernel resource manager (`device:/dev/tpmrm0`); tests use `swtpm:host=127.0.0.1,port=N`.
 * Needs a CommandExecutor and FileSystem (NodeContext.layer at the edge).
 */
import { Layer } from "effect"
import { Tpm, type TpmError } from "../Tpm.js"
import type { CallEnv } from "./call.js"
import { makeTpm2ToolsTpm, type Tpm2ToolsConfig } from "./Tpm2ToolsTpm.js"

export type { Tpm2ToolsConfig } from "./Tpm2ToolsTpm.js"

export const Tpm2Tools = {
  layer: (config: Tpm2ToolsConfig = {}): Layer.Layer<Tpm, TpmError, CallEnv> => Layer.scoped(Tpm, makeTpm2ToolsTpm(config))
} as const
