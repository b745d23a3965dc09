/**
 * One agent on the TPM simulator and a simulated machine, over real HTTPS with client certificates:
 * quotes verified with the TPM core's verifier (PCR 16 binding, PCR 10 replay from an offset, boot
 * log replay), the bootstrap-key sequence, the reference's error texts and the mTLS refusal.
 */
import { expect, layer } from "@effect/vitest"
import { createHash, createHmac } from "node:crypto"
import { existsSync, readFileSync, statSync } from "node:fs"
import { join } from "node:path"
import { Context, Effect, Either, Layer } from "effect"
import { SimulatedMachine } from "../../src/agent/measurements/SimulatedMachine.js"
import { bootAggregates, parseEventLogBase64, replayPcrs } from "../../src/boot/index.js"
import { replayPcr10 } from "../../src/ima/replay.js"
import { authTag, encryptForAgent, encryptPayload, generateBootstrapKeys } from "../../src/keys/index.js"
import { verifyQuoteString } from "../../src/tpm/verifyQuote.js"
import { readVector, vectorPath } from "../support/vectors.js"
import { closeClients, makeTestCa, request, RunningAgent, simulatedAgentLayer, type TestCa, tempDir } from "./support.js"

const agentId = "d432fbb3-d2f1-4a97-9ef7-75bd81c00000"
const nonce = "Ka8Qz2LmN4pR7tVx9Yb1"

class Env extends Context.Tag("test/agent/Env")<Env, { readonly ca: TestCa; readonly dataDir: string; readonly otherCa: TestCa }>() {}

const TestLayer = Layer.unwrapScoped(Effect.gen(function*() {
  const dir = yield* tempDir("attest-agent-")
  const ca = yield* makeTestCa(join(dir, "ca"))
  const otherCa = yield* makeTestCa(join(dir, "other-ca"))
  const dataDir = join(dir, "agent")
  yield* Effect.addFinalizer(() => Effect.sync(closeClients))
  return simulatedAgentLayer(
    {
      agentId,
      dataDir,
      trustedClientCa: ca.caPem,
      revocationCert: readFileSync(vectorPath("rust-keylime/keylime-agent/test-data/test-cert.pem"), "utf8")
    },
    { name: "machine-1" },
    { seed: "agent-test" }
  ).pipe(Layer.merge(Layer.succeed(Env, { ca, dataDir, otherCa })))
}))

const sha256 = (...parts: Array<Uint8Array | string>) => {
  const h = createHash("sha256")
  for (const p of parts) h.update(p)
  return new Uint8Array(h.digest())
}
const hex = (b: Uint8Array | undefined) => Buffer.from(b ?? new Uint8Array()).toString("hex")

const admin = Effect.map(Env, ({ ca }) => ({ cert: ca.clientCert, key: ca.clientKey }))
const get = (path: string) =>
  Effect.gen(function*() {
    const agent = yield* RunningAgent
    return yield* request(agent, yield* admin, "GET", path)
  })
const post = (path: string, body: unknown) =>
  Effect.gen(function*() {
    const agent = yield* RunningAgent
    return yield* request(agent, yield* admin, "POST", path, body)
  })

const verify = (akPublic: Uint8Array, quote: string, n = nonce) => {
  const r = verifyQuoteString(akPublic, quote, new TextEncoder().encode(n), { hashAlg: "sha256", scheme: "rsassa" })
  if (Either.isLeft(r)) throw new Error(`quote does not verify: ${r.left.message}`)
  return r.right.pcrs.find((b) => b.hash === "sha256")!.values
}

