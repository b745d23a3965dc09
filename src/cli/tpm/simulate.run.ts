/** How `attest tpm simulate` runs: a simulated TPM's EK, AK and one quote in Keylime's form. */
import { FileSystem } from "@effect/platform"
import { Console, Effect, Either, Option } from "effect"
import { TpmSimulator } from "../../tpm/simulator/TpmSimulator.js"
import { toBase64 } from "../../tpm/bytes.js"
import { marshalPcrBlob, pcrBlobOf } from "../../tpm/pcrBlob.js"
import { normalizeSelection } from "../../tpm/pcrSelection.js"
import { keyObjectOf } from "../../tpm/nodeKeys.js"
import { parseTpm2bPublic } from "../../tpm/public.js"
import { encodeQuoteString } from "../../tpm/quoteString.js"
import { hashAlgFromName } from "../../tpm/hashAlg.js"
import { type AkOptions, type PcrSelection, Tpm } from "../../tpm/Tpm.js"
import { TpmCommandError } from "./errors.js"

const fail = (reason: string, message: string) =>
  Effect.zipRight(Console.error(`attest tpm simulate: ${message}`), Effect.fail(new TpmCommandError({ reason, message })))

/** "sha1:10+sha256:0,1,10,16" → selection; undefined when malformed. */
export const parseSelectionArg = (text: string): PcrSelection | undefined => {
  const out: Array<{ hash: NonNullable<ReturnType<typeof hashAlgFromName>>; pcrs: Array<number> }> = []
  for (const part of text.split("+")) {
    const m = /^([a-z0-9-]+):(\d+(?:,\d+)*)$/i.exec(part.trim())
    const hash = m ? hashAlgFromName(m[1]!) : undefined
    if (!m || hash === undefined) return undefined
    const list = m[2]!.split(",").map(Number)
    if (list.some((p) => p > 23)) return undefined
    out.push({ hash, pcrs: list })
  }
  return out
}

const ALPHANUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

const pem = (tpm2b: Uint8Array): string =>
  Either.match(Either.flatMap(parseTpm2bPublic(tpm2b), keyObjectOf), {
    onLeft: (e) => `(no PEM: ${e.message})`,
    onRight: (k) => k.export({ format: "pem", type: "spki" }).toString().trim()
  })

export interface SimulateArgs {
  readonly akAlg: "rsa" | "ecc"
  readonly seed: Option.Option<string>
  readonly nonce: Option.Option<string>
  readonly pcrs: string
  readonly writeAk: Option.Option<string>
}

export const run = (args: SimulateArgs) =>
  Effect.gen(function*() {
    const selection = parseSelectionArg(args.pcrs)
    if (selection === undefined) return yield* fail("--pcrs", `cannot read the PCR selection ${JSON.stringify(args.pcrs)}`)
    const tpm = yield* Tpm
    const options: AkOptions = args.akAlg === "rsa"
      ? { alg: "rsa", hash: "sha256", scheme: "rsassa" }
      : { alg: "ecc", hash: "sha256", scheme: "ecdsa" }
    const ekPublic = yield* tpm.ekPublic(args.akAlg)
    const ak = yield* tpm.createAk(args.akAlg, options)
    const nonceText = Option.isSome(args.nonce)
      ? args.nonce.value
      : Array.from(yield* tpm.getRandom(20), (b) => ALPHANUM[b % ALPHANUM.length]).join("")
    const q = yield* tpm.quote(ak, { nonce: new Uint8Array(Buffer.from(nonceText, "utf8")), selection })
    const quote = encodeQuoteString({
      attest: q.attest,
      signature: q.signature,
      pcrBlob: marshalPcrBlob(pcrBlobOf(normalizeSelection(selection), q.pcrs))
    })
    if (Option.isSome(args.writeAk)) {
      const fs = yield* FileSystem.FileSystem
      yield* fs.writeFile(args.writeAk.value, ak.public).pipe(
        Effect.orElse(() => fail("--write-ak", `cannot write ${args.writeAk.pipe(Option.getOrElse(() => ""))}`))
      )
    }
    yield* Console.log(
      [
        `ek.alg: ${args.akAlg}`,
        `ek.tpm2b: ${toBase64(ekPublic)}`,
        "ek.pem:",
        pem(ekPublic),
        `ak.alg: ${options.alg}/${options.scheme}/${options.hash}`,
        `ak.tpm2b: ${toBase64(ak.public)}`,
        "ak.pem:",
        pem(ak.public),
        `nonce: ${nonceText}`,
        `quote: ${quote}`
      ].join("\n")
    )
  }).pipe(
    Effect.provide(TpmSimulator.layer(Option.isSome(args.seed) ? { seed: args.seed.value } : {})),
    Effect.catchTag("TpmError", (e) => fail(e.operation, `${e.message}${e.detail ? `: ${e.detail}` : ""}`))
  )
