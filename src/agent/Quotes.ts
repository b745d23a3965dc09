/**
 * Quote assembly (push-model.md §4.4–4.6): TPM2_Quote with qualifyingData = the nonce's ASCII bytes
 * over the requested mask plus PCR 16 (which holds the NK digest), encoded as Keylime's
 * `r<attest>:<signature>:<pcr blob>`; the IMA list from the requested entry when PCR 10 is quoted
 * and the UEFI log when PCR 0 is. The IMA list is read after the quote, so it covers at least what
 * the quoted PCR 10 holds.
 */
import { Context, Effect, Layer, Option } from "effect"
import type { IdentityQuote, IntegrityQuote } from "../../schemas/Agent.js"
import type { ApiVersion } from "../http/versions.js"
import { atLeast } from "../http/versions.js"
import { marshalPcrBlob, pcrBlobOf } from "../tpm/pcrBlob.js"
import { encodeQuoteString } from "../tpm/quoteString.js"
import { type PcrSelection, type QuoteResult, Tpm } from "../tpm/Tpm.js"
import { BootstrapKeys } from "./BootstrapKeys.js"
import { type AgentRequestError, serverError } from "./errors.js"
import { AgentIdentity } from "./Identity.js"
import { MeasurementSource } from "./measurements/MeasurementSource.js"
import { type IntegrityQuery, pcrsOfMask } from "./queries.js"

export const DATA_PCR = 16
export const IMA_PCR = 10

const b64 = (b: Uint8Array) => Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString("base64")

const quoteStringOf = (q: QuoteResult, selection: PcrSelection): string =>
  encodeQuoteString({ attest: q.attest, signature: q.signature, pcrBlob: marshalPcrBlob(pcrBlobOf(selection, q.pcrs)) })

export interface QuotesShape {
  readonly identity: (nonce: string, version: ApiVersion) => Effect.Effect<IdentityQuote, AgentRequestError>
  readonly integrity: (q: IntegrityQuery, version: ApiVersion) => Effect.Effect<IntegrityQuote, AgentRequestError>
  /** `tpm_enc_alg` as the version reports it: "rsa2048" from 2.5, "rsa" before. */
  readonly encAlgFor: (version: ApiVersion) => string
}

export class Quotes extends Context.Tag("attest/agent/Quotes")<Quotes, QuotesShape>() {}

export const make = Effect.gen(function*() {
  const tpm = yield* Tpm
  const id = yield* AgentIdentity
  const keys = yield* BootstrapKeys
  const source = yield* MeasurementSource
  const encAlgFor = (v: ApiVersion) => (atLeast(v, "2.5") ? `${id.encAlg}${id.encBits}` : id.encAlg)

  const quote = (nonce: string, mask: number) => {
    const pcrs = [...new Set([...pcrsOfMask(mask), DATA_PCR])].sort((a, b) => a - b)
    const selection = [{ hash: id.hashAlg, pcrs }]
    return tpm.quote(id.ak, { nonce: new Uint8Array(Buffer.from(nonce, "ascii")), selection }).pipe(
      Effect.map((r) => quoteStringOf(r, selection)),
      Effect.tapError((e) => Effect.logError(`quote failed: ${e.message}`, e.detail ?? "")),
      Effect.mapError(() => serverError("Unable to retrieve quote"))
    )
  }

  const identity = Effect.fn("Agent.identityQuote")(function*(nonce: string, version: ApiVersion) {
    const q = yield* quote(nonce, 0)
    return {
      quote: q,
      hash_alg: id.hashAlg,
      enc_alg: encAlgFor(version),
      sign_alg: id.signAlg,
      pubkey: keys.nk.publicPem,
      boottime: yield* source.bootTime
    } satisfies IdentityQuote
  })

  const integrity = Effect.fn("Agent.integrityQuote")(function*(query: IntegrityQuery, version: ApiVersion) {
    const q = yield* quote(query.nonce, query.mask)
    const result: {
      -readonly [K in keyof IntegrityQuote]: IntegrityQuote[K]
    } = {
      quote: q,
      hash_alg: id.hashAlg,
      enc_alg: encAlgFor(version),
      sign_alg: id.signAlg,
      boottime: yield* source.bootTime
    }
    if (!query.partial) result.pubkey = keys.nk.publicPem
    if ((query.mask >>> IMA_PCR) & 1) {
      const ima = yield* source.imaList(query.imaEntry).pipe(
        Effect.tapError((e) => Effect.logError(`reading the IMA list failed: ${e.message}`)),
        Effect.orElseSucceed(() => Option.none())
      )
      if (Option.isSome(ima)) {
        result.ima_measurement_list = ima.value.list
        result.ima_measurement_list_entry = ima.value.entry
      }
    }
    if (query.mask & 1) {
      const log = yield* source.bootLog.pipe(
        Effect.tapError((e) => Effect.logError(`reading the boot log failed: ${e.message}`)),
        Effect.orElseSucceed(() => Option.none())
      )
      if (Option.isSome(log)) result.mb_measurement_list = b64(log.value)
    }
    return result as IntegrityQuote
  })

  return Quotes.of({ identity, integrity, encAlgFor })
})

export const layer = Layer.effect(Quotes, make)
