/**
 * The agent's TPM identity at start, shared by the pull agent and the push agent: the EK public
 * area and certificate, the agent id (`hash_ek` = SHA-256 of the EK public area), and the AK,
 * loaded from the data directory or created there (it survives restarts so the registrar's record
 * stays valid).
 */
import { createHash } from "node:crypto"
import { Effect, Option } from "effect"
import type { AkOptions, KeyAlg } from "../tpm/Tpm.js"
import { Tpm } from "../tpm/Tpm.js"
import { loadState, saveState } from "./state.js"

export interface TpmIdentityOptions {
  /** A UUID, or "hash_ek". */
  readonly agentId: string
  readonly dataDir: string
  readonly ekAlg: KeyAlg
  readonly ak: AkOptions
}

export const establishTpmIdentity = (o: TpmIdentityOptions) =>
  Effect.gen(function*() {
    const tpm = yield* Tpm
    const ekPublic = yield* tpm.ekPublic(o.ekAlg)
    const ekCertificate = yield* tpm.ekCertificate(o.ekAlg)
    const agentId = o.agentId === "hash_ek" ? createHash("sha256").update(ekPublic).digest("hex") : o.agentId
    const stored = yield* loadState(o.dataDir)
    const reused = Option.isSome(stored) && stored.value.ak.ekAlg === o.ekAlg
      ? yield* tpm.loadAk(stored.value.ak).pipe(
        Effect.tapError((e) => Effect.logWarning(`stored AK does not load on this TPM (${e.message}); creating a new one`)),
        Effect.option
      )
      : Option.none()
    const ak = Option.isSome(reused) ? reused.value : yield* tpm.createAk(o.ekAlg, o.ak)
    yield* Effect.logInfo(Option.isSome(reused) ? `loaded the AK from ${o.dataDir}` : `created a new AK (${ak.options.alg}, ${ak.options.scheme}, ${ak.options.hash})`).pipe(
      Effect.annotateLogs("agent_id", agentId)
    )
    yield* saveState(o.dataDir, agentId, ak.saved)
    return { agentId, ekPublic, ekCertificate, ak } as const
  })
