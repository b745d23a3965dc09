/**
 * `attest tenant add`: the complete bootstrap of a pull agent (spec §1.5, keylime-wire.md §5), in
 * Keylime's tenant's order:
 *   1. the registrar's record (the agent must be active: registered and activated);
 *   2. its EK certificate against the manufacturer trust store (`ek_ca_dir`, `require_ek_cert`);
 *   3. an identity quote from the agent over a fresh nonce, checked with the registered AK, and the
 *      PCR 16 binding of the NK it answers with;
 *   4. K = U xor V, the payload (a file, or a certificate package) encrypted with K, U to the agent
 *      (`keys/ukey` with auth_tag), wrapped for that NK;
 *   5. V, the policies, the AK and mTLS certificate to the verifier (POST agents/<id>);
 *   6. with --verify: wait for the verifier to deliver V, then `keys/verify` must answer
 *      HMAC(K, challenge); a wrong HMAC stops the agent at the verifier.
 */
import * as fs from "node:fs"
import { Data, Duration, Effect, Either, Option, Ref, Schedule } from "effect"
import { UsageError } from "../config/usageError.js"
import { emptyTrustStore } from "../pki/chain.js"
import { formatMask, quoteMask, tpmPolicyFromJson } from "../attestation/evaluate/tpmPolicy.js"
import { pythonJsonDumps } from "../attestation/pythonJson.js"
import { OperationalState } from "../attestation/states.js"
import { removeAtVerifier, verifierStatus } from "./agentCommands.js"
import { stateLabel } from "./agentStatus.js"
import { prepareBootstrap, randomChallenge, verifyHmac } from "./bootstrap.js"
import { includedFiles, makeCertPackage } from "./certPackage.js"
import type { AgentClient, Connections } from "./connect.js"
import { checkEkCertificate, loadEkTrustStore } from "./ekCheck.js"
import { TenantError } from "./errors.js"
import { checkIdentityQuote } from "./identity.js"
import { registrarRecord } from "./registrarCommands.js"
import type { Output } from "./run.js"

export interface AddOptions {
  readonly agentId: string
  readonly ip: Option.Option<string>
  readonly port: Option.Option<number>
  readonly runtimePolicy: Option.Option<string>
  readonly runtimePolicyName: Option.Option<string>
  /** Public key (PEM or DER) that verifies a signed runtime policy (DSSE, or with --runtime-policy-sig). */
  readonly runtimePolicyKey?: Option.Option<string>
  /** Detached signature over the --runtime-policy file. */
  readonly runtimePolicySig?: Option.Option<string>
  readonly mbRefstate: Option.Option<string>
  readonly mbPolicyName: Option.Option<string>
  readonly tpmPolicy: Option.Option<string>
  readonly payload: Option.Option<string>
  readonly cert: Option.Option<string>
  readonly include: ReadonlyArray<string>
  readonly revocationKey: Option.Option<string>
  readonly verify: boolean
}

const usage = (message: string) => new UsageError({ message })

/** V has not reached the agent yet (its keys/verify answers 400). */
class NotYet extends Data.TaggedError("NotYet")<{}> {}

const readFile = (flag: string, file: string) =>
  Effect.try({ try: () => fs.readFileSync(file), catch: (e) => usage(`--${flag} ${file}: ${e instanceof Error ? e.message : String(e)}`) })

/** `tpm_policy` as Keylime's tenant sends it: the given PCR lists and a mask that also selects PCR 10 and the boot PCRs when those policies are in use. */
export const tpmPolicyText = (given: Option.Option<string>, uses: { readonly runtimePolicy: boolean; readonly measuredBoot: boolean }) =>
  Effect.gen(function*() {
    const text = Option.getOrElse(given, () => "{}")
    const doc = yield* Effect.try({ try: () => JSON.parse(text) as unknown, catch: () => usage(`--tpm-policy: not JSON: ${text}`) })
    const policy = tpmPolicyFromJson(doc)
    if (Either.isLeft(policy)) return yield* usage(`--tpm-policy: ${policy.left.message}`)
    return pythonJsonDumps({ ...(doc as Record<string, unknown>), mask: formatMask(quoteMask(policy.right, uses)) })
  })

