/**
 * Shared pieces of the runtime-policy commands: reading files into schemas, writing output, and
 * turning any failure into one clear line on stderr with a non-zero exit.
 */
import { FileSystem } from "@effect/platform"
import { Console, Effect, Either, Option, Schema } from "effect"
import {
  decodeRuntimePolicy,
  type RuntimePolicy,
  runtimePolicyFromAllowlistText,
  runtimePolicyFromLegacyJson
} from "../../../schemas/RuntimePolicy.js"
import { compileRuntimePolicyDocument, type RuntimePolicyError } from "../../ima/compileDocument.js"
import { decodeDsseEnvelopeJson, type DsseEnvelope } from "../../ima/dsse.js"
import { loadRuntimePolicy } from "../../ima/load.js"
import type { CompiledPolicy } from "../../ima/policy.js"

/** What a policy command reports when it cannot do its job (CLI boundary). */
export class PolicyCliError extends Schema.TaggedError<PolicyCliError>()("PolicyCliError", {
  message: Schema.String
}) {}

export const cliFail = (message: string) => Effect.fail(new PolicyCliError({ message }))

/** Prints `attest policy <cmd>: <message>` for any failure and keeps the exit code non-zero. */
export const reportErrors =
  (command: string) =>
  <A, R>(self: Effect.Effect<A, PolicyCliError, R>): Effect.Effect<A, PolicyCliError, R> =>
    Effect.tapError(self, (e) => Console.error(`attest policy ${command}: ${e.message}`))

const notFound = (e: { readonly _tag: string }) => e._tag === "SystemError" && (e as { readonly reason?: string }).reason === "NotFound"

export const readText = (path: string) =>
  Effect.flatMap(FileSystem.FileSystem, (fs) => fs.readFileString(path)).pipe(
    Effect.mapError((e) => new PolicyCliError({ message: `cannot read ${path}: ${notFound(e) ? "no such file" : e.message}` }))
  )

export const readBytes = (path: string) =>
  Effect.flatMap(FileSystem.FileSystem, (fs) => fs.readFile(path)).pipe(
    Effect.mapError((e) => new PolicyCliError({ message: `cannot read ${path}: ${notFound(e) ? "no such file" : e.message}` }))
  )

/** Writes to `--output` or prints to stdout. */
export const writeOutput = (output: Option.Option<string>, text: string) =>
  Option.match(output, {
    onNone: () => Console.log(text),
    onSome: (path) =>
      Effect.flatMap(FileSystem.FileSystem, (fs) => fs.writeFileString(path, text + "\n")).pipe(
        Effect.mapError((e) => new PolicyCliError({ message: `cannot write ${path}: ${e.message}` }))
      )
  })

const firstLine = (s: string) => s.split("\n").find((l) => l.trim() !== "")?.trim() ?? s

const parseJson = (text: string): Either.Either<unknown, string> =>
  Either.try({ try: () => JSON.parse(text) as unknown, catch: (e) => String(e instanceof Error ? e.message : e) })

/** A DSSE envelope if the text is one. */
export const envelopeOf = (text: string): DsseEnvelope | undefined => {
  const env = decodeDsseEnvelopeJson(text)
  return Either.isRight(env) ? env.right : undefined
}

/**
 * Reads a runtime policy in any form attest accepts: v1 JSON, a DSSE envelope around one (its
 * signature is checked by `attest policy verify`, not here), the old JSON allowlist, or a legacy
 * `<digest>  <path>` allowlist.
 */
export const readPolicy = (path: string) =>
  Effect.gen(function*() {
    const text = yield* readText(path)
    const env = envelopeOf(text)
    const body = env === undefined ? text : Buffer.from(env.payload, "base64").toString("utf8")
    const json = parseJson(body)
    if (Either.isRight(json)) {
      const obj = json.right
      if (typeof obj === "object" && obj !== null && "hashes" in obj && !("digests" in obj)) {
        const legacy = runtimePolicyFromLegacyJson(body)
        if (Either.isLeft(legacy)) return yield* cliFail(`${path} is not a valid JSON allowlist: ${firstLine(legacy.left.message)}`)
        return yield* decodeOrFail(path, legacy.right)
      }
      return yield* decodeOrFail(path, obj)
    }
    if (body.trimStart().startsWith("{")) return yield* cliFail(`${path} is not valid JSON: ${json.left}`)
    const fromText = runtimePolicyFromAllowlistText(body)
    if (Either.isLeft(fromText)) {
      return yield* cliFail(`${path} is neither a runtime policy JSON nor an allowlist (line ${fromText.left.line}: ${fromText.left.message})`)
    }
    return yield* decodeOrFail(path, fromText.right)
  })

const decodeOrFail = (path: string, value: unknown): Effect.Effect<RuntimePolicy, PolicyCliError> => {
  const r = decodeRuntimePolicy(value)
  return Either.isRight(r)
    ? Effect.succeed(r.right)
    : cliFail(`${path} is not a valid runtime policy: ${r.left.message.split("\n").map((l) => l.trim()).filter((l) => l !== "").slice(-2).join(": ")}`)
}

const isLegacyJson = (obj: unknown): boolean => typeof obj === "object" && obj !== null && "hashes" in obj && !("digests" in obj)

const loadFailure = (path: string, e: RuntimePolicyError) =>
  cliFail(e.kind === "NotJson" ? `${path} is not valid JSON: ${e.reason}` : `${path}: ${e.message}`)

/**
 * Reads and compiles a runtime policy the way the verifier loads an upload (`loadRuntimePolicy`; a
 * DSSE envelope's payload is taken without checking its signature, which `attest policy verify`
 * does), or converts the old JSON allowlist or a `<digest>  <path>` allowlist first.
 */
export const readCompiledPolicy = (path: string): Effect.Effect<CompiledPolicy, PolicyCliError, FileSystem.FileSystem> =>
  Effect.gen(function*() {
    const text = yield* readText(path)
    const loaded = loadRuntimePolicy(text)
    if (Either.isRight(loaded)) return loaded.right.policy
    const env = envelopeOf(text)
    const body = env === undefined ? text : Buffer.from(env.payload, "base64").toString("utf8")
    const json = parseJson(body)
    let converted: unknown
    if (Either.isRight(json) && isLegacyJson(json.right)) {
      const legacy = runtimePolicyFromLegacyJson(body)
      if (Either.isLeft(legacy)) return yield* cliFail(`${path} is not a valid JSON allowlist: ${firstLine(legacy.left.message)}`)
      converted = legacy.right
    } else if (Either.isLeft(json) && !body.trimStart().startsWith("{")) {
      const fromText = runtimePolicyFromAllowlistText(body)
      if (Either.isLeft(fromText)) {
        return yield* cliFail(`${path} is neither a runtime policy JSON nor an allowlist (line ${fromText.left.line}: ${fromText.left.message})`)
      }
      converted = fromText.right
    } else {
      return yield* loadFailure(path, loaded.left)
    }
    const compiled = compileRuntimePolicyDocument(converted)
    return Either.isRight(compiled) ? compiled.right.policy : yield* loadFailure(path, compiled.left)
  })
