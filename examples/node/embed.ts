/**
 * An Effect app that embeds attest (docs/embedding.md): the whole verifier as a Layer beside the
 * app's own services, and the evaluator as a plain function the app calls on evidence it received
 * itself (here: a Keylime quote with its AK, nonce, IMA list and runtime policy, read from files).
 *
 *   node --import tsx examples/node/embed.ts [<dir with quote.txt, ak.pub, ima-log.txt, runtime-policy-pass.json> <nonce>]
 *
 * (by default the swtpm vector of ../shared/vectors, whose verdict is valid).
 *
 * The imports are the package's entry points as an app writes them; in this repository tsconfig's
 * `paths` maps them to the sources, so `npm run typecheck` compiles this file as users would.
 */
import { FileSystem } from "@effect/platform"
import { NodeContext, NodeRuntime } from "@effect/platform-node"
import { Console, Context, Effect, Layer } from "effect"
import { utf8Bytes } from "attest/crypto"
import {
  type AgentPolicy,
  defaultSeverityPolicy,
  emptyTpmPolicy,
  type Evaluation,
  evaluateEvidence,
  initialEvaluationState,
  type TpmEvidence
} from "attest/evaluate"
import { loadRuntimePolicy } from "attest/ima"
import { Verifier, verifierOptions } from "attest/verifier"

/** The app's own service: where verdicts go (a queue, a database, a dashboard…). */
class Verdicts extends Context.Tag("example/Verdicts")<Verdicts, { readonly record: (e: Evaluation) => Effect.Effect<void> }>() {
  static readonly Console = Layer.succeed(Verdicts, {
    record: (e) => Console.log(e.failures.length === 0 ? "valid" : `invalid: ${e.failures.map((f) => f.type).join(", ")}`)
  })
}

/** Judges one attestation with the verifier's evaluator, as verify/evidence does (no NK binding, no clock history). */
const judge = Effect.fn("example.judge")(function*(dir: string, nonce: string) {
  const fs = yield* FileSystem.FileSystem
  const policy = yield* Effect.mapError(
    Effect.flatMap(fs.readFileString(`${dir}/runtime-policy-pass.json`), (text) => loadRuntimePolicy(text)),
    (e) => new Error(`runtime policy: ${e.message}`)
  )
  const agent: AgentPolicy = {
    ak: yield* fs.readFile(`${dir}/ak.pub`),
    tpmPolicy: emptyTpmPolicy,
    runtimePolicy: policy.policy,
    options: { severity: defaultSeverityPolicy, measuredBootEvaluate: "always", reportTomtou: false, bindNk: false, checkClock: false }
  }
  const evidence: TpmEvidence = {
    _tag: "tpm",
    nonce: utf8Bytes(nonce),
    quote: (yield* fs.readFileString(`${dir}/quote.txt`)).trim(),
    hash_alg: "sha256",
    ima_measurement_list: yield* fs.readFileString(`${dir}/ima-log.txt`)
  }
  // Pure and synchronous on node:crypto; on the portable crypto port use evaluateEvidenceSettled.
  const evaluation = evaluateEvidence(evidence, agent, initialEvaluationState)
  yield* (yield* Verdicts).record(evaluation)
  return evaluation
})

/**
 * The verifier itself (HTTPS API with its generated CA, SQLite under data_dir, the EAR key, the
 * metrics listener), as one Layer from a `[verifier]` section: the app decides how long it runs.
 */
const VerifierLive = Verifier(verifierOptions({ port: 8881, tls_dir: "generate", ca_dir: "/tmp/attest-example/cv_ca", data_dir: "/tmp/attest-example/data" }))

const program = Effect.gen(function*() {
  const [dir = "../shared/vectors/keylime/generated/swtpm-quote-1", nonce = "TestNonce1234567890A"] = process.argv.slice(2)
  yield* judge(dir, nonce)
  // With a verdict in hand, the embedded verifier serves agents until the app is stopped.
  yield* Console.log("verifier listening on https://127.0.0.1:8881 (Ctrl-C stops it)")
  return yield* Effect.never
})

NodeRuntime.runMain(program.pipe(Effect.provide(Layer.mergeAll(VerifierLive, Verdicts.Console, NodeContext.layer))))
