/**
 * The `Tpm` port over tpm2-tools processes (a hardware TPM through the kernel resource manager, or
 * swtpm in tests). Each method is one serialized call with its own temp dir and timeout (call.ts);
 * the AK is reloaded from its saved blobs for every use, so nothing depends on leftover handles.
 */
import { Effect, Either, type Scope } from "effect"
import { toHex } from "../bytes.js"
import { encodeCredentialFile } from "../credential.js"
import { digestSize } from "../hashAlg.js"
import { parsePcrBlob } from "../pcrBlob.js"
import type { Ak, AkOptions, CredentialBlob, HashAlg, KeyAlg, PcrSelection, QuoteRequest, SavedAk, TpmShape } from "../Tpm.js"
import { TpmError } from "../Tpm.js"
import { type CallEnv, DEFAULT_TCTI, makeCaller, type Tpm2ToolsConfig } from "./call.js"
import { certifyCommand, parseCertifyResponse } from "./certifyCommand.js"
import { type ContextCache, makeContextCache } from "./contextCache.js"
import { akFromSaved, createAkWith, createEk, ekPolicySession } from "./keys.js"
import { readEkCertificate } from "./nv.js"
import { parsePcrReadYaml, selectionArg } from "./pcrReadOutput.js"
import { readOutput, runTool, type ToolContext, writeInput } from "./run.js"

const decoder = new TextDecoder()

const fail = (operation: string, message: string, detail?: string) =>
  new TpmError(detail === undefined ? { operation, message } : { operation, message, detail })

const checkSelection = (operation: string, selection: PcrSelection) => {
  for (const s of selection) {
    for (const p of s.pcrs) {
      if (!Number.isInteger(p) || p < 0 || p > 23) return Effect.fail(fail(operation, `no PCR ${p}`))
    }
  }
  return Effect.void
}

/** Persistent handles (owner range) tried for the certify proof of possession. */
const CERTIFY_HANDLES = [0x81000100, 0x81000101, 0x81000102, 0x81000103, 0x817fff00]

const persistentHandles = (ctx: ToolContext) =>
  Effect.map(runTool(ctx, "tpm2_getcap", ["handles-persistent"]), (out) => {
    const used = new Set<number>()
    for (const m of decoder.decode(out.stdout).matchAll(/0x([0-9a-fA-F]{8})/g)) used.add(parseInt(m[1]!, 16))
    return used
  })

/**
 * TPM2_Certify(AK, AK, nonce) through `tpm2_send`: the AK is made persistent for the raw command
 * (a handle that also works behind a resource manager) and evicted again afterwards.
 */
const certifyWith = (ctx: ToolContext, akCtx: string, nonce: Uint8Array) =>
  Effect.gen(function*() {
    const used = yield* persistentHandles(ctx)
    const handle = CERTIFY_HANDLES.find((h) => !used.has(h))
    if (handle === undefined) return yield* fail(ctx.operation, "no free persistent handle for the certify command")
    const hex = `0x${handle.toString(16)}`
    return yield* Effect.acquireUseRelease(
      runTool(ctx, "tpm2_evictcontrol", ["-C", "o", "-c", akCtx, hex]),
      () =>
        Effect.gen(function*() {
          yield* runTool(ctx, "tpm2_send", ["-o", "certify.rsp"], certifyCommand(handle, handle, nonce))
          const parsed = parseCertifyResponse(yield* readOutput(ctx, "certify.rsp"))
          if (Either.isLeft(parsed)) return yield* fail(ctx.operation, "malformed TPM2_Certify response", parsed.left.message)
          const r = parsed.right
          if (r._tag === "TpmRc") return yield* fail(ctx.operation, `TPM2_Certify failed with TPM_RC 0x${r.rc.toString(16)}`)
          return { attest: r.attest, signature: r.signature }
        }),
      () =>
        runTool(ctx, "tpm2_evictcontrol", ["-C", "o", "-c", hex]).pipe(
          Effect.catchAll((e) => Effect.logError(`could not evict the AK from ${hex}; remove it by hand`, e.detail))
        )
    )
  })

