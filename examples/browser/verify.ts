/**
 * Verification in a browser with the portable engines (docs/embedding.md): a Keylime quote judged
 * by the verifier's evaluator, and an EAR checked against the verifier's JWKS, with nothing but
 * WebCrypto and @noble/*. Bundle it for a page:
 *
 *   npx esbuild examples/browser/verify.ts --bundle --platform=browser --format=esm --outfile=verify.js
 *
 * and load it with `<script type="module" src="verify.js">` from a page served over https, from
 * localhost, or opened from disk (WebCrypto needs a secure context). The page needs a form with the
 * fields named below and an <output>. `npm run typecheck` compiles this file with the DOM library.
 */
import { Effect, Either } from "effect"
import { base64Bytes, portableCryptoPort, useCrypto, utf8Bytes } from "attest/crypto"
import { keysFromJwks, overallStatus, verifyEar } from "attest/ear"
import { defaultSeverityPolicy, emptyTpmPolicy, type Evaluation, evaluateEvidenceSettled, initialEvaluationState } from "attest/evaluate"
import { loadRuntimePolicy } from "attest/ima"

// The default where there is no node:crypto; said explicitly for hosts that have both.
useCrypto(portableCryptoPort())

/** A quote with its AK (Keylime's aik_tpm, base64), nonce, IMA list and runtime policy: the evaluator's verdict. */
export const judgeQuote = async (input: { quote: string; akBase64: string; nonce: string; imaList: string; runtimePolicy: string }): Promise<Evaluation | string> => {
  const policy = loadRuntimePolicy(input.runtimePolicy)
  if (Either.isLeft(policy)) return `runtime policy: ${policy.left.message}`
  // evaluateEvidenceSettled: the pure evaluator, run again once WebCrypto has answered its RSA checks
  return evaluateEvidenceSettled(
    { _tag: "tpm", quote: input.quote.trim(), nonce: utf8Bytes(input.nonce), hash_alg: "sha256", ima_measurement_list: input.imaList },
    {
      ak: base64Bytes(input.akBase64),
      tpmPolicy: emptyTpmPolicy,
      runtimePolicy: policy.right.policy,
      options: { severity: defaultSeverityPolicy, measuredBootEvaluate: "always", reportTomtou: false, bindNk: false, checkClock: false }
    },
    initialEvaluationState
  )
}

/** An EAR and the verifier's JWKS document: the status the verifier signed, or why the token does not verify. */
export const checkEar = async (token: string, jwks: string): Promise<string> => {
  const keys = keysFromJwks(jwks)
  if (Either.isLeft(keys)) return `JWKS: ${keys.left}`
  const verified = await Effect.runPromise(Effect.either(verifyEar(token, keys.right)))
  return Either.isLeft(verified) ? `not verified (${verified.left.reason}): ${verified.left.message}` : `${overallStatus(verified.right.claims)} (key ${verified.right.kid})`
}

const form = document.querySelector<HTMLFormElement>("form#quote")
const output = document.querySelector<HTMLOutputElement>("output")
form?.addEventListener("submit", (event) => {
  event.preventDefault()
  const value = (name: string) => (form.elements.namedItem(name) as HTMLTextAreaElement).value
  void judgeQuote({ quote: value("quote"), akBase64: value("ak"), nonce: value("nonce"), imaList: value("imaList"), runtimePolicy: value("runtimePolicy") }).then((r) => {
    if (output !== null) output.textContent = typeof r === "string" ? r : r.failures.length === 0 ? "valid" : r.failures.map((f) => f.type).join(", ")
  })
})
