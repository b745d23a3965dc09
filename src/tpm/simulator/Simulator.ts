/**
 * The in-memory TPM behind `TpmSimulator.layer`: real node:crypto keys and byte-exact TPM 2.0
 * structures (marshalled with the core codecs), so its quotes, certify results and credential
 * activations are indistinguishable on the wire from a TPM's (and tpm2_checkquote accepts them).
 *
 * - EKs: RSA 2048 / ECC P-256 from the seed, standard templates, certificates from the simulator
 *   manufacturer CA (manufacturer.ts).
 * - AKs: restricted signing keys derived from the seed and a counter; `SavedAk.private` is the key
 *   sealed under the seed (akBlob.ts), so only this simulator (same seed) can load it.
 * - PCR banks sha1 + sha256 (configurable), 24 PCRs each, zero at every start (a TPM reset);
 *   PCRs 16 and 23 can also be reset on their own (TPM2_PCR_Reset at locality 0).
 * - clockInfo: clock from Effect's Clock plus the persisted clock; resetCount counts starts from
 *   the state file.
 */
import { FileSystem } from "@effect/platform"
import { createHash, createPublicKey, type KeyObject, randomBytes } from "node:crypto"
import { Clock, Effect, Either, Option, type Scope } from "effect"
import { marshalAttest } from "../attest.js"
import { toHex } from "../bytes.js"
import { TPM_GENERATED_VALUE } from "../constants.js"
import { activateCredentialWithKey } from "../credential.js"
import { hashAlgFromId } from "../hashAlg.js"
import { normalizeSelection } from "../pcrSelection.js"
import { describePublic, nameOf, parseTpm2bPublic, qualifiedName } from "../public.js"
import { akPublicFromKey } from "../templates.js"
import type {
  Ak, AkOptions, CredentialBlob, HashAlg, KeyAlg, PcrSelection, QuoteRequest, SavedAk, SignScheme, TpmShape
} from "../Tpm.js"
import { TpmError } from "../Tpm.js"
import { sealAk, unsealAk } from "./akBlob.js"
import { deriveBytes, deriveEcKey, deriveRsaKey, Drbg } from "./derive.js"
import { type Ek, ekForSeed, ekFromStored, ekToStored, normalizeSeed } from "./identity.js"
import { simulatorManufacturerCa } from "./manufacturer.js"
import { PcrBanks } from "./pcrBanks.js"
import { loadState, saveState, type SimulatorState } from "./state.js"
import { signAttest } from "./sign.js"

export interface TpmSimulatorOptions {
  /** Makes keys, AKs and random bytes deterministic (tests). Without it the seed is random. */
  readonly seed?: Uint8Array | string
  /**
   * Keeps the TPM identity (seed, EK keys and certificates, counters) in this file, written with
   * mode 0600; a simulator started on an existing file is the same TPM after a reset.
   */
  readonly stateFile?: string
  /** Active PCR banks; default sha1 and sha256. */
  readonly banks?: ReadonlyArray<HashAlg>
}

/** TPMS_ATTEST.firmwareVersion of the simulator. */
export const SIMULATOR_FIRMWARE_VERSION = 0x0001000000000000n
/** TPM2B_DATA holds at most a sha512 digest. */
const MAX_QUALIFYING_DATA = 64

const err = (operation: string, message: string, detail?: string) =>
  new TpmError(detail === undefined ? { operation, message } : { operation, message, detail })

const validateAkOptions = (options: AkOptions): string | undefined => {
  const bits = options.bits ?? (options.alg === "rsa" ? 2048 : 256)
  if (options.alg === "rsa") {
    if (bits !== 2048 && bits !== 3072) return `unsupported RSA AK size ${bits} (2048 or 3072)`
    if (options.scheme !== "rsassa" && options.scheme !== "rsapss") return `an RSA AK cannot use ${options.scheme}`
  } else {
    if (bits !== 256 && bits !== 384) return `unsupported ECC AK curve size ${bits} (256 or 384)`
    if (options.scheme !== "ecdsa") return `an ECC AK cannot use ${options.scheme}`
  }
  return undefined
}

