/** The tenant's text output and its --state filter: aligned tables, ages, state names and numbers. */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Either } from "effect"
import { parseStateFilter, statusText } from "../../src/tenant/agentCommands.js"
import { failureText, stateLabel, stateText, verdictOf } from "../../src/tenant/agentStatus.js"
import { age, fields, table } from "../../src/tenant/render.js"
import { elsewhere } from "../../src/tenant/settings.js"
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"

describe("tenant output", () => {
  it("tables pad every column but the last; fields align their keys", () => {
    expect(table(["agent", "state", "n"], [["a", "Get Quote (3)", "12"], ["bbbbbb", "Failed (7)", "0"]]).split("\n")).toEqual([
      "agent   state          n",
      "a       Get Quote (3)  12",
      "bbbbbb  Failed (7)     0"
    ])
    expect(fields([["state", "Start (1)"], ["last success", "never"]])).toEqual("state:        Start (1)\nlast success: never")
  })

  it("ages from epoch seconds; 0 and null are never", () => {
    expect([age(1000, 0), age(1000, null), age(1000, 997), age(10_000, 10_000 - 600), age(100_000, 100_000 - 7200 * 2), age(1_000_000, 1_000_000 - 86_400 * 3)]).toEqual(
      ["never", "never", "3 s ago", "10 min ago", "4 h ago", "3 d ago"]
    )
  })

  it.effect("--state takes a number or Keylime's state name; anything else is a usage error listing them", () =>
    Effect.gen(function*() {
      expect(yield* parseStateFilter("3")).toEqual({ state: 3 })
      expect(yield* parseStateFilter("get quote")).toEqual({ state: 3 })
      expect(yield* parseStateFilter("GET_QUOTE_RETRY")).toEqual({ state: 4 })
      expect(yield* parseStateFilter("Tenant Quote Failed")).toEqual({ state: 10 })
      // a push agent's state is its acceptance
      expect(yield* parseStateFilter("timeout")).toEqual({ acceptance: "TIMEOUT" })
      expect(yield* parseStateFilter("FAIL")).toEqual({ acceptance: "FAIL" })
      const bad = yield* Effect.either(parseStateFilter("11"))
      expect(Either.isLeft(bad) && bad.left.message).toMatch(/^--state 11: not a state; one of 0 Registered, 1 Start, .*10 Tenant Quote Failed, or an attestation status PASS, FAIL, TIMEOUT, PENDING$/)
      expect(stateLabel(9)).toEqual("Invalid Quote (9)")
    }))

  const base = {
    operational_state: 3, v: null, ip: "127.0.0.1", port: 9002, tpm_policy: "{}", meta_data: "{}", has_mb_refstate: 1, has_runtime_policy: 1,
    accept_tpm_hash_algs: ["sha256"], accept_tpm_encryption_algs: ["rsa"], accept_tpm_signing_algs: ["rsassa"], hash_alg: "sha256", enc_alg: "rsa2048",
    sign_alg: "rsassa", verifier_id: "default", verifier_ip: "127.0.0.1", verifier_port: 8881, severity_level: null, last_event_id: null,
    attestation_count: 5, last_received_quote: 990, last_successful_attestation: 990, attestation_status: "PASS", attestation_period: "2s", maximum_attestation_interval: "10s"
  } as const

  it("status of a failed push agent: its model, acceptance, latest verdict and the failure with its reason; no address", () => {
    const push = {
      ...base, ip: null, port: null, attestation_status: "FAIL", attestation_model: "push", last_evaluation: "fail", last_attestation_index: 6,
      last_event_id: "ima.validation.ima-ng.not_in_allowlist", last_event_message: "File not found in allowlist: /usr/bin/evil (entry 7)",
      last_failure_reason: "policy_violation", last_failure_at: 995
    } as const
    expect(statusText("p", push, 1_000).split("\n")).toEqual([
      "agent:            p",
      "model:            push (sends its evidence, API 3.0)",
      "state:            FAIL",
      "latest verdict:   fail (attestation 6)",
      "attestations:     5",
      "last success:     10 s ago",
      "last attestation: 10 s ago",
      "last failure:     policy_violation: ima.validation.ima-ng.not_in_allowlist: File not found in allowlist: /usr/bin/evil (entry 7) (5 s ago)",
      "algorithms:       sha256, rsa2048, rsassa",
      "verifier:         default (127.0.0.1:8881)"
    ])
    expect([stateText(push), verdictOf(push), stateText({ ...push, attestation_status: "TIMEOUT" })]).toEqual(["FAIL (push)", "fail", "TIMEOUT (push)"])
  })

  it("status of a pull agent: operational state, the verdict of its latest quote, its address", () => {
    const failed = { ...base, last_received_quote: 995, last_event_id: "ima.validation.ima-ng.not_in_allowlist", severity_level: 1 } as const
    const text = statusText("a", failed, 1_000).split("\n")
    expect(text.filter((l) => /^(model|state|latest verdict|last failure|address):/.test(l))).toEqual([
      "model:          pull (the verifier asks it for quotes)",
      "state:          Get Quote (3)",
      "latest verdict: fail",
      "last failure:   ima.validation.ima-ng.not_in_allowlist (severity 1)",
      "address:        127.0.0.1:9002"
    ])
    expect(failureText(base)).toBeNull()
  })

  it("a tenant without its CA directory names the one attest up made, when there is one", () => {
    const dir = mkdtempSync(join(tmpdir(), "attest-tenant-ca-hint-"))
    try {
      const server = { ca_dir: "/var/lib/attest/cv_ca", tls_dir: "default" }
      expect(elsewhere(server, dir)).toBeUndefined()
      mkdirSync(join(dir, ".attest", "cv_ca"), { recursive: true })
      writeFileSync(join(dir, ".attest", "cv_ca", "cacert.crt"), "")
      expect(elsewhere(server, dir)).toEqual(
        `/var/lib/attest/cv_ca holds no cacert.crt; attest up made a CA with an admin certificate in ${join(dir, ".attest", "cv_ca")}: set ATTEST_TENANT_CA_DIR=.attest/cv_ca (or ca_dir in [tenant] of --config)`
      )
      expect(elsewhere({ ca_dir: ".attest/cv_ca", tls_dir: "default" }, dir)).toBeUndefined()
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
