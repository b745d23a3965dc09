/**
 * The agent's bootstrap-key state (rust-keylime `keys_handler`): the NK, the U and V halves received
 * so far, and K once U xor V matches the auth_tag. When K is found and a payload came with U, it is
 * decrypted and delivered. U, V and K live in memory only; the NK is kept by src/agent/nkStore.ts.
 */
import { Context, Effect, Either, Layer, Option, Ref } from "effect"
import type { UKeyRequest, VKeyRequest } from "../../schemas/Agent.js"
import {
  challengeHmac,
  combineKeys,
  decodeAuthTag,
  decryptPayload,
  decryptWithNk,
  generateNkAsync,
  isValidKeyLength,
  type Nk
} from "../keys/index.js"
import { type AgentRequestError, badRequest } from "./errors.js"
import { deliverPayload, type PayloadOptions } from "./payload.js"

export interface BootstrapKeysShape {
  readonly nk: Nk
  readonly ukey: (body: UKeyRequest) => Effect.Effect<void, AgentRequestError>
  readonly vkey: (body: VKeyRequest) => Effect.Effect<void, AgentRequestError>
  readonly verify: (challenge: string) => Effect.Effect<string, AgentRequestError>
  /** K, once derived (tests and the payload step). */
  readonly key: Effect.Effect<Option.Option<Uint8Array>>
}

export class BootstrapKeys extends Context.Tag("attest/agent/BootstrapKeys")<BootstrapKeys, BootstrapKeysShape>() {}

interface State {
  readonly us: ReadonlyArray<Uint8Array>
  readonly vs: ReadonlyArray<Uint8Array>
  readonly tag: Option.Option<Uint8Array>
  readonly payload: Option.Option<Uint8Array>
  readonly k: Option.Option<Uint8Array>
}

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/
const base64 = (field: string, text: string): Either.Either<Uint8Array, AgentRequestError> =>
  BASE64.test(text)
    ? Either.right(new Uint8Array(Buffer.from(text, "base64")))
    : Either.left(badRequest(`Invalid base64 encoding in ${field}: invalid base64 text`))

const fromEither = <A>(e: Either.Either<A, AgentRequestError>) => Either.match(e, { onLeft: Effect.fail, onRight: Effect.succeed })

export interface BootstrapKeysOptions {
  readonly agentId: string
  readonly payload: PayloadOptions
  /** The agent's NK (kept in its data directory); a fresh one when left out (tests). */
  readonly nk?: Nk
}

export const make = (options: BootstrapKeysOptions) =>
  Effect.gen(function*() {
    const nk = options.nk ?? (yield* generateNkAsync())
    const state = yield* Ref.make<State>({ us: [], vs: [], tag: Option.none(), payload: Option.none(), k: Option.none() })
    const lock = yield* Effect.makeSemaphore(1)

    const decryptHalf = (text: string, invalid: string) =>
      Effect.gen(function*() {
        const ct = yield* fromEither(base64("encrypted_key", text))
        const key = yield* fromEither(
          Either.mapLeft(decryptWithNk(nk, ct), (e) => badRequest(`Failed to decrypt encrypted_key: ${e.message}`))
        )
        if (!isValidKeyLength(key.length)) {
          return yield* Effect.fail(badRequest(`${invalid}: key must be 16 or 32 bytes, got ${key.length}`))
        }
        return key
      })

    // After each half: the first U xor V that matches the auth_tag becomes K.
    const tryCombine = Effect.gen(function*() {
      const s = yield* Ref.get(state)
      if (Option.isNone(s.tag) || s.us.length === 0 || s.vs.length === 0) return
      const combined = combineKeys(s.us, s.vs, options.agentId, s.tag.value)
      if (Either.isLeft(combined)) {
        yield* Effect.logWarning(`auth_tag mismatch: U xor V does not give the K the tenant announced for agent ${options.agentId}`)
        return
      }
      const k = combined.right
      yield* Ref.set(state, { us: [], vs: [], tag: s.tag, payload: Option.none(), k: Option.some(k) })
      yield* Effect.logInfo("bootstrap key K derived from U and V; auth_tag matches")
      const plaintext = Option.isSome(s.payload)
        ? yield* fromEither(Either.mapLeft(decryptPayload(k, s.payload.value), (e) => badRequest(`Failed to decrypt payload: ${e.message}`)))
        : undefined
      const delivered = yield* deliverPayload(options.payload, k, plaintext)
      yield* Effect.logInfo(`payload ${plaintext === undefined ? "(none) " : ""}delivered into ${delivered.dir}`)
    })

    const keys: BootstrapKeysShape = {
      nk,
      key: Effect.map(Ref.get(state), (s) => s.k),
      ukey: (body) =>
        lock.withPermits(1)(Effect.gen(function*() {
          const tag = yield* fromEither(
            Either.mapLeft(decodeAuthTag(body.auth_tag), (e) => badRequest(e.reason === "encoding" ? e.message : `Invalid auth_tag: ${e.message}`))
          )
          const u = yield* decryptHalf(body.encrypted_key, "Invalid decrypted key")
          const payload = body.payload === undefined || body.payload === null || body.payload === ""
            ? Option.none<Uint8Array>()
            : Option.some(yield* fromEither(base64("payload", body.payload)))
          yield* Ref.update(state, (s) => ({ ...s, us: [...s.us, u], tag: Option.some(tag), payload }))
          yield* Effect.logInfo(`received U (${u.length} bytes)${Option.isSome(payload) ? " with a payload" : ""}`)
          yield* tryCombine
        })),
      vkey: (body) =>
        lock.withPermits(1)(Effect.gen(function*() {
          const v = yield* decryptHalf(body.encrypted_key, "Decrypted key is invalid")
          yield* Ref.update(state, (s) => ({ ...s, vs: [...s.vs, v] }))
          yield* Effect.logInfo(`received V (${v.length} bytes)`)
          yield* tryCombine
        })),
      verify: (challenge) =>
        Effect.flatMap(Ref.get(state), (s) =>
          Option.match(s.k, {
            onNone: () => Effect.fail(badRequest("Bootstrap key not yet available.")),
            onSome: (k) => Effect.succeed(challengeHmac(k, challenge))
          }))
    }
    return keys
  })

export const layer = (options: BootstrapKeysOptions) => Layer.effect(BootstrapKeys, make(options))