const checkOptions = (o: AddOptions) =>
  Effect.gen(function*() {
    if (Option.isSome(o.payload) && Option.isSome(o.cert)) return yield* usage("give --payload or --cert, not both (a certificate package is the payload)")
    if (o.include.length > 0 && Option.isNone(o.cert)) return yield* usage("--include adds files to a certificate package: give --cert <ca dir> too")
    if (Option.isSome(o.revocationKey) && Option.isSome(o.cert)) return yield* usage("--cert makes the revocation key (the CA directory's RevocationNotifier); leave out --revocation-key")
    if (Option.isSome(o.ip) !== Option.isSome(o.port)) return yield* usage("give --ip and --port together (or neither: the registered address is used)")
    const key = o.runtimePolicyKey ?? Option.none()
    const sig = o.runtimePolicySig ?? Option.none()
    if ((Option.isSome(key) || Option.isSome(sig)) && Option.isNone(o.runtimePolicy)) return yield* usage("--runtime-policy-key and --runtime-policy-sig go with a --runtime-policy file")
    if (Option.isSome(sig) && Option.isNone(key)) return yield* usage("--runtime-policy-sig needs --runtime-policy-key to verify it")
  })

/**
 * Waits for V at the agent and checks K with `keys/verify` (Keylime's `do_verify`). An HMAC that does
 * not match may come from the K of an earlier enrolment while the new V is still on its way, so it
 * is asked again until `verify_timeout`; if K is still not the tenant's then (or never derived), the
 * agent is stopped at the verifier, as Keylime's tenant does, and the reason given.
 */
const verifyDelivery = (c: Connections, out: Output, agentId: string, agent: AgentClient, agentUrl: string, k: Uint8Array) =>
  Effect.gen(function*() {
    const challenge = randomChallenge()
    const o = c.settings.options
    const wrongHmac = yield* Ref.make(false)
    yield* out.note(`waiting up to ${o.verify_timeout} s for the verifier to deliver V to agent ${agentId}`)
    const attempt = Effect.gen(function*() {
      const answer = yield* c.call("agent", agentUrl, `keys/verify of agent ${agentId}`, agent.keys.verify({ urlParams: { challenge } })).pipe(
        Effect.map((r) => Option.some(r.hmac)),
        // 400 "Bootstrap key not yet available.": V has not arrived
        Effect.catchIf((e) => e.status === 400, () => Effect.succeed(Option.none<string>()))
      )
      if (Option.isSome(answer) && verifyHmac(k, challenge, answer.value)) return
      yield* Ref.set(wrongHmac, Option.isSome(answer))
      const s = yield* verifierStatus(c, agentId)
      const state = s.operational_state
      if (state === OperationalState.FAILED || state === OperationalState.INVALID_QUOTE || state === OperationalState.TENANT_FAILED || state === OperationalState.TERMINATED) {
        return yield* new TenantError({
          service: "verifier",
          message: `agent ${agentId}: the verifier did not deliver V: it is in state ${stateLabel(state)}${s.last_event_id ? ` after ${s.last_event_id}` : ""}`
        })
      }
      return yield* new NotYet()
    })
    const verified = yield* attempt.pipe(
      Effect.retry({ while: (e) => e instanceof NotYet, schedule: Schedule.spaced(Duration.seconds(o.retry_interval)) }),
      Effect.catchTag("NotYet", () => Effect.dieMessage("unreachable: retried while not yet delivered")),
      Effect.timeoutOption(Duration.seconds(o.verify_timeout))
    )
    if (Option.isSome(verified)) return
    const v = yield* c.verifier
    yield* c.call("verifier", v.url, `stop agent ${agentId}`, v.api.agents.stop({ path: { agent_id: agentId } }))
    return yield* new TenantError({
      service: "agent",
      message: (yield* Ref.get(wrongHmac))
        ? `agent ${agentId}: keys/verify answered an HMAC that does not match K (the V it holds is not the tenant's); the agent has been stopped at the verifier`
        : `agent ${agentId}: K was not derived at the agent within ${o.verify_timeout} s (V not delivered, or not the tenant's); the agent has been stopped at the verifier`
    })
  })

/** Every local input of an enrolment, read before anything is sent. */
interface LocalInputs {
  readonly runtimePolicy: string
  readonly runtimePolicyKey: string | null
  readonly runtimePolicySig: string | null
  readonly mbPolicy: string | null
  readonly tpmPolicy: string
  readonly revocationKey: string
  readonly payloadFile: Uint8Array | undefined
}