const deriveAkKey = (seed: Uint8Array, counter: number, options: AkOptions): KeyObject =>
  options.alg === "rsa"
    ? deriveRsaKey(seed, `ak-${counter}`, options.bits ?? 2048)
    : deriveEcKey(seed, `ak-${counter}`, (options.bits ?? 256) === 384 ? 384 : 256)

interface LoadedAk {
  readonly key: KeyObject
  readonly name: Uint8Array
  readonly qualifiedName: Uint8Array
  readonly scheme: SignScheme
  readonly hash: HashAlg
}

export const makeSimulator = (
  options: TpmSimulatorOptions = {}
): Effect.Effect<TpmShape, TpmError, FileSystem.FileSystem | Scope.Scope> =>
  Effect.gen(function*() {
    const startedAt = yield* Clock.currentTimeMillis
    const stored = options.stateFile === undefined ? Option.none<SimulatorState>() : yield* loadState(options.stateFile)
    const givenSeed = options.seed === undefined ? undefined : normalizeSeed(options.seed)
    const seed = Option.match(stored, {
      onNone: () => givenSeed ?? new Uint8Array(randomBytes(32)),
      onSome: (s) => new Uint8Array(Buffer.from(s.seed, "hex"))
    })
    if (givenSeed !== undefined && toHex(givenSeed) !== toHex(seed)) {
      return yield* err("start", `the state file ${options.stateFile} belongs to a simulator with a different seed`)
    }
    const deterministic = givenSeed !== undefined
    const random = new Drbg(seed, "get-random")

    // Mutable TPM state; every method runs synchronously between yields, so no lock is needed.
    const eks = new Map<KeyAlg, Ek>()
    let resetCount = 0
    let restartCount = 0
    let clockBase = 0
    let akCounter = 0
    if (Option.isSome(stored)) {
      const s = stored.value
      for (const alg of ["rsa", "ecc"] as const) {
        const ek = ekFromStored(alg, s.ek[alg])
        if (Either.isLeft(ek)) return yield* err("start", `state file ${options.stateFile}: ${ek.left}`)
        eks.set(alg, ek.right)
      }
      resetCount = s.resetCount + 1 // starting again is a TPM Reset
      restartCount = s.restartCount
      clockBase = s.clockMs
      akCounter = s.akCounter
    }
    const banks = new PcrBanks(options.banks ?? ["sha1", "sha256"])

    const clockNow = Effect.map(Clock.currentTimeMillis, (now) => clockBase + Math.max(0, now - startedAt))

    const ekOf = (operation: string, alg: KeyAlg): Either.Either<Ek, TpmError> => {
      const hit = eks.get(alg)
      if (hit !== undefined) return Either.right(hit)
      return Either.map(
        Either.mapLeft(ekForSeed(seed, alg), (m) => err(operation, m)),
        (ek) => {
          eks.set(alg, ek)
          return ek
        }
      )
    }

    const persist = Effect.gen(function*() {
      if (options.stateFile === undefined) return
      const rsa = yield* ekOf("state", "rsa")
      const ecc = yield* ekOf("state", "ecc")
      yield* saveState(options.stateFile, {
        version: 1,
        seed: toHex(seed),
        resetCount,
        restartCount,
        clockMs: yield* clockNow,
        akCounter,
        ek: { rsa: ekToStored(rsa), ecc: ekToStored(ecc) },
        manufacturerCa: simulatorManufacturerCa().pem
      })
    })
    const fs = yield* FileSystem.FileSystem
    const persistNow = Effect.provideService(persist, FileSystem.FileSystem, fs)
    yield* persistNow
    yield* Effect.addFinalizer(() =>
      persistNow.pipe(Effect.catchAll((e) => Effect.logError("could not save the TPM simulator state", e)))
    )

    const loaded = new Map<string, LoadedAk>()

    /** The AK's key, as a TPM would load it: from the sealed blob, bound to its public area. */
    const loadAkKey = (operation: string, saved: SavedAk): Either.Either<LoadedAk, TpmError> => {
      const pub = parseTpm2bPublic(saved.public)
      if (Either.isLeft(pub)) return Either.left(err(operation, "the AK public area does not parse", pub.left.message))
      const name = nameOf(pub.right)
      // Keyed by the whole blob: a damaged or foreign private part must fail like a TPM2_Load would.
      const cacheKey = `${toHex(name)}:${toHex(saved.private)}:${saved.ekAlg}`
      const hit = loaded.get(cacheKey)
      if (hit !== undefined) return Either.right(hit)
      const key = unsealAk(seed, saved.public, saved.private)
      if (Either.isLeft(key)) return Either.left(err(operation, key.left))
      const d = describePublic(pub.right)
      const hash = pub.right.type === "symcipher" || pub.right.scheme === null ? undefined : hashAlgFromId(pub.right.scheme.hashAlg)
      const scheme = d.scheme === "rsassa" || d.scheme === "rsapss" || d.scheme === "ecdsa" ? d.scheme : undefined
      if (!d.restrictedSigning || hash === undefined || scheme === undefined) {
        return Either.left(err(operation, "the AK is not a restricted signing key with a fixed scheme"))
      }
      return Either.flatMap(ekOf(operation, saved.ekAlg), (ek) =>
        Either.map(
          Either.mapLeft(qualifiedName(ek.qualifiedName, name), (e) => err(operation, e.message)),
          (qn) => {
            const l: LoadedAk = { key: key.right, name, qualifiedName: qn, scheme, hash }
            loaded.set(cacheKey, l)
            return l
          }
        )
      )
    }

    const akRecord = (saved: SavedAk, name: Uint8Array): Ak => ({ public: saved.public, name, options: saved.options, saved })

    const ekPublic = Effect.fn("TpmSimulator.ekPublic")(function*(alg: KeyAlg) {
      return (yield* ekOf("ekPublic", alg)).tpm2b
    })

    const ekCertificate = Effect.fn("TpmSimulator.ekCertificate")(function*(alg: KeyAlg) {
      return Option.some((yield* ekOf("ekCertificate", alg)).certificate)
    })

    const createAk = Effect.fn("TpmSimulator.createAk")(function*(ekAlg: KeyAlg, akOptions: AkOptions) {
      const invalid = validateAkOptions(akOptions)
      if (invalid !== undefined) return yield* err("createAk", invalid)
      yield* ekOf("createAk", ekAlg)
      const counter = akCounter++
      const key = deriveAkKey(seed, counter, akOptions)
      const pub = yield* Either.mapLeft(
        akPublicFromKey(createPublicKey(key), akOptions.scheme, akOptions.hash),
        (e) => err("createAk", e.message)
      )
      const tpm2b = new Uint8Array(pub.bytes.length + 2)
      tpm2b[0] = pub.bytes.length >>> 8
      tpm2b[1] = pub.bytes.length & 0xff
      tpm2b.set(pub.bytes, 2)
      const saved: SavedAk = {
        ekAlg,
        options: akOptions,
        public: tpm2b,
        private: sealAk(seed, tpm2b, key, deriveBytes(seed, `ak-iv-${counter}`, 12))
      }
      const l = yield* loadAkKey("createAk", saved)
      yield* persistNow
      return akRecord(saved, l.name)
    })

    const loadAk = Effect.fn("TpmSimulator.loadAk")(function*(saved: SavedAk) {
      const l = yield* loadAkKey("loadAk", saved)
      return akRecord(saved, l.name)
    })

    const activateCredential = Effect.fn("TpmSimulator.activateCredential")(function*(ak: Ak, blob: CredentialBlob) {
      const l = yield* loadAkKey("activateCredential", ak.saved)
      const ek = yield* ekOf("activateCredential", ak.saved.ekAlg)
      return yield* Either.mapLeft(
        activateCredentialWithKey(ek.key, ek.public, l.name, blob),
        (e) => err("activateCredential", e.message, e.reason)
      )
    })

    const clockInfo = Effect.map(clockNow, (clock) => ({ clock: BigInt(clock), resetCount, restartCount, safe: true }))

    const quote = Effect.fn("TpmSimulator.quote")(function*(ak: Ak, request: QuoteRequest) {
      const l = yield* loadAkKey("quote", ak.saved)
      if (request.nonce.length > MAX_QUALIFYING_DATA) {
        return yield* err("quote", `qualifying data of ${request.nonce.length} bytes exceeds ${MAX_QUALIFYING_DATA}`)
      }
      if (request.selection.length === 0) return yield* err("quote", "empty PCR selection")
      const selection = normalizeSelection(request.selection)
      const pcrs = yield* Either.mapLeft(banks.read(selection), (m) => err("quote", m))
      // pcrDigest uses the signing hash over the values in selection order (TPM2_Quote).
      const h = createHash(l.hash)
      for (const bank of pcrs) for (const v of bank.values.values()) h.update(v)
      const attest = marshalAttest({
        magic: TPM_GENERATED_VALUE,
        type: "quote",
        qualifiedSigner: l.qualifiedName,
        extraData: request.nonce,
        clockInfo: yield* clockInfo,
        firmwareVersion: SIMULATOR_FIRMWARE_VERSION,
        attested: { pcrSelect: selection, pcrDigest: new Uint8Array(h.digest()) }
      })
      const signature = yield* Either.mapLeft(signAttest(l.key, l.scheme, l.hash, attest), (m) => err("quote", "signing failed", m))
      return { attest, signature, pcrs }
    })

    const certify = Effect.fn("TpmSimulator.certify")(function*(ak: Ak, nonce: Uint8Array) {
      const l = yield* loadAkKey("certify", ak.saved)
      if (nonce.length > MAX_QUALIFYING_DATA) {
        return yield* err("certify", `qualifying data of ${nonce.length} bytes exceeds ${MAX_QUALIFYING_DATA}`)
      }
      const attest = marshalAttest({
        magic: TPM_GENERATED_VALUE,
        type: "certify",
        qualifiedSigner: l.qualifiedName,
        extraData: nonce,
        clockInfo: yield* clockInfo,
        firmwareVersion: SIMULATOR_FIRMWARE_VERSION,
        attested: { name: l.name, qualifiedName: l.qualifiedName }
      })
      const signature = yield* Either.mapLeft(signAttest(l.key, l.scheme, l.hash, attest), (m) => err("certify", "signing failed", m))
      return { attest, signature }
    })

    const pcrRead = Effect.fn("TpmSimulator.pcrRead")(function*(selection: PcrSelection) {
      return yield* Either.mapLeft(banks.read(normalizeSelection(selection)), (m) => err("pcrRead", m))
    })

    const pcrExtend = Effect.fn("TpmSimulator.pcrExtend")(function*(
      pcr: number,
      digests: ReadonlyArray<{ readonly hash: HashAlg; readonly digest: Uint8Array }>
    ) {
      return yield* Either.mapLeft(banks.extend(pcr, digests), (m) => err("pcrExtend", m))
    })

    const pcrReset = Effect.fn("TpmSimulator.pcrReset")(function*(pcr: number) {
      return yield* Either.mapLeft(banks.reset(pcr), (m) => err("pcrReset", m))
    })

    const getRandom = Effect.fn("TpmSimulator.getRandom")(function*(bytes: number) {
      if (!Number.isInteger(bytes) || bytes < 0) return yield* err("getRandom", `invalid byte count ${bytes}`)
      return deterministic ? random.bytes(bytes) : new Uint8Array(randomBytes(bytes))
    })

    return {
      description: "simulator",
      ekPublic,
      ekCertificate,
      createAk,
      loadAk,
      activateCredential,
      quote,
      certify,
      pcrRead,
      pcrExtend,
      pcrReset,
      getRandom
    } satisfies TpmShape
  })
