/**
 * EK and AK handling with tpm2-tools (tpm-facts.md §1.3–1.5, §7): the EK is recreated from the
 * endorsement seed on every call (`tpm2_createek`, deterministic), and an AK is reloaded from its
 * saved public/private under the EK with a PolicySecret(endorsement) session.
 */
import { Effect, Either } from "effect"
import { toHex } from "../bytes.js"
import { nameOf, parseTpm2bPublic } from "../public.js"
import type { Ak, AkOptions, KeyAlg, SavedAk } from "../Tpm.js"
import { TpmError } from "../Tpm.js"
import { readOutput, runTool, type ToolContext, writeInput } from "./run.js"

/** `tpm2_createek` into ek.ctx (and ek.pub as TPM2B_PUBLIC). */
export const createEk = (ctx: ToolContext, alg: KeyAlg) =>
  runTool(ctx, "tpm2_createek", ["-c", "ek.ctx", "-G", alg, "-u", "ek.pub", "-f", "tss"])

/** A policy session satisfying the EK's PolicySecret(TPM_RH_ENDORSEMENT), saved to `file`. */
export const ekPolicySession = (ctx: ToolContext, file: string) =>
  Effect.zipRight(
    runTool(ctx, "tpm2_startauthsession", ["--policy-session", "-S", file]),
    runTool(ctx, "tpm2_policysecret", ["-S", file, "-c", "e"])
  )

/** The `-G` argument of tpm2_createak. */
export const akAlgArg = (options: AkOptions): Either.Either<string, string> => {
  if (options.alg === "rsa") {
    const bits = options.bits ?? 2048
    if (bits !== 2048 && bits !== 3072) return Either.left(`unsupported RSA AK size ${bits}`)
    if (options.scheme === "ecdsa") return Either.left("an RSA AK cannot use ecdsa")
    return Either.right(`rsa${bits}`)
  }
  const bits = options.bits ?? 256
  if (bits !== 256 && bits !== 384) return Either.left(`unsupported ECC AK curve size ${bits}`)
  if (options.scheme !== "ecdsa") return Either.left(`an ECC AK cannot use ${options.scheme}`)
  return Either.right(`ecc${bits}`)
}

/** The Ak record for a saved public/private; fails when the public area does not parse. */
export const akFromSaved = (operation: string, saved: SavedAk): Either.Either<Ak, TpmError> =>
  Either.map(
    Either.mapLeft(
      parseTpm2bPublic(saved.public),
      (e) => new TpmError({ operation, message: "the saved AK public area does not parse", detail: e.message })
    ),
    (pub) => ({ public: saved.public, name: nameOf(pub), options: saved.options, saved })
  )

/** Loads the AK into ak.ctx under a freshly created EK (ek.ctx stays usable for activation). */
export const loadAkInto = (ctx: ToolContext, ak: Ak) =>
  Effect.gen(function*() {
    yield* writeInput(ctx, "ak.pub", ak.saved.public)
    yield* writeInput(ctx, "ak.priv", ak.saved.private)
    yield* createEk(ctx, ak.saved.ekAlg)
    yield* ekPolicySession(ctx, "load.ctx")
    yield* runTool(ctx, "tpm2_load", ["-C", "ek.ctx", "-u", "ak.pub", "-r", "ak.priv", "-c", "ak.ctx", "-P", "session:load.ctx"])
    yield* runTool(ctx, "tpm2_flushcontext", ["load.ctx"])
    // Both keys are saved in ek.ctx / ak.ctx; free the slots so the next tool can load them
    // again (swtpm has 3 transient slots and every tool's ContextLoad takes one).
    yield* runTool(ctx, "tpm2_flushcontext", ["-t"])
    return ak
  })

export const createAkWith = (ctx: ToolContext, ekAlg: KeyAlg, options: AkOptions) =>
  Effect.gen(function*() {
    const alg = yield* Either.mapLeft(akAlgArg(options), (message) => new TpmError({ operation: ctx.operation, message }))
    yield* createEk(ctx, ekAlg)
    yield* runTool(ctx, "tpm2_createak", [
      "-C", "ek.ctx", "-c", "ak.ctx", "-G", alg, "-g", options.hash, "-s", options.scheme,
      "-u", "ak.pub", "-f", "tss", "-n", "ak.name", "-r", "ak.priv"
    ])
    const saved: SavedAk = {
      ekAlg,
      options,
      public: yield* readOutput(ctx, "ak.pub"),
      private: yield* readOutput(ctx, "ak.priv")
    }
    const ak = yield* akFromSaved(ctx.operation, saved)
    const toolName = yield* readOutput(ctx, "ak.name")
    if (toHex(toolName) !== toHex(ak.name)) {
      return yield* new TpmError({
        operation: ctx.operation,
        message: "tpm2_createak reported a name that differs from the Name of its public area",
        detail: `${toHex(toolName)} vs ${toHex(ak.name)}`
      })
    }
    return ak
  })
