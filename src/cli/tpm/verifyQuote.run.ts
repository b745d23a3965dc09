/** How `attest tpm verify-quote` runs: the service's pure quote verifier over files and arguments. */
import { FileSystem } from "@effect/platform"
import { createPublicKey } from "node:crypto"
import { Console, Effect, Either } from "effect"
import { fromBase64, toHex } from "../../tpm/bytes.js"
import { parseTpm2bPublic, type TpmtPublic } from "../../tpm/public.js"
import { akPublicFromKey } from "../../tpm/templates.js"
import { verifyQuoteString } from "../../tpm/verifyQuote.js"
import { TpmCommandError } from "./errors.js"

const reject = (reason: string, message: string) =>
  Effect.zipRight(Console.error(`verdict: REJECTED (${reason}): ${message}`), Effect.fail(new TpmCommandError({ reason, message })))

interface AkInput {
  readonly public: TpmtPublic | Uint8Array
}

/** TPM2B_PUBLIC bytes, base64 text of them, or a PEM SubjectPublicKeyInfo. */
const decodeAk = (bytes: Uint8Array): Either.Either<AkInput, string> => {
  const text = Buffer.from(bytes).toString("utf8").trim()
  if (text.includes("-----BEGIN")) {
    try {
      const key = createPublicKey(text)
      // The PEM carries no TPM attributes: a template around its key stands in.
      const pub = akPublicFromKey(key, key.asymmetricKeyType === "ec" ? "ecdsa" : "rsassa", "sha256")
      return Either.isLeft(pub) ? Either.left(pub.left.message) : Either.right({ public: pub.right })
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

export const run = (args: { readonly ak: string; readonly quote: string; readonly nonce: string }) =>
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
      new Uint8Array(Buffer.from(args.nonce, "utf8"))
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
