/**
 * Evidence for evaluator tests: genuinely signed quotes over chosen PCR values and clock (so PCR 10
 * can match a generated IMA list and PCR 16 an NK), an agent "machine" whose IMA list grows, and
 * the usual agent policy. Built with the TPM codecs and node:crypto keys (test/tpm/quoteFixture.ts).
 */
import { createHash, generateKeyPairSync } from "node:crypto"
import { Either } from "effect"
import { marshalAttest, type ClockInfo, type QuoteAttest } from "../../../src/tpm/attest.js"
import { TPM_GENERATED_VALUE } from "../../../src/tpm/constants.js"
import { digestSize, type HashAlg } from "../../../src/tpm/hashAlg.js"
import { marshalPcrBlob } from "../../../src/tpm/pcrBlob.js"
import { marshalTpm2bPublic, nameOf } from "../../../src/tpm/public.js"
import { encodeQuoteString } from "../../../src/tpm/quoteString.js"
import { marshalSignature } from "../../../src/tpm/signature.js"
import { encodeImaNg } from "../../../src/ima/encode.js"
import { replayPcr10 } from "../../../src/ima/replay.js"
import {
  type AgentPolicy,
  defaultSeverityPolicy,
  emptyTpmPolicy,
  type EvaluateOptions,
  nkPcrValue,
  type TpmEvidence
} from "../../../src/verifier/index.js"
import { makeAk, signAttest, type TestAk } from "../../tpm/quoteFixture.js"

export { makeAk, type TestAk }

export const akBytes = (ak: TestAk): Uint8Array => marshalTpm2bPublic(ak.public)

export const newNkPem = (): string =>
  generateKeyPairSync("rsa", { modulusLength: 2048 }).publicKey.export({ format: "pem", type: "spki" }).toString()

export interface QuoteSpec {
  readonly nonce: Uint8Array
  readonly bank?: HashAlg
  readonly values: ReadonlyMap<number, Uint8Array>
  readonly clock?: Partial<ClockInfo>
}

/** A Keylime quote string signed by `ak` over `values` (one bank), as a TPM would make it. */
export const quoteOver = (ak: TestAk, spec: QuoteSpec): string => {
  const bank = spec.bank ?? "sha256"
  const pcrs = [...spec.values.keys()].sort((a, b) => a - b)
  const h = createHash(ak.hash)
  for (const p of pcrs) h.update(spec.values.get(p)!)
  const sel = [{ hash: bank, pcrs, sizeofSelect: 3 }]
  const attest: QuoteAttest = {
    magic: TPM_GENERATED_VALUE,
    type: "quote",
    qualifiedSigner: nameOf(ak.public),
    extraData: spec.nonce,
    clockInfo: { clock: 1_000_000n, resetCount: 3, restartCount: 0, safe: true, ...spec.clock },
    firmwareVersion: 0x2019102300163636n,
    attested: { pcrSelect: sel, pcrDigest: new Uint8Array(h.digest()) }
  }
  const attestBytes = marshalAttest(attest)
  const signature = marshalSignature(signAttest(ak, attestBytes))
  const pcrBlob = marshalPcrBlob({ selection: sel, values: [{ hash: bank, values: new Map(pcrs.map((p) => [p, spec.values.get(p)!])) }] })
  return encodeQuoteString({ attest: attestBytes, signature, pcrBlob })
}

export const ascii = (s: string): Uint8Array => new Uint8Array(Buffer.from(s, "ascii"))

/** An IMA list that grows like the kernel's: ima-ng lines (sha1 column) and PCR 10 per bank. */
export class ImaMachine {
  readonly lines: Array<string> = []
  constructor(readonly bank: HashAlg = "sha256") {}

  measure(path: string, content = path): this {
    const digest = new Uint8Array(createHash("sha256").update(content).digest())
    this.lines.push(encodeImaNg(digest, path, { banks: [this.bank] }).line)
    return this
  }

