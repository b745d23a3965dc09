/**
 * `attest ear verify` (implementation): the token's signature checked with the given key (src/ear),
 * then its status per appraisal, trustworthiness vector and failures printed (or the claims as
 * JSON). Exit 0 when every appraisal is affirming, 1 otherwise, 2 usage.
 */
import { FileSystem } from "@effect/platform"
import { Console, Effect, Either, Option, Schema } from "effect"
import * as fs from "node:fs"
import { type EarVerificationKey, keyFromPem, keysFromJwks } from "../../ear/key.js"
import { overallStatus, verifyEar } from "../../ear/token.js"
import { UsageError } from "../../config/usageError.js"

const CMD = "attest ear verify"

/** The token did not verify, or its status is not affirming (printed). */
export class EarCommandError extends Schema.TaggedError<EarCommandError>()("EarCommandError", { message: Schema.String }) {}

export interface EarVerifyArgs {
  readonly token: string
  readonly jwks: Option.Option<string>
  readonly key: Option.Option<string>
  readonly json: boolean
}

const usage = (message: string) =>
  Console.error(`${CMD}: ${message}\nusage: ${CMD} <token | -> (--jwks <file> | --key <pem>) [--json]`).pipe(
    Effect.zipRight(Effect.fail(new UsageError({ message })))
  )

const failure = (message: string) => Console.error(`${CMD}: ${message}`).pipe(Effect.zipRight(Effect.fail(new EarCommandError({ message }))))

export const run = (args: EarVerifyArgs) =>
  Effect.gen(function*() {
    if (Option.isSome(args.jwks) === Option.isSome(args.key)) return yield* usage("give the verifier's key with exactly one of --jwks and --key")
    const fileSystem = yield* FileSystem.FileSystem
    const keyFile = Option.getOrElse(Option.orElse(args.jwks, () => args.key), () => "")
    const text = yield* fileSystem.readFileString(keyFile).pipe(Effect.catchAll((e) => usage(`cannot read ${keyFile}: ${e.message}`)))
    const keys: Either.Either<ReadonlyArray<EarVerificationKey>, string> = Option.isSome(args.jwks)
      ? keysFromJwks(text)
      : Either.map(keyFromPem(text), (k) => [k])
    if (Either.isLeft(keys)) return yield* usage(`${keyFile}: ${keys.left}`)
    const token = args.token === "-"
      ? yield* Effect.try({ try: () => fs.readFileSync(0, "utf8"), catch: (e) => new UsageError({ message: `cannot read standard input: ${String(e)}` }) })
      : args.token
    const verified = yield* Effect.either(verifyEar(token, keys.right))
    if (Either.isLeft(verified)) return yield* failure(`the token does not verify: ${verified.left.message}`)
    const { claims, kid } = verified.right
    const status = overallStatus(claims)
    if (args.json) {
      yield* Console.log(JSON.stringify(claims, null, 2))
    } else {
      const lines = [
        `status: ${status} (signature verified with key ${kid})`,
        `verifier: ${claims["ear.verifier-id"].build} (${claims["ear.verifier-id"].developer})${claims.iss === undefined ? "" : `, ${claims.iss}`}`,
        `issued: ${new Date(claims.iat * 1000).toISOString()}`,
        ...(claims.sub === undefined ? [] : [`agent: ${claims.sub}`]),
        ...(claims.eat_nonce === undefined ? [] : [`nonce: ${claims.eat_nonce}`])
      ]
      for (const [name, appraisal] of Object.entries(claims.submods)) {
        lines.push(`${name}: ${appraisal["ear.status"]}`)
        for (const [claim, value] of Object.entries(appraisal["ear.trustworthiness-vector"] ?? {})) lines.push(`  ${claim}: ${value}`)
        if (appraisal["ear.appraisal-policy-id"] !== undefined) lines.push(`  policy: ${appraisal["ear.appraisal-policy-id"]}`)
        for (const f of appraisal["ear.attest.failures"] ?? []) lines.push(`  FAIL ${f.type}: ${f.message}`)
      }
      yield* Console.log(lines.join("\n"))
    }
    if (status !== "affirming") return yield* new EarCommandError({ message: `the result is ${status}` })
  })