layer(TestLayer, { timeout: 60_000, excludeTestServices: true })("pull agent on the simulator", (it) => {
  it.effect("answers /version with every served version, newest as supported_version", () =>
    Effect.gen(function*() {
      const r = yield* get("/version")
      expect(r.status).toBe(200)
      expect(r.body).toEqual({
        code: 200,
        status: "Success",
        results: { supported_version: "2.6", supported_versions: ["2.0", "2.1", "2.2", "2.3", "2.4", "2.5", "2.6"] }
      })
    }))

  // found by the agent-routes fuzzer: a target starting with "//" was read as a host and answered 500
  it.effect("answers request targets that start with // as paths: 404 or the root hint, never 500", () =>
    Effect.gen(function*() {
      expect(yield* get("//")).toEqual({ status: 404, body: { code: 404, status: "Not Found", results: {} } })
      expect(yield* get("//v2.6/agent/info")).toEqual({ status: 404, body: { code: 404, status: "Not Found", results: {} } })
    }))

  it.effect("reports agent/info with the enc_alg spelling of the requested version", () =>
    Effect.gen(function*() {
      const new_ = yield* get("/v2.5/agent/info")
      expect(new_.body.results).toEqual({ agent_uuid: agentId, tpm_hash_alg: "sha256", tpm_enc_alg: "rsa2048", tpm_sign_alg: "rsassa", ak_handle: 0 })
      expect((yield* get("/v2.3/agent/info")).body.results.tpm_enc_alg).toBe("rsa")
    }))

  it.effect("returns an integrity quote that verifies, binds the NK in PCR 16 and replays PCR 10 and the boot log", () =>
    Effect.gen(function*() {
      const agent = yield* RunningAgent
      const r = yield* get(`/v2.5/quotes/integrity?nonce=${nonce}&mask=0x4ff&partial=0`)
      expect(r.status).toBe(200)
      const res = r.body.results
      expect(res.quote.startsWith("r")).toBe(true)
      expect([res.hash_alg, res.enc_alg, res.sign_alg]).toEqual(["sha256", "rsa2048", "rsassa"])
      expect(res.ima_measurement_list_entry).toBe(0)
      const pcrs = verify(agent.akPublic, res.quote)
      expect([...pcrs.keys()]).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 10, 16])
      // PCR 16 = H(0 ‖ H(pubkey PEM)), Keylime's `_check_data_pcr`
      expect(hex(pcrs.get(16))).toBe(hex(sha256(new Uint8Array(32), sha256(res.pubkey))))
      const ima = Either.getOrThrow(replayPcr10(res.ima_measurement_list, ["sha256"]))
      expect(hex(ima["sha256"])).toBe(hex(pcrs.get(10)))
      const log = Either.getOrThrow(parseEventLogBase64(res.mb_measurement_list))
      const replayed = replayPcrs(log).find((b) => b.hash === "sha256")!.values
      for (const p of [0, 1, 2, 3, 4, 5, 6, 7]) expect(hex(replayed.get(p))).toBe(hex(pcrs.get(p)))
      // boot_aggregate, first in the list, is the kernel's H(PCR0..9) of that boot
      const first = res.ima_measurement_list.split("\n")[0]
      expect(first).toMatch(/ ima-ng sha256:[0-9a-f]{64} boot_aggregate$/)
      expect(bootAggregates(replayPcrs(log))["sha256"]).toContain(first.split(" ")[3].slice("sha256:".length))
    }))

  it.effect("serves the IMA list from ima_ml_entry, and new measurements replay from that offset", () =>
    Effect.gen(function*() {
      const agent = yield* RunningAgent
      const machine = yield* SimulatedMachine
      const full = (yield* get(`/v2.5/quotes/integrity?nonce=${nonce}&mask=0x400&partial=1`)).body.results
      expect(full.pubkey).toBeUndefined()
      expect(full.mb_measurement_list).toBeUndefined()
      const known: number = full.ima_measurement_list.split("\n").filter((l: string) => l !== "").length
      const before = Either.getOrThrow(replayPcr10(full.ima_measurement_list, ["sha256"]))["sha256"]!

      yield* machine.measure("/usr/bin/evil", "evil bytes")
      yield* machine.measure("/tmp/dropper", "sha256:" + "ab".repeat(32))
      const next = (yield* get(`/v2.5/quotes/integrity?nonce=${nonce}&mask=0x400&partial=1&ima_ml_entry=${known}`)).body.results
      expect(next.ima_measurement_list_entry).toBe(known)
      const lines = next.ima_measurement_list.trim().split("\n")
      expect(lines).toHaveLength(2)
      expect(lines[0]).toMatch(/ \/usr\/bin\/evil$/)
      expect(lines[1]).toContain(`sha256:${"ab".repeat(32)} /tmp/dropper`)
      const pcrs = verify(agent.akPublic, next.quote)
      const replayed = Either.getOrThrow(replayPcr10(next.ima_measurement_list, ["sha256"], { sha256: before }))
      expect(hex(replayed["sha256"])).toBe(hex(pcrs.get(10)))

      // up to date: empty list at that entry; beyond the end: the whole list from 0
      const upToDate = (yield* get(`/v2.5/quotes/integrity?nonce=${nonce}&mask=0x400&partial=1&ima_ml_entry=${known + 2}`)).body.results
      expect([upToDate.ima_measurement_list, upToDate.ima_measurement_list_entry]).toEqual(["", known + 2])
      const beyond = (yield* get(`/v2.5/quotes/integrity?nonce=${nonce}&mask=0x400&partial=1&ima_ml_entry=${known + 50}`)).body.results
      expect(beyond.ima_measurement_list_entry).toBe(0)
      expect(beyond.ima_measurement_list.startsWith(full.ima_measurement_list)).toBe(true)
    }))

  it.effect("returns an identity quote over PCR 16 with the NK", () =>
    Effect.gen(function*() {
      const agent = yield* RunningAgent
      const r = (yield* get(`/v2.1/quotes/identity?nonce=${nonce}`)).body.results
      expect(r.enc_alg).toBe("rsa")
      const pcrs = verify(agent.akPublic, r.quote)
      expect([...pcrs.keys()]).toEqual([16])
      expect(hex(pcrs.get(16))).toBe(hex(sha256(new Uint8Array(32), sha256(r.pubkey))))
      expect(typeof r.boottime).toBe("number")
    }))

  it.effect("rejects a quote request whose nonce, mask, partial or version is bad, with the reference's texts", () =>
    Effect.gen(function*() {
      const cases: Array<[string, number, string]> = [
        [`/v2.5/quotes/integrity?nonce=abc&mask=0x400&partial=0`, 400, "Nonce should be 20 letters and digits, got 3: abc"],
        [`/v2.5/quotes/integrity?nonce=${nonce}&mask=0xZZ&partial=0`, 400, "mask should be a hex encoded 32-bit integer: 0xZZ"],
        [`/v2.5/quotes/integrity?nonce=${nonce}&mask=0x4-0&partial=0`, 400, "mask should be strictly alphanumeric: 0x4-0"],
        [`/v2.5/quotes/integrity?nonce=ab-cd&mask=0x400&partial=0`, 400, "nonce should be strictly alphanumeric: ab-cd"],
        [`/v2.5/quotes/integrity?nonce=${"a".repeat(65)}&mask=0x400&partial=0`, 400, "Nonce is too long (max size: 64): 65"],
        [`/v2.5/quotes/integrity?nonce=${nonce}&mask=0x400&partial=2`, 400, "uri must contain key 'partial' and value '0' or '1'"],
        [`/v2.5/quotes/identity?nonce=a_b`, 400, "Parameters should be strictly alphanumeric: a_b"],
        [`/v9.9/quotes/integrity?nonce=${nonce}&mask=0x400&partial=0`, 400, "API version not supported: v9.9"],
        [`/v2.5/quotes/nothing`, 400, "URI not supported, only /identity and /integrity are supported for GET in /quotes/ interface"],
        [`/v2.5/keys/verify`, 400, "No challenge provided."],
        [`/v2.5/unknown`, 404, "Not Found"]
      ]
      for (const [path, status, text] of cases) {
        const r = yield* get(path)
        expect({ path, status: r.status, body: r.body }).toEqual({ path, status, body: { code: status, status: text, results: {} } })
      }
    }))

  it.effect("refuses clients without a certificate from the trusted CA at the TLS handshake", () =>
    Effect.gen(function*() {
      const agent = yield* RunningAgent
      const { otherCa } = yield* Env
      const anonymous = yield* Effect.either(request(agent, {}, "GET", "/version"))
      expect(Either.isLeft(anonymous)).toBe(true)
      const rogue = yield* Effect.either(request(agent, { cert: otherCa.clientCert, key: otherCa.clientKey }, "GET", "/version"))
      expect(Either.isLeft(rogue)).toBe(true)
    }))

  it.effect("derives K from U and V in either order, rejects a wrong auth_tag and writes the payload only for the right K", () =>
    Effect.gen(function*() {
      const { dataDir } = yield* Env
      const pubkey: string = (yield* get("/v2.5/keys/pubkey")).body.results.pubkey
      const enc = (b: Uint8Array) => Buffer.from(Either.getOrThrow(encryptForAgent(pubkey, b))).toString("base64")
      const unzipped = join(dataDir, "secure", "unzipped")
      const challenge = "abcdefghij0123456789"

      expect((yield* get(`/v2.5/keys/verify?challenge=${challenge}`)).body.status).toBe("Bootstrap key not yet available.")

      // a wrong auth_tag: halves accepted, K never derived, nothing written
      const bad = generateBootstrapKeys()
      expect((yield* post("/v2.5/keys/ukey", { auth_tag: authTag(generateBootstrapKeys().k, agentId), encrypted_key: enc(bad.u) })).status).toBe(200)
      expect((yield* post("/v2.5/keys/vkey", { encrypted_key: enc(bad.v) })).status).toBe(200)
      expect((yield* get(`/v2.5/keys/verify?challenge=${challenge}`)).body.status).toBe("Bootstrap key not yet available.")
      expect(existsSync(unzipped)).toBe(false)

      // U then V, with the rust-keylime payload.zip encrypted under K
      const one = generateBootstrapKeys()
      const zip = readVector("rust-keylime/keylime-agent/test-data/payload.zip")
      const payload = Buffer.from(Either.getOrThrow(encryptPayload(one.k, zip))).toString("base64")
      expect((yield* post("/v2.5/keys/ukey", { auth_tag: authTag(one.k, agentId), encrypted_key: enc(one.u), payload })).body)
        .toEqual({ code: 200, status: "Success", results: {} })
      expect((yield* post("/v2.5/keys/vkey", { encrypted_key: enc(one.v) })).status).toBe(200)
      const hmac = (yield* get(`/v2.5/keys/verify?challenge=${challenge}`)).body.results.hmac
      expect(hmac).toBe(createHmac("sha384", one.k).update(challenge).digest("hex"))
      expect(readFileSync(join(unzipped, "decrypted_payload"))).toEqual(Buffer.from(zip))
      expect(readFileSync(join(unzipped, "derived_tci_key"))).toEqual(Buffer.from(one.k))
      expect(statSync(join(unzipped, "decrypted_payload")).mode & 0o777).toBe(0o600)
      expect(statSync(unzipped).mode & 0o777).toBe(0o700)
      expect(statSync(join(dataDir, "secure")).mode & 0o777).toBe(0o700)

      // V then U gives a new K
      const two = generateBootstrapKeys()
      expect((yield* post("/v2.5/keys/vkey", { encrypted_key: enc(two.v) })).status).toBe(200)
      expect((yield* post("/v2.5/keys/ukey", { auth_tag: authTag(two.k, agentId), encrypted_key: enc(two.u) })).status).toBe(200)
      expect((yield* get(`/v2.5/keys/verify?challenge=${challenge}`)).body.results.hmac)
        .toBe(createHmac("sha384", two.k).update(challenge).digest("hex"))
    }))

  it.effect("answers the reference's errors for malformed key bodies, naming the field", () =>
    Effect.gen(function*() {
      const r1 = yield* post("/v2.5/keys/ukey", { auth_tag: "zz", encrypted_key: "AAAA" })
      expect([r1.status, r1.body.status]).toEqual([400, "Invalid hex encoding in auth_tag: zz"])
      const r2 = yield* post("/v2.5/keys/vkey", { encrypted_key: "not base64!" })
      expect([r2.status, r2.body.status]).toEqual([400, "Invalid base64 encoding in encrypted_key: invalid base64 text"])
      const r3 = yield* post("/v2.5/keys/vkey", { encrypted_key: Buffer.alloc(256).toString("base64") })
      expect(r3.status).toBe(400)
      expect(r3.body.status.startsWith("Failed to decrypt encrypted_key: ")).toBe(true)
      const r4 = yield* post("/v2.5/keys/other", {})
      expect(r4.body.status).toBe("URI not supported, only /ukey and /vkey are supported for POST in /keys interface")
      // body errors name the field, as the registrar's do
      const r5 = yield* post("/v2.5/keys/vkey", {})
      expect([r5.status, r5.body.status]).toEqual([400, "Json deserialize error: encrypted_key: is required"])
      const r6 = yield* post("/v2.5/keys/ukey", { auth_tag: "ab", encrypted_key: 5 })
      expect([r6.status, r6.body.status]).toEqual([400, "Json deserialize error: encrypted_key: Expected string, actual 5"])
      const r7 = yield* post("/v2.5/notifications/revocation", [1])
      expect([r7.status, r7.body.status]).toEqual([400, "Json deserialize error: the request body must be a JSON object"])
    }))

  it.effect("accepts a revocation notification signed with the revocation key and refuses a tampered one", () =>
    Effect.gen(function*() {
      const msg = readFileSync(vectorPath("rust-keylime/keylime-agent/test-data/test_ok.json"), "utf8")
      const signature = readFileSync(vectorPath("rust-keylime/keylime-agent/test-data/revocation.sig"), "utf8").trim()
      const good = yield* post("/v2.5/notifications/revocation", { msg, signature })
      expect(good.body).toEqual({ code: 200, status: "Success", results: {} })
      const bad = yield* post("/v2.5/notifications/revocation", { msg: msg.replace("there", "where"), signature })
      expect([bad.status, bad.body.status]).toEqual([400, "Invalid revocation message signature"])
    }))
})