const readInputs = (o: AddOptions) =>
  Effect.gen(function*() {
    const runtimePolicy = Option.isSome(o.runtimePolicy) ? (yield* readFile("runtime-policy", o.runtimePolicy.value)).toString("base64") : ""
    const base64Of = (flag: string, file: Option.Option<string> | undefined) =>
      file === undefined || Option.isNone(file) ? Effect.succeed(null) : Effect.map(readFile(flag, file.value), (b) => b.toString("base64"))
    const inputs: LocalInputs = {
      runtimePolicy,
      runtimePolicyKey: yield* base64Of("runtime-policy-key", o.runtimePolicyKey),
      runtimePolicySig: yield* base64Of("runtime-policy-sig", o.runtimePolicySig),
      mbPolicy: Option.isSome(o.mbRefstate) ? (yield* readFile("mb-refstate", o.mbRefstate.value)).toString("utf8") : null,
      tpmPolicy: yield* tpmPolicyText(o.tpmPolicy, {
        runtimePolicy: Option.isSome(o.runtimePolicy) || Option.isSome(o.runtimePolicyName),
        measuredBoot: Option.isSome(o.mbRefstate) || Option.isSome(o.mbPolicyName)
      }),
      revocationKey: Option.isSome(o.revocationKey) ? (yield* readFile("revocation-key", o.revocationKey.value)).toString("utf8") : "",
      payloadFile: Option.isSome(o.payload) ? new Uint8Array(yield* readFile("payload", o.payload.value)) : undefined
    }
    if (o.include.length > 0) yield* includedFiles(o.include).pipe(Effect.mapError((e) => usage(e.message)))
    return inputs
  })

/** The verifier's creation body as Keylime's tenant sends it (spec §2.3), for a pull or a push agent. */
const creationBody = (
  c: Connections,
  v: { readonly url: string },
  o: AddOptions,
  inputs: LocalInputs,
  agent: {
    readonly ip: string
    readonly port: number
    readonly akTpm: string
    readonly mtlsCert: string | null
    readonly v: string | null
    readonly supportedVersion?: string | undefined
    readonly metadata: string
    readonly revocationKey: string
    readonly push: boolean
  }
) => {
  const opts = c.settings.options
  const verifierUrl = new URL(v.url)
  return {
    ...(agent.v === null ? {} : { v: agent.v }),
    cloudagent_ip: agent.ip,
    cloudagent_port: agent.port,
    verifier_ip: verifierUrl.hostname.replace(/^\[|\]$/g, ""),
    verifier_port: Number(verifierUrl.port || 443),
    tpm_policy: inputs.tpmPolicy,
    runtime_policy: inputs.runtimePolicy,
    runtime_policy_name: Option.getOrNull(o.runtimePolicyName),
    runtime_policy_key: inputs.runtimePolicyKey,
    ...(inputs.runtimePolicySig === null ? {} : { runtime_policy_sig: inputs.runtimePolicySig }),
    mb_policy: inputs.mbPolicy,
    mb_policy_name: Option.getOrNull(o.mbPolicyName),
    ima_sign_verification_keys: "",
    metadata: agent.metadata,
    revocation_key: agent.revocationKey,
    accept_tpm_hash_algs: opts.accept_tpm_hash_algs,
    accept_tpm_encryption_algs: opts.accept_tpm_encryption_algs,
    accept_tpm_signing_algs: opts.accept_tpm_signing_algs,
    ak_tpm: agent.akTpm,
    mtls_cert: agent.mtlsCert,
    ...(agent.supportedVersion === undefined ? {} : { supported_version: agent.supportedVersion }),
    ...(agent.push ? { attestation_model: "push" as const } : {})
  }
}

/** The registrar's record with its EK certificate checked against `ek_ca_dir`. */
const trustedRecord = (c: Connections, out: Output, agentId: string, waitForRegistration?: Duration.Duration) =>
  Effect.gen(function*() {
    const opts = c.settings.options
    const record = yield* (waitForRegistration === undefined ? registrarRecord(c, agentId) : registrarRecord(c, agentId).pipe(
      // an agent just started registers on its own: its record is there once it has activated (404 until then)
      Effect.retry({ while: (e) => e.status === 404, schedule: Schedule.spaced(Duration.millis(200)) }),
      Effect.timeoutFail({
        duration: waitForRegistration,
        onTimeout: () => new TenantError({ service: "registrar", message: `agent ${agentId}: not registered and activated within ${Duration.format(waitForRegistration)}` })
      })
    ))
    // the trust store is read only when there is a certificate to check (or one is required)
    const store = opts.require_ek_cert || record.ekcert !== null ? yield* loadEkTrustStore(opts.ek_ca_dir) : emptyTrustStore(opts.ek_ca_dir)
    const issuer = yield* checkEkCertificate(agentId, record, store, opts.require_ek_cert)
    yield* out.note(issuer === undefined ? `agent ${agentId}: no EK certificate (require_ek_cert is off)` : `agent ${agentId}: EK certificate trusted (chains to ${issuer})`)
    return record
  })

