/** `attest policy verify`: check a DSSE-signed runtime policy with a public key or certificate. */
import { Command, Options } from "@effect/cli"
import { Console, Effect, Either, Option } from "effect"
import { dsseKeyId, verificationKeyFrom, verifyEnvelope } from "../../ima/dsse.js"
import { loadRuntimePolicy } from "../../ima/load.js"
import { cliFail, envelopeOf, readText, reportErrors, writeOutput } from "./runtimeCommon.js"

const policy = Options.text("policy").pipe(Options.withDescription("The signed policy (DSSE envelope JSON)."))
const key = Options.text("key").pipe(Options.withDescription("ECDSA public key (PEM) or X.509 certificate of the signer (runtime_policy_key)."))
const output = Options.text("output").pipe(
  Options.withDescription("Also write the verified policy (the envelope's payload) to this file."),
  Options.optional
)

export const verifyCommand = Command.make("verify", { policy, key, output }, (o) =>
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
).pipe(Command.withDescription("Verify a DSSE-signed runtime policy with the signer's public key or certificate."))
