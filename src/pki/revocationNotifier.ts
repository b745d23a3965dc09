/**
 * The revocation notifier's key pair in the CA directory (Keylime `ca_util`'s "RevocationNotifier"
 * certificate): the verifier signs revocation messages with its private key (given to the verifier
 * as an agent's `revocation_key`), and agents check them with its certificate, which the tenant
 * puts in every certificate package. A signing certificate without extended key usage, so it can
 * never pass as an administrator's client certificate (spec §5.2.5).
 */
import * as path from "node:path"
import { Effect } from "effect"
import { certFile, issueLeaf, keyFile, loadCa } from "./ca.js"
import { exists, readText } from "./files.js"

export const REVOCATION_NOTIFIER = "RevocationNotifier"

export interface RevocationNotifier {
  readonly certPath: string
  readonly keyPath: string
  readonly certificatePem: string
  readonly privateKeyPem: string
  /** false when the pair was already there. */
  readonly created: boolean
}

/** Loads the pair from `dir`, issuing it from the CA there first when it is missing. */
export const ensureRevocationNotifier = Effect.fn("Ca.revocationNotifier")(function*(dir: string) {
  const certPath = path.join(dir, certFile(REVOCATION_NOTIFIER))
  const keyPath = path.join(dir, keyFile(REVOCATION_NOTIFIER))
  const present = (yield* exists(certPath)) && (yield* exists(keyPath))
  if (!present) {
    const ca = yield* loadCa(dir)
    yield* issueLeaf(ca, { name: REVOCATION_NOTIFIER, commonName: REVOCATION_NOTIFIER, usage: "signing" })
  }
  return {
    certPath,
    keyPath,
    certificatePem: yield* readText(certPath),
    privateKeyPem: yield* readText(keyPath),
    created: !present
  } satisfies RevocationNotifier
})
