/**
 * The messages between the verifier and its stateless-check workers (Effect's serialized worker
 * protocol): the settings once per worker, then one request per verify/evidence or verify/identity.
 * Request and answer bodies are transferred, not copied (Transferable.Uint8Array).
 */
import { Transferable } from "@effect/platform"
import { Schema } from "effect"
import { VerifyIdentityResult } from "../../../schemas/Evidence.js"

const Stage = Schema.Struct({ stage: Schema.Literal("quote", "pcrs", "ima", "boot"), start: Schema.Number, end: Schema.Number })

/** An ARK/ASK pair of one product line, as DER (the worker reads them again). */
const RootPair = Schema.Struct({ product: Schema.String, ark: Schema.Uint8ArrayFromSelf, ask: Schema.Uint8ArrayFromSelf })

/** What every worker is given when it starts: the `[verifier]` options it reads and the SEV-SNP roots. */
export class WorkerSettings extends Schema.TaggedRequest<WorkerSettings>()("InitialMessage", {
  failure: Schema.String,
  success: Schema.Void,
  payload: {
    severity_labels: Schema.Array(Schema.String),
    severity_policy: Schema.String,
    measured_boot_policy_name: Schema.String,
    ignore_tomtou_errors: Schema.Boolean,
    snp_vcek_dir: Schema.String,
    policyCacheEntries: Schema.Int,
    snpRoots: Schema.Array(RootPair),
    /** The worker thread's niceness (Linux; 0 leaves the process's). */
    nice: Schema.Int
  }
}) {}

export const EvidenceJudgementSchema = Schema.Struct({
  status: Schema.Int,
  body: Transferable.Uint8Array,
  verdict: Schema.optional(Schema.Struct({
    valid: Schema.Boolean,
    failureTypes: Schema.Array(Schema.String),
    /** Milliseconds on the wall clock's origin (performance.timeOrigin + now): threads' monotonic clocks differ. */
    stages: Schema.Array(Stage),
    ear: Schema.optional(Schema.Unknown)
  }))
})

/** POST verify/evidence: the body as received. */
export class JudgeEvidence extends Schema.TaggedRequest<JudgeEvidence>()("JudgeEvidence", {
  failure: Schema.Never,
  success: EvidenceJudgementSchema,
  payload: {
    body: Transferable.Uint8Array,
    version: Schema.String,
    wantsEar: Schema.Boolean,
    /** The server's wall clock (ms): SEV-SNP certificates are judged at this time. */
    now: Schema.Number
  }
}) {}

/** GET verify/identity once the agent's AK was read: `{valid: 1}` or `{valid: 0, reason}`. */
export class CheckIdentity extends Schema.TaggedRequest<CheckIdentity>()("CheckIdentity", {
  failure: Schema.Never,
  success: VerifyIdentityResult,
  payload: {
    ak: Schema.Uint8ArrayFromSelf,
    agent_uuid: Schema.String,
    quote: Schema.String,
    nonce: Schema.String,
    hash_alg: Schema.String
  }
}) {}

export const StatelessRequest = Schema.Union(WorkerSettings, JudgeEvidence, CheckIdentity)
export type StatelessRequest = typeof StatelessRequest.Type
