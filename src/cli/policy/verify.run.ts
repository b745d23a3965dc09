/** How `attest policy verify` runs: check the envelope's signature and that its payload is a runtime policy. */
import { Console, Effect, Either, Option } from "effect"
import { dsseKeyId, verificationKeyFrom, verifyEnvelope } from "../../ima/dsse.js"
import { loadRuntimePolicy } from "../../ima/load.js"
import { cliFail, envelopeOf, readText, reportErrors, writeOutput } from "./runtimeCommon.js"

export const run = (o: { readonly policy: string; readonly key: string; readonly output: Option.Option<string> }) =>
  Effect.gen(function*() {
    const env = envelopeOf(yield* readText(o.policy))
    if (env === undefined) return yield* cliFail(`${o.policy} is not a DSSE envelope (payload, payloadType, signatures)`)
    const pub = verificationKeyFrom(yield* readText(o.key))
    if (pub === undefined) return yield* cliFail(`${o.key} is not a public key or certificate`)
    const payload = verifyEnvelope(env, pub)
    if (Either.isLeft(payload)) return yield* cliFail(`${o.policy}: ${payload.left.message}`)
    const text = Buffer.from(payload.right).toString("utf8")
    const loaded = loadRuntimePolicy(text)
    if (Either.isLeft(loaded)) return yield* cliFail(`${o.policy}: signature is valid but the payload is not a runtime policy (${loaded.left.message})`)
    if (Option.isSome(o.output)) yield* writeOutput(o.output, text.trimEnd())
    yield* Console.log(`OK: ${o.policy} is signed by key ${dsseKeyId(pub)}`)
  }).pipe(reportErrors("verify"))