/**
 * Everything an enrolment needs, checked, read and built before anything changes anywhere: the
 * options, the local files, the registrar's record and EK certificate, the agent's identity quote
 * (its NK), and the payload (a certificate package is issued only for an agent that proved its
 * identity). `update` deletes the agent at the verifier only once this has succeeded.
 */
const prepare = (c: Connections, out: Output, o: AddOptions) =>
  Effect.gen(function*() {
    yield* checkOptions(o)
    const agentId = o.agentId
    const inputs = yield* readInputs(o)
    const record = yield* trustedRecord(c, out, agentId)
    const ip = Option.isSome(o.ip) ? o.ip.value : record.ip
    const port = Option.isSome(o.port) ? o.port.value : record.port
    if (ip === null || port === null) return yield* usage(`agent ${agentId} registered no contact address: give --ip and --port`)
    const agent = yield* c.agent({ agentId, ip, port, mtlsCert: record.mtls_cert })
    const nonce = randomChallenge()
    const quote = yield* c.call("agent", agent.url, `identity quote of agent ${agentId}`, agent.api.quotes.identity({ urlParams: { nonce } }))
    const nk = yield* checkIdentityQuote(agentId, new Uint8Array(Buffer.from(record.aik_tpm, "base64")), nonce, quote)
    yield* out.note(`agent ${agentId}: identity quote verified with the registered AK; PCR 16 binds its NK (API ${agent.version})`)
    const pkg = Option.isSome(o.cert) ? Option.some(yield* makeCertPackage({ caDir: o.cert.value, agentId, include: o.include })) : Option.none()
    return { inputs, record, ip, port, agent, nk, pkg }
  })

type Prepared = Effect.Effect.Success<ReturnType<typeof prepare>>

/** The enrolment itself: U (with the payload) to the agent, V and the policies to the verifier, then --verify. */
const commit = (c: Connections, out: Output, o: AddOptions, p: Prepared) =>
  Effect.gen(function*() {
    const agentId = o.agentId
    const { agent, inputs, pkg } = p
    const payload = Option.isSome(pkg) ? pkg.value.zip : inputs.payloadFile
    const boot = yield* prepareBootstrap(agentId, p.nk, payload)
    yield* c.call("agent", agent.url, `keys/ukey of agent ${agentId}`, agent.api.keys.ukey({ payload: boot.ukey }))
    yield* out.note(`agent ${agentId}: U delivered${payload === undefined ? "" : ` with an encrypted payload of ${payload.length} bytes`}`)

    const v = yield* c.verifier
    const body = creationBody(c, v, o, inputs, {
      ip: p.ip,
      port: p.port,
      akTpm: p.record.aik_tpm,
      mtlsCert: p.record.mtls_cert,
      v: boot.vBase64,
      supportedVersion: agent.version,
      metadata: Option.isSome(pkg) ? pkg.value.metadata : "{}",
      revocationKey: Option.isSome(pkg) ? pkg.value.revocationKey : inputs.revocationKey,
      push: false
    })
    yield* c.call("verifier", v.url, `add agent ${agentId}`, v.api.agents.add({ path: { agent_id: agentId }, payload: body }))
    yield* out.note(`agent ${agentId}: added to the verifier at ${v.url} (API ${v.version}) with V and its policies`)
    if (o.verify) yield* verifyDelivery(c, out, agentId, agent.api, agent.url, boot.k)
    yield* out.show(
      {
        agent_id: agentId,
        added: true,
        verified: o.verify,
        agent_api_version: agent.version,
        verifier_api_version: v.version,
        registrar_api_version: (yield* c.registrar).version,
        tpm_policy: inputs.tpmPolicy,
        ...(Option.isSome(pkg) ? { package: pkg.value.names, metadata: pkg.value.metadata } : {})
      },
      () => `agent ${agentId} added${o.verify ? "; V delivered and K verified at the agent" : ""}`
    )
  })

export const add = (c: Connections, out: Output, o: AddOptions) => Effect.flatMap(prepare(c, out, o), (p) => commit(c, out, o, p))

/**
 * `update`: Keylime's tenant updates an agent by deleting it at the verifier and adding it again
 * (new bootstrap keys, new policies). Everything is checked and built first (options, files, the
 * registrar's record, the agent's identity, a certificate package), so a bad input leaves the agent
 * enrolled as it was; an agent the verifier does not hold is simply added.
 */
export const update = (c: Connections, out: Output, o: AddOptions) =>
  Effect.gen(function*() {
    const prepared = yield* prepare(c, out, o)
    yield* removeForUpdate(c, out, o.agentId)
    yield* commit(c, out, o, prepared)
  })

