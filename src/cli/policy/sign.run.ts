/** How `attest policy sign` runs: validate the policy, check key and certificate, write the DSSE envelope. */
import * as crypto from "node:crypto"
import { Effect, Either, Option } from "effect"
import { signEnvelope } from "../../ima/dsseSign.js"
import { cliFail, readBytes, readCompiledPolicy, readText, reportErrors, writeOutput } from "./runtimeCommon.js"

const tryEither = <A>(f: () => A) => Either.try({ try: f, catch: (e) => (e instanceof Error ? e.message : String(e)) })

export const run = (o: { readonly policy: string; readonly key: string; readonly cert: Option.Option<string>; readonly output: Option.Option<string> }) =>
  Effect.gen(function*() {
    yield* readCompiledPolicy(o.policy) // refuse to sign what the verifier would not load
    const payload = yield* readBytes(o.policy)
    const keyPem = yield* readText(o.key)
    const privateKey = tryEither(() => crypto.createPrivateKey(keyPem))
    if (Either.isLeft(privateKey)) return yield* cliFail(`${o.key} is not a private key: ${privateKey.left}`)
    if (privateKey.right.asymmetricKeyType !== "ec") return yield* cliFail(`${o.key} is a ${privateKey.right.asymmetricKeyType} key; DSSE policy signing uses ECDSA`)
    if (Option.isSome(o.cert)) {
      const certPem = yield* readText(o.cert.value)
      const x509 = tryEither(() => new crypto.X509Certificate(certPem))
      if (Either.isLeft(x509)) return yield* cliFail(`${o.cert.value} is not an X.509 certificate: ${x509.left}`)
      if (!x509.right.publicKey.equals(crypto.createPublicKey(privateKey.right))) {
        return yield* cliFail(`${o.cert.value} does not certify the key in ${o.key}`)
      }
    }
    const env = signEnvelope(payload, privateKey.right)
    if (Either.isLeft(env)) return yield* cliFail(env.left.message)
    yield* writeOutput(o.output, JSON.stringify(env.right))
  }).pipe(reportErrors("sign"))
