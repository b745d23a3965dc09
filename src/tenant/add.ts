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
import { UsageError } from "../cli/exitCode.js"
import { emptyTrustStore } from "../pki/chain.js"
import { formatMask, quoteMask, tpmPolicyFromJson } from "../verifier/evaluate/tpmPolicy.js"
import { pythonJsonDumps } from "../verifier/pythonJson.js"
import { OperationalState } from "../verifier/states.js"
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

export const add = (c: Connections, out: Output, o: AddOptions) =>
  Effect.gen(function*() {
    yield* checkOptions(o)
    const agentId = o.agentId
    const opts = c.settings.options
    // read every local input before anything is sent
    const runtimePolicy = Option.isSome(o.runtimePolicy) ? (yield* readFile("runtime-policy", o.runtimePolicy.value)).toString("base64") : ""
    const base64Of = (flag: string, file: Option.Option<string> | undefined) =>
      file === undefined || Option.isNone(file) ? Effect.succeed(null) : Effect.map(readFile(flag, file.value), (b) => b.toString("base64"))
    const runtimePolicyKey = yield* base64Of("runtime-policy-key", o.runtimePolicyKey)
    const runtimePolicySig = yield* base64Of("runtime-policy-sig", o.runtimePolicySig)
    const mbPolicy = Option.isSome(o.mbRefstate) ? (yield* readFile("mb-refstate", o.mbRefstate.value)).toString("utf8") : null
    const tpmPolicy = yield* tpmPolicyText(o.tpmPolicy, {
      runtimePolicy: Option.isSome(o.runtimePolicy) || Option.isSome(o.runtimePolicyName),
      measuredBoot: Option.isSome(o.mbRefstate) || Option.isSome(o.mbPolicyName)
    })
    const givenRevocationKey = Option.isSome(o.revocationKey) ? (yield* readFile("revocation-key", o.revocationKey.value)).toString("utf8") : ""
    const payloadFile = Option.isSome(o.payload) ? new Uint8Array(yield* readFile("payload", o.payload.value)) : undefined
    if (o.include.length > 0) yield* includedFiles(o.include).pipe(Effect.mapError((e) => usage(e.message)))

    const record = yield* registrarRecord(c, agentId)
    // the trust store is read only when there is a certificate to check (or one is required)
    const store = opts.require_ek_cert || record.ekcert !== null ? yield* loadEkTrustStore(opts.ek_ca_dir) : emptyTrustStore(opts.ek_ca_dir)
    const issuer = yield* checkEkCertificate(agentId, record, store, opts.require_ek_cert)
    yield* out.note(issuer === undefined ? `agent ${agentId}: no EK certificate (require_ek_cert is off)` : `agent ${agentId}: EK certificate trusted (chains to ${issuer})`)

    const ip = Option.isSome(o.ip) ? o.ip.value : record.ip
    const port = Option.isSome(o.port) ? o.port.value : record.port
    if (ip === null || port === null) return yield* usage(`agent ${agentId} registered no contact address: give --ip and --port`)
    const agent = yield* c.agent({ agentId, ip, port, mtlsCert: record.mtls_cert })
    const nonce = randomChallenge()
    const quote = yield* c.call("agent", agent.url, `identity quote of agent ${agentId}`, agent.api.quotes.identity({ urlParams: { nonce } }))
    const nk = yield* checkIdentityQuote(agentId, new Uint8Array(Buffer.from(record.aik_tpm, "base64")), nonce, quote)
    yield* out.note(`agent ${agentId}: identity quote verified with the registered AK; PCR 16 binds its NK (API ${agent.version})`)

    // the package (a certificate issued for the agent) only once the agent has proved its identity
    const pkg = Option.isSome(o.cert) ? Option.some(yield* makeCertPackage({ caDir: o.cert.value, agentId, include: o.include })) : Option.none()
    const payload = Option.isSome(pkg) ? pkg.value.zip : payloadFile
    const boot = yield* prepareBootstrap(agentId, nk, payload)
    yield* c.call("agent", agent.url, `keys/ukey of agent ${agentId}`, agent.api.keys.ukey({ payload: boot.ukey }))
    yield* out.note(`agent ${agentId}: U delivered${payload === undefined ? "" : ` with an encrypted payload of ${payload.length} bytes`}`)

    const v = yield* c.verifier
    const verifierUrl = new URL(v.url)
    const body = {
      v: boot.vBase64,
      cloudagent_ip: ip,
      cloudagent_port: port,
      verifier_ip: verifierUrl.hostname.replace(/^\[|\]$/g, ""),
      verifier_port: Number(verifierUrl.port || 443),
      tpm_policy: tpmPolicy,
      runtime_policy: runtimePolicy,
      runtime_policy_name: Option.getOrNull(o.runtimePolicyName),
      runtime_policy_key: runtimePolicyKey,
      ...(runtimePolicySig === null ? {} : { runtime_policy_sig: runtimePolicySig }),
      mb_policy: mbPolicy,
      mb_policy_name: Option.getOrNull(o.mbPolicyName),
      ima_sign_verification_keys: "",
      metadata: Option.isSome(pkg) ? pkg.value.metadata : "{}",
      revocation_key: Option.isSome(pkg) ? pkg.value.revocationKey : givenRevocationKey,
      accept_tpm_hash_algs: opts.accept_tpm_hash_algs,
      accept_tpm_encryption_algs: opts.accept_tpm_encryption_algs,
      accept_tpm_signing_algs: opts.accept_tpm_signing_algs,
      ak_tpm: record.aik_tpm,
      mtls_cert: record.mtls_cert,
      supported_version: agent.version
    }
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
        tpm_policy: tpmPolicy,
        ...(Option.isSome(pkg) ? { package: pkg.value.names, metadata: pkg.value.metadata } : {})
      },
      () => `agent ${agentId} added${o.verify ? "; V delivered and K verified at the agent" : ""}`
    )
  })

/**
 * `update`: Keylime's tenant updates an agent by deleting it at the verifier and adding it again
 * (new bootstrap keys, new policies). An agent the verifier does not hold is simply added.
 */
export const update = (c: Connections, out: Output, o: AddOptions) =>
  Effect.gen(function*() {
    yield* checkOptions(o)
    const removed = yield* removeAtVerifier(c, o.agentId).pipe(
      Effect.catchIf((e) => e.status === 404, () => Effect.succeed("absent" as const))
    )
    if (removed === "terminating") {
      return yield* new TenantError({ service: "verifier", message: `agent ${o.agentId} is still terminating at the verifier; try update again when 'attest tenant status' says it is gone` })
    }
    yield* out.note(removed === "absent" ? `agent ${o.agentId} was not at the verifier; adding it` : `agent ${o.agentId} deleted at the verifier; adding it again`)
    yield* add(c, out, o)
  })