const removeForUpdate = (c: Connections, out: Output, agentId: string) =>
  Effect.gen(function*() {
    const removed = yield* removeAtVerifier(c, agentId).pipe(
      Effect.catchIf((e) => e.status === 404, () => Effect.succeed("absent" as const))
    )
    if (removed === "terminating") {
      return yield* new TenantError({ service: "verifier", message: `agent ${agentId} is still terminating at the verifier; try update again when 'attest tenant status' says it is gone` })
    }
    yield* out.note(removed === "absent" ? `agent ${agentId} was not at the verifier; adding it` : `agent ${agentId} deleted at the verifier; adding it again`)
  })

/** What `add --push` takes besides the shared options. */
export interface PushAddOptions {
  /** Wait this long for the agent to register and activate (an agent just started), instead of failing at once. */
  readonly waitForRegistration?: Duration.Duration
}

const checkPushOptions = (o: AddOptions) =>
  Effect.gen(function*() {
    const refuse = (flag: string, why: string) => usage(`--push: leave out ${flag}: ${why}`)
    if (Option.isSome(o.payload) || Option.isSome(o.cert) || o.include.length > 0) {
      return yield* refuse(Option.isSome(o.payload) ? "--payload" : Option.isSome(o.cert) ? "--cert" : "--include", "a push agent gets no payload (it listens on no port; the tenant never sends it U)")
    }
    if (o.verify) return yield* refuse("--verify", "a push agent holds no bootstrap key to check")
    if (Option.isSome(o.ip) || Option.isSome(o.port)) return yield* refuse(Option.isSome(o.ip) ? "--ip" : "--port", "the verifier never contacts a push agent")
    const key = o.runtimePolicyKey ?? Option.none()
    const sig = o.runtimePolicySig ?? Option.none()
    if ((Option.isSome(key) || Option.isSome(sig)) && Option.isNone(o.runtimePolicy)) return yield* usage("--runtime-policy-key and --runtime-policy-sig go with a --runtime-policy file")
    if (Option.isSome(sig) && Option.isNone(key)) return yield* usage("--runtime-policy-sig needs --runtime-policy-key to verify it")
  })

/**
 * `attest tenant add --push` (Keylime's `--push-model`, push-model.md §2.4): enrols a push agent,
 * contacting no agent: the registrar's record (registered and activated), its EK certificate
 * against `ek_ca_dir`, then the verifier's creation body with `attestation_model: push` (attest's
 * addition: never polled, no agent certificate), the registered AK and the policies; no V (a push
 * agent gets no payload). `attest up --push` enrols its push agents with it.
 */
export const addPush = (c: Connections, out: Output, o: AddOptions, p: PushAddOptions = {}) =>
  Effect.flatMap(preparePush(c, out, o, p), (prepared) => commitPush(c, out, o, prepared))

/** `update --push`: everything checked and read first, then delete at the verifier and add again as a push agent. */
export const updatePush = (c: Connections, out: Output, o: AddOptions) =>
  Effect.gen(function*() {
    const prepared = yield* preparePush(c, out, o, {})
    yield* removeForUpdate(c, out, o.agentId)
    yield* commitPush(c, out, o, prepared)
  })

const preparePush = (c: Connections, out: Output, o: AddOptions, p: PushAddOptions) =>
  Effect.gen(function*() {
    yield* checkPushOptions(o)
    const inputs = yield* readInputs(o)
    const record = yield* trustedRecord(c, out, o.agentId, p.waitForRegistration)
    return { inputs, record }
  })

const commitPush = (c: Connections, out: Output, o: AddOptions, p: Effect.Effect.Success<ReturnType<typeof preparePush>>) =>
  Effect.gen(function*() {
    const agentId = o.agentId
    const v = yield* c.verifier
    const body = creationBody(c, v, o, p.inputs, {
      // Keylime's body requires an address; the verifier stores none for a push agent
      ip: p.record.ip ?? "127.0.0.1",
      port: p.record.port ?? 9002,
      akTpm: p.record.aik_tpm,
      mtlsCert: null,
      v: null,
      metadata: "{}",
      revocationKey: p.inputs.revocationKey,
      push: true
    })
    yield* c.call("verifier", v.url, `add push agent ${agentId}`, v.api.agents.add({ path: { agent_id: agentId }, payload: body }))
    yield* out.note(`agent ${agentId}: added to the verifier at ${v.url} (API ${v.version}) as a push agent with its policies`)
    yield* out.show(
      { agent_id: agentId, added: true, attestation_model: "push", verifier_api_version: v.version, tpm_policy: p.inputs.tpmPolicy },
      () => `agent ${agentId} added as a push agent (it sends its evidence to ${v.url}; attest tenant status shows its attestations)`
    )
  })
