/**
 * `attest tpm verify-quote`: checks a Keylime quote string against an AK and a nonce with the same
 * pure verifier the verifier service uses, and prints the verdict and the quoted PCR values.
 * Exit code 0 only when every check passes.
 */
import { Command, Options } from "@effect/cli"
import { FileSystem } from "@effect/platform"
import { createPublicKey, type KeyObject } from "node:crypto"
import { Console, Effect, Either } from "effect"
import { fromBase64, toHex } from "../../tpm/bytes.js"
import { parseTpm2bPublic, type TpmtPublic } from "../../tpm/public.js"
import { akPublicFromKey } from "../../tpm/templates.js"
import { verifyQuoteString } from "../../tpm/verifyQuote.js"
import { TpmCommandError } from "./errors.js"

const ak = Options.file("ak", { exists: "yes" }).pipe(
  Options.withDescription(
    "File with the AK: its TPM2B_PUBLIC (binary, or base64 text as Keylime's aik_tpm and `attest tpm simulate` print it), or a PEM public key."
  )
)
const quote = Options.text("quote").pipe(
  Options.withDescription("The quote in Keylime's form r<TPMS_ATTEST>:<TPMT_SIGNATURE>:<PCR blob> (base64 parts), or @<file> holding it.")
)
const nonce = Options.text("nonce").pipe(
  Options.withDescription("The nonce the quote must carry as extraData, as the text the verifier sent (its ASCII bytes).")
)

const reject = (reason: string, message: string) =>
  Effect.zipRight(Console.error(`verdict: REJECTED (${reason}): ${message}`), Effect.fail(new TpmCommandError({ reason, message })))

interface AkInput {
  readonly public: TpmtPublic | Uint8Array
  readonly key?: KeyObject
}

/** TPM2B_PUBLIC bytes, base64 text of them, or a PEM SubjectPublicKeyInfo. */
const decodeAk = (bytes: Uint8Array): Either.Either<AkInput, string> => {
  const text = Buffer.from(bytes).toString("utf8").trim()
  if (text.includes("-----BEGIN")) {
    try {
      const key = createPublicKey(text)
      // The PEM carries no TPM attributes: a template stands in; the key does the verifying.
      const pub = akPublicFromKey(key, key.asymmetricKeyType === "ec" ? "ecdsa" : "rsassa", "sha256")
      return Either.isLeft(pub) ? Either.left(pub.left.message) : Either.right({ public: pub.right, key })
    } catch (e) {
      return Either.left(`not a PEM public key: ${e instanceof Error ? e.message : String(e)}`)
    }
  }
  const fromText = /^[A-Za-z0-9+/=\s]+$/.test(text) ? fromBase64(text.replace(/\s+/g, "")) : undefined
  const raw = fromText !== undefined && Either.isRight(parseTpm2bPublic(fromText)) ? fromText : bytes
  const parsed = parseTpm2bPublic(raw)
  return Either.isLeft(parsed)
    ? Either.left(`not a TPM2B_PUBLIC: ${parsed.left.structure} at ${parsed.left.offset}: ${parsed.left.message}`)
    : Either.right({ public: raw })
}

export const verifyQuoteCommand = Command.make("verify-quote", { ak, quote, nonce }, (args) =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const akBytes = yield* fs.readFile(args.ak).pipe(Effect.orElse(() => reject("--ak", `cannot read ${args.ak}`)))
    const akInput = yield* Either.match(decodeAk(akBytes), {
      onLeft: (m) => reject("--ak", m),
      onRight: Effect.succeed
    })
    const quoteText = args.quote.startsWith("@")
      ? yield* fs.readFileString(args.quote.slice(1)).pipe(Effect.orElse(() => reject("--quote", `cannot read ${args.quote.slice(1)}`)))
      : args.quote
    const verified = verifyQuoteString(
      akInput.public,
      quoteText.trim(),
      new Uint8Array(Buffer.from(args.nonce, "utf8")),
      akInput.key === undefined ? {} : { akKey: akInput.key }
    )
    if (Either.isLeft(verified)) return yield* reject(verified.left.check, verified.left.message)
    const v = verified.right
    const lines = [
      "verdict: OK (signature, nonce, PCR selection and digest verified)",
      `signature: ${v.signature.alg}/${v.signature.hash}`,
      `clock: ${v.clockInfo.clock} resetCount: ${v.clockInfo.resetCount} restartCount: ${v.clockInfo.restartCount} safe: ${v.clockInfo.safe}`,
      "pcrs:"
    ]
    for (const bank of v.pcrs) {
      lines.push(`  ${bank.hash}:`)
      for (const [pcr, value] of bank.values) lines.push(`    ${String(pcr).padStart(2)}: ${toHex(value)}`)
    }
    yield* Console.log(lines.join("\n"))
  })
).pipe(Command.withDescription("Verify a Keylime quote string offline against an AK and a nonce; prints the verdict and the PCR values."))
