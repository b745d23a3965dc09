/**
 * `attest tee verify-snp` (implementation, loaded when the command runs): verifies an SEV-SNP attestation report and its VCEK offline with the
 * module the verifier uses (src/tee): chain to AMD's ARK/ASK of the VCEK's product line, TCB and
 * chip id, signature and, given --nonce and the TEE key, freshness. Prints the verdict and the
 * claims (or JSON; byte fields as hex in both). Exit 0 valid, 1 invalid (one line per failure), 2 usage.
 */
import { FileSystem } from "@effect/platform"
import { Clock, Console, Effect, Option, Schema } from "effect"
import { fromPem, isPemText } from "../../crypto/pem.js"
import { verifySnpEvidence, verifyTeeEvidence, type TeeVerdict } from "../../tee/index.js"
import { SNP_REPORT_SIZE } from "../../tee/snp/report.js"
import { UsageError } from "../../config/usageError.js"

const CMD = "attest tee verify-snp"

/** The report is invalid; its failures were printed. */
export class TeeCommandError extends Schema.TaggedError<TeeCommandError>()("TeeCommandError", { message: Schema.String }) {}

export interface VerifySnpArgs {
  readonly report: string
  readonly vcek: string
  readonly nonce: Option.Option<string>
  readonly pubkeyX: Option.Option<string>
  readonly pubkeyY: Option.Option<string>
  readonly json: boolean
}

const usage = (message: string) =>
  Console.error(`${CMD}: ${message}\nusage: ${CMD} --report <file> --vcek <file> [--nonce <b64> --pubkey-x <b64url> --pubkey-y <b64url>] [--json]`).pipe(
    Effect.zipRight(Effect.fail(new UsageError({ message })))
  )

/**
 * Binary when it has the report's size, otherwise hex or base64 text of one; anything else is
 * refused naming the file's size (not the size of what a base64 decoder made of it).
 */
const reportBytes = (file: string, bytes: Uint8Array) => {
  if (bytes.length === SNP_REPORT_SIZE) return Effect.succeed(bytes)
  const text = Buffer.from(bytes).toString("latin1").replace(/\s+/g, "")
  const form = /^(?:[0-9a-fA-F]{2})+$/.test(text) ? "hex" : /^[A-Za-z0-9+/]+={0,2}$/.test(text) && text.length % 4 === 0 ? "base64" : undefined
  const expected = `a report is ${SNP_REPORT_SIZE} bytes (0x4A0), binary or as hex or base64 text`
  if (form === undefined) return usage(`--report ${file}: ${bytes.length} bytes, neither a report nor its text; ${expected}`)
  const decoded = new Uint8Array(Buffer.from(text, form))
  return decoded.length === SNP_REPORT_SIZE
    ? Effect.succeed(decoded)
    : usage(`--report ${file}: ${form} text of ${decoded.length} bytes; ${expected}`)
}

/** Byte fields (Keylime's claims give them as lists of numbers) as hex, as the text output shows them. */
const hexClaims = (claims: Record<string, unknown>): Record<string, unknown> =>
  Object.fromEntries(Object.entries(claims).map(([k, v]) => [k, Array.isArray(v) && v.every((x) => Number.isInteger(x) && x >= 0 && x <= 255) ? Buffer.from(v as Array<number>).toString("hex") : v]))

const vcekDer = (bytes: Uint8Array): Uint8Array =>
  isPemText(bytes) ? (fromPem(Buffer.from(bytes).toString("utf8")).find((b) => b.label === "CERTIFICATE")?.der ?? bytes) : bytes

/** Claims for a person: byte lists as hex. */
const claimLines = (claims: Record<string, unknown>): Array<string> =>
  Object.entries(claims).map(([k, v]) => `  ${k}: ${Array.isArray(v) ? Buffer.from(v as Array<number>).toString("hex") : String(v)}`)

export const run = (args: VerifySnpArgs) =>
  Effect.gen(function*() {
    const given = [args.nonce, args.pubkeyX, args.pubkeyY].filter(Option.isSome).length
    if (given !== 0 && given !== 3) return yield* usage("--nonce, --pubkey-x and --pubkey-y go together (freshness needs all three)")
    const fs = yield* FileSystem.FileSystem
    const read = (path: string) => fs.readFile(path).pipe(Effect.catchAll((e) => usage(`cannot read ${path}: ${e.message}`)))
    const reportB = yield* reportBytes(args.report, yield* read(args.report))
    const vcekB64 = Buffer.from(vcekDer(yield* read(args.vcek))).toString("base64")
    const now = new Date(yield* Clock.currentTimeMillis)
    const fresh = Option.all({ nonce: args.nonce, x: args.pubkeyX, y: args.pubkeyY })
    const verdict: TeeVerdict = Option.isSome(fresh)
      ? verifyTeeEvidence(
        {
          nonce: fresh.value.nonce,
          "tee-pubkey-x-b64": fresh.value.x,
          "tee-pubkey-y-b64": fresh.value.y,
          "tee-evidence": { tee: "snp", evidence: { "snp-report": Buffer.from(reportB).toString("base64"), vcek: vcekB64 } }
        },
        { now }
      )
      : (() => {
        const r = verifySnpEvidence({ report: reportB, vcek: vcekB64, freshness: undefined, policy: undefined }, { now })
        return { valid: r.failures.length === 0, failures: r.failures, claims: r.claims }
      })()
    if (args.json) yield* Console.log(JSON.stringify({ ...verdict, claims: hexClaims(verdict.claims) }))
    else if (verdict.valid) {
      const checked = Option.isSome(fresh) ? "signature and freshness verified" : "signature verified; freshness not checked (no --nonce)"
      yield* Console.log([`verdict: VALID (VCEK chain to AMD's ${String(verdict.claims["product_line"])} roots, TCB, chip id, ${checked})`, ...claimLines(verdict.claims)].join("\n"))
    } else {
      yield* Console.log(["verdict: INVALID", ...verdict.failures.map((f) => `FAIL ${f.type}: ${f.context.message}`)].join("\n"))
    }
    if (!verdict.valid) {
      const message = `${args.report} is not a valid SEV-SNP report for ${args.vcek} (${verdict.failures.length} failure${verdict.failures.length > 1 ? "s" : ""})`
      yield* Console.error(`${CMD}: ${message}`)
      return yield* new TeeCommandError({ message })
    }
  })