export const makeTpm2ToolsTpm = (config: Tpm2ToolsConfig): Effect.Effect<TpmShape, TpmError, CallEnv | Scope.Scope> =>
  Effect.gen(function*() {
    const env = yield* Effect.context<CallEnv>()
    const contexts: ContextCache = yield* makeContextCache.pipe(
      Effect.mapError((e) => new TpmError({ operation: "start", message: "cannot create the context cache dir", detail: e.message }))
    )
    const call = makeCaller(config)
    const tcti = config.tcti ?? DEFAULT_TCTI
    const ekCache = new Map<KeyAlg, Uint8Array>()
    const provide = <A>(e: Effect.Effect<A, TpmError, CallEnv>) => Effect.provide(e, env)

    const ekPublic = Effect.fn("Tpm2Tools.ekPublic")(function*(alg: KeyAlg) {
      const hit = ekCache.get(alg)
      if (hit !== undefined) return hit
      // The standard EK template is deterministic: one createek per algorithm is enough.
      const pub = yield* provide(call("ekPublic", (ctx) => Effect.zipRight(createEk(ctx, alg), readOutput(ctx, "ek.pub"))))
      ekCache.set(alg, pub)
      return pub
    })

    const ekCertificate = Effect.fn("Tpm2Tools.ekCertificate")(function*(alg: KeyAlg) {
      return yield* provide(call("ekCertificate", (ctx) => readEkCertificate(ctx, alg)))
    })

    const createAk = Effect.fn("Tpm2Tools.createAk")(function*(ekAlg: KeyAlg, options: AkOptions) {
      return yield* provide(call("createAk", (ctx) => createAkWith(ctx, ekAlg, options)))
    })

    const loadAk = Effect.fn("Tpm2Tools.loadAk")(function*(saved: SavedAk) {
      const ak = yield* akFromSaved("loadAk", saved)
      // Load once so a blob from another TPM (or a damaged one) fails here, not at first use.
      return yield* provide(call("loadAk", (ctx) => contexts.loadNow(ctx, ak)))
    })

    const activateCredential = Effect.fn("Tpm2Tools.activateCredential")(function*(ak: Ak, blob: CredentialBlob) {
      return yield* provide(
        call("activateCredential", (ctx) =>
          Effect.gen(function*() {
            yield* writeInput(ctx, "cred.bin", encodeCredentialFile(blob))
            return yield* contexts.withAk(ctx, ak, (paths) =>
              Effect.gen(function*() {
                yield* ekPolicySession(ctx, "activate.ctx")
                yield* runTool(ctx, "tpm2_activatecredential", [
                  "-c", paths.ak, "-C", paths.ek, "-i", "cred.bin", "-o", "secret.bin", "-P", "session:activate.ctx"
                ])
                return yield* readOutput(ctx, "secret.bin")
              })
            )
          })
        )
      )
    })

    const quote = Effect.fn("Tpm2Tools.quote")(function*(ak: Ak, request: QuoteRequest) {
      yield* checkSelection("quote", request.selection)
      if (request.selection.length === 0) return yield* fail("quote", "empty PCR selection")
      return yield* provide(
        call("quote", (ctx) =>
          Effect.gen(function*() {
            yield* contexts.withAk(ctx, ak, (paths) => runTool(ctx, "tpm2_quote", [
              // --scheme: without it tpm2_quote asks for RSASSA, which an RSAPSS AK refuses.
              "-c", paths.ak, "-l", selectionArg(request.selection), "-g", ak.options.hash, "--scheme", ak.options.scheme,
              "-m", "quote.attest", "-s", "quote.sig", "-o", "quote.pcrs",
              ...(request.nonce.length > 0 ? ["-q", toHex(request.nonce)] : [])
            ]))
            const blob = parsePcrBlob(yield* readOutput(ctx, "quote.pcrs"))
            if (Either.isLeft(blob)) return yield* fail("quote", "tpm2_quote wrote a PCR file that does not parse", blob.left.message)
            return {
              attest: yield* readOutput(ctx, "quote.attest"),
              signature: yield* readOutput(ctx, "quote.sig"),
              pcrs: blob.right.values
            }
          })
        )
      )
    })

    const certify = Effect.fn("Tpm2Tools.certify")(function*(ak: Ak, nonce: Uint8Array) {
      return yield* provide(call("certify", (ctx) => contexts.withAk(ctx, ak, (paths) => certifyWith(ctx, paths.ak, nonce))))
    })

    const pcrRead = Effect.fn("Tpm2Tools.pcrRead")(function*(selection: PcrSelection) {
      yield* checkSelection("pcrRead", selection)
      if (selection.length === 0) return []
      return yield* provide(
        call("pcrRead", (ctx) =>
          Effect.flatMap(runTool(ctx, "tpm2_pcrread", [selectionArg(selection)]), (out) =>
            Either.mapLeft(parsePcrReadYaml(decoder.decode(out.stdout), selection), (m) => fail("pcrRead", m))
          )
        )
      )
    })

    const pcrExtend = Effect.fn("Tpm2Tools.pcrExtend")(function*(
      pcr: number,
      digests: ReadonlyArray<{ readonly hash: HashAlg; readonly digest: Uint8Array }>
    ) {
      yield* checkSelection("pcrExtend", [{ hash: "sha256", pcrs: [pcr] }])
      for (const d of digests) {
        if (d.digest.length !== digestSize(d.hash)) {
          return yield* fail("pcrExtend", `a ${d.hash} digest has ${digestSize(d.hash)} bytes, got ${d.digest.length}`)
        }
      }
      if (digests.length === 0) return
      const arg = `${pcr}:${digests.map((d) => `${d.hash}=${toHex(d.digest)}`).join(",")}`
      yield* provide(call("pcrExtend", (ctx) => runTool(ctx, "tpm2_pcrextend", [arg])))
    })

    const pcrReset = Effect.fn("Tpm2Tools.pcrReset")(function*(pcr: number) {
      yield* checkSelection("pcrReset", [{ hash: "sha256", pcrs: [pcr] }])
      yield* provide(call("pcrReset", (ctx) => runTool(ctx, "tpm2_pcrreset", [String(pcr)]))).pipe(
        // The TPM refuses PCRs outside its locality-0 reset set with TPM_RC_LOCALITY (0x907).
        Effect.mapError((e) =>
          /locality|0x907/i.test(`${e.message} ${e.detail ?? ""}`)
            ? fail("pcrReset", `PCR ${pcr} is not resettable from locality 0 (TPM_RC_LOCALITY)`, e.detail)
            : e
        )
      )
    })

    const getRandom = Effect.fn("Tpm2Tools.getRandom")(function*(bytes: number) {
      if (!Number.isInteger(bytes) || bytes < 0) return yield* fail("getRandom", `invalid byte count ${bytes}`)
      if (bytes === 0) return new Uint8Array(0)
      return yield* provide(
        call("getRandom", (ctx) =>
          Effect.gen(function*() {
            // TPM2_GetRandom returns at most one digest's worth per command.
            const out = new Uint8Array(bytes)
            for (let at = 0; at < bytes; at += 32) {
              const n = Math.min(32, bytes - at)
              yield* runTool(ctx, "tpm2_getrandom", ["-o", "random.bin", String(n)])
              const chunk = yield* readOutput(ctx, "random.bin")
              if (chunk.length !== n) return yield* fail("getRandom", `asked for ${n} bytes, got ${chunk.length}`)
              out.set(chunk, at)
            }
            return out
          })
        )
      )
    })

    return {
      description: `tpm2-tools:${tcti}`,
      ekPublic,
      ekCertificate,
      createAk,
      loadAk,
      activateCredential,
      quote,
      certify,
      pcrRead,
      pcrExtend,
      pcrReset,
      getRandom
    } satisfies TpmShape
  })

export { DEFAULT_TCTI, type Tpm2ToolsConfig } from "./call.js"
