/**
 * `attest up` enrols its push agents as an operator enrols a push agent with Keylime (push-model.md
 * §2.4: the tenant's `--push-model`, which contacts no agent): the registrar's record (the agent
 * must have registered and activated), its EK certificate against the manufacturer trust store,
 * then `POST /v2.x/agents/<id>` at the verifier with `attestation_model: push` (attest's addition:
 * never polled, no agent certificate), the registered AK, a runtime policy from the machine's IMA
 * list and a reference state from its boot log, and no V (a push agent gets no payload). An agent
 * the verifier already holds (a restart) is left as it is.
 */
import { Duration, Effect, Option, Schedule } from "effect"
import { tpmPolicyText } from "../../tenant/add.js"
import { verifierStatus } from "../../tenant/agentCommands.js"
import type { Connections } from "../../tenant/connect.js"
import { checkEkCertificate, loadEkTrustStore } from "../../tenant/ekCheck.js"
import { registrarRecord } from "../../tenant/registrarCommands.js"
import * as fs from "node:fs"
import { writeMachinePolicies } from "./policies.js"
import type { UpPushAgent } from "./pushAgents.js"

/** How long an agent may take to register and activate before its enrolment is given up. */
const REGISTRATION_WAIT = Duration.seconds(120)

const enrolOne = (c: Connections, a: UpPushAgent, say: (line: string) => Effect.Effect<void>) =>
  Effect.gen(function*() {
    const known = yield* verifierStatus(c, a.agentId).pipe(Effect.option)
    if (Option.isSome(known)) {
      yield* say(`agent ${a.n}  ${a.agentId}  push, already at the verifier (${"attestation_status" in known.value ? known.value.attestation_status : "status unknown"}): resumed`)
      return
    }
    // the agent registers on its own: its record is there once it has activated (404 until then)
    const record = yield* registrarRecord(c, a.agentId).pipe(
      Effect.retry({ while: (e) => e.status === 404, schedule: Schedule.spaced(Duration.millis(200)) }),
      Effect.timeoutFail({ duration: REGISTRATION_WAIT, onTimeout: () => new Error(`not registered and activated within ${Duration.format(REGISTRATION_WAIT)}`) })
    )
    const opts = c.settings.options
    yield* checkEkCertificate(a.agentId, record, yield* loadEkTrustStore(opts.ek_ca_dir), opts.require_ek_cert)
    const files = yield* writeMachinePolicies(a.source, a.dir)
    const v = yield* c.verifier
    const verifierUrl = new URL(v.url)
    const body = {
      cloudagent_ip: record.ip ?? "127.0.0.1",
      cloudagent_port: record.port ?? 9002,
      verifier_ip: verifierUrl.hostname.replace(/^\[|\]$/g, ""),
      verifier_port: Number(verifierUrl.port || 443),
      tpm_policy: yield* tpmPolicyText(Option.none(), { runtimePolicy: true, measuredBoot: true }),
      runtime_policy: fs.readFileSync(files.runtimePolicy).toString("base64"),
      runtime_policy_name: null,
      runtime_policy_key: null,
      mb_policy: fs.readFileSync(files.mbRefstate, "utf8"),
      mb_policy_name: null,
      ima_sign_verification_keys: "",
      metadata: "{}",
      revocation_key: "",
      accept_tpm_hash_algs: opts.accept_tpm_hash_algs,
      accept_tpm_encryption_algs: opts.accept_tpm_encryption_algs,
      accept_tpm_signing_algs: opts.accept_tpm_signing_algs,
      ak_tpm: record.aik_tpm,
      mtls_cert: null,
      attestation_model: "push"
    }
    yield* c.call("verifier", v.url, `add push agent ${a.agentId}`, v.api.agents.add({ path: { agent_id: a.agentId }, payload: body as never }))
    yield* say(`agent ${a.n}  ${a.agentId}  push, enrolled at the verifier (runtime policy from its IMA list, reference state from its boot log)`)
  })

/** Enrols every push agent the verifier does not hold yet; gives how many are there. */
export const enrolPush = (c: Connections, agents: ReadonlyArray<UpPushAgent>, say: (line: string) => Effect.Effect<void>) =>
  Effect.forEach(
    agents,
    (a) =>
      enrolOne(c, a, say).pipe(
        Effect.as(true),
        Effect.catchAll((e) => Effect.as(say(`agent ${a.n}  ${a.agentId}  push, not enrolled: ${e.message}`), false))
      ),
    { concurrency: "unbounded" }
  ).pipe(Effect.map((ok) => ok.filter((x) => x).length))
