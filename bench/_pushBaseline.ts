/**
 * The push benchmarks' baseline: the evaluator alone, in this process, on an agent's first
 * evidence (a quote of PCR 10 over a fixed challenge and its whole IMA list) against the runtime
 * policy made from that list: what a verdict cannot avoid doing. Milliseconds per evaluation.
 */
import { Effect } from "effect"
import type { MeasurementSource } from "../src/agent/measurements/MeasurementSource.js"
import { collectEvidence } from "../src/push-agent/evidence.js"
import type { Ak, Tpm } from "../src/tpm/Tpm.js"
import { defaultSeverityPolicy, emptyTpmPolicy, evaluateEvidence, initialEvaluationState } from "../src/verifier/index.js"
import { loadRuntime } from "../src/verifier/domain/policy/loadRuntime.js"
import { evidenceOf } from "../src/verifier/push/evidence.js"

export const inProcessEvaluationMs = (o: { readonly tpm: Tpm["Type"]; readonly ak: Ak; readonly source: MeasurementSource["Type"]; readonly policy: string }) =>
  Effect.gen(function*() {
    const challenge = Buffer.from(new Uint8Array(16).fill(7)).toString("base64")
    const requested = [
      { evidence_class: "certification", evidence_type: "tpm_quote", chosen_parameters: { signature_scheme: "rsassa", challenge, hash_algorithm: "sha256", selected_subjects: { sha256: [10] }, certification_key: { key_class: "asymmetric", key_size: 2048, key_algorithm: "rsa" } } },
      { evidence_class: "log", evidence_type: "ima_log", chosen_parameters: { starting_offset: 0, format: "text/plain" } }
    ] as const
    const collected = yield* Effect.orDie(collectEvidence(o.tpm, { ak: o.ak, banks: ["sha256"] }, o.source, requested as any))
    const built = evidenceOf(requested as any, collected, { bootTime: undefined })
    if (built._tag === "Left") return yield* Effect.dieMessage(`baseline evidence: ${built.left.reason}`)
    const evidence = built.right
    const compiled = loadRuntime(o.policy)
    if (compiled._tag === "Left") return yield* Effect.dieMessage("policy does not load")
    const agentPolicy = {
      ak: o.ak.public,
      accept: { hash: ["sha256"], encryption: ["rsa"], signing: ["rsassa"] },
      tpmPolicy: emptyTpmPolicy,
      runtimePolicy: compiled.right.compiled,
      options: { severity: defaultSeverityPolicy, measuredBootEvaluate: "once" as const, reportTomtou: false, bindNk: false, checkClock: true }
    }
    const check = evaluateEvidence(evidence, agentPolicy, initialEvaluationState)
    if (check.failures.length > 0) return yield* Effect.dieMessage(`baseline evidence fails: ${JSON.stringify(check.failures)}`)
    for (let i = 0; i < 200; i++) evaluateEvidence(evidence, agentPolicy, initialEvaluationState)
    const n = 1000
    const start = performance.now()
    for (let i = 0; i < n; i++) evaluateEvidence(evidence, agentPolicy, initialEvaluationState)
    return (performance.now() - start) / n
  })