  /** The list text from entry `from`, as the agent sends it. */
  from(from: number): string {
    const l = this.lines.slice(from)
    return l.length === 0 ? "" : l.join("\n") + "\n"
  }

  /** PCR 10 after the first `n` entries (default all). */
  pcr10(n = this.lines.length): Uint8Array {
    const text = this.lines.slice(0, n).join("\n")
    return Either.getOrThrow(replayPcr10(text, [this.bank]))[this.bank]!
  }

  /** Policy digests allowing every measured path with its digest. */
  digests(): Record<string, Array<string>> {
    const out: Record<string, Array<string>> = {}
    for (const l of this.lines) {
      const [, , , d, p] = l.split(" ")
      ;(out[p!] ??= []).push(d!.slice(d!.indexOf(":") + 1))
    }
    return out
  }
}

export const options = (o: Partial<EvaluateOptions> = {}): EvaluateOptions => ({
  severity: defaultSeverityPolicy,
  measuredBootEvaluate: "once",
  reportTomtou: false,
  bindNk: true,
  checkClock: true,
  ...o
})

/** An agent's policy: Keylime's default accept lists (plus ecdsa), no tpm_policy entries, the pull options. */
export const agentPolicy = (ak: TestAk | AgentPolicy["ak"], p: Partial<AgentPolicy> = {}): AgentPolicy => ({
  ak: "privateKey" in ak ? akBytes(ak) : ak,
  accept: { hash: ["sha512", "sha384", "sha256"], encryption: ["ecc", "rsa"], signing: ["ecschnorr", "rsassa", "ecdsa"] },
  tpmPolicy: emptyTpmPolicy,
  options: options(),
  ...p
})

export interface PullRound {
  readonly ak: TestAk
  readonly nonce?: string
  readonly nk: string
  /** Send the NK (partial=0). */
  readonly full?: boolean
  readonly machine?: ImaMachine
  /** Entry the list starts at; undefined: no list sent. */
  readonly fromEntry?: number
  /** PCR 10 covers this many entries (default: all). */
  readonly pcr10Entries?: number
  readonly extraPcrs?: ReadonlyMap<number, Uint8Array>
  readonly clock?: Partial<ClockInfo>
  readonly boottime?: number
  readonly pcr16?: Uint8Array
  readonly omitPcr16?: boolean
}

/** The agent's answer to one `quotes/integrity` request, signed over the PCRs a real agent would quote. */
export const pullEvidence = (r: PullRound): TpmEvidence => {
  const nonce = ascii(r.nonce ?? "NonceNonceNonce12345")
  const values = new Map<number, Uint8Array>(r.extraPcrs ?? [])
  const bank = r.machine?.bank ?? "sha256"
  if (r.machine !== undefined) values.set(10, r.machine.pcr10(r.pcr10Entries))
  if (r.omitPcr16 !== true) values.set(16, r.pcr16 ?? new Uint8Array(nkPcrValue(bank, r.nk)))
  const quote = quoteOver(r.ak, { nonce, bank, values, ...(r.clock === undefined ? {} : { clock: r.clock }) })
  return {
    _tag: "tpm",
    nonce,
    quote,
    hash_alg: bank,
    enc_alg: r.ak.public.type === "rsa" ? "rsa" : "ecc",
    sign_alg: r.ak.scheme,
    boottime: r.boottime ?? 1_700_000_000,
    ...(r.full === false ? {} : { pubkey: r.nk }),
    ...(r.machine === undefined || r.fromEntry === undefined
      ? {}
      : { ima_measurement_list: r.machine.from(r.fromEntry), ima_measurement_list_entry: r.fromEntry })
  }
}

export const zeros = (alg: HashAlg): Uint8Array => new Uint8Array(digestSize(alg))
export const types = (e: { readonly failures: ReadonlyArray<{ readonly type: string }> }): Array<string> => e.failures.map((f) => f.type)
