/**
 * The admin CRL in force, kept current without a restart (issue 8): read and verified at start
 * (a CRL that does not verify stops start-up), then read again when its file changes (a watch on
 * its directory, so an atomic replace is seen) and at least every `crl_refresh_interval`. A new
 * CRL replaces the one in force only if it verifies against a trusted client CA and does not go
 * back to a lower CRL number; otherwise the one in force is kept and the reason logged. A CRL file
 * that appears later (a CA directory from before revocation, then `attest ca revoke`) is picked up.
 *
 *   const crl = yield* liveRevocations({ file, trusted, refreshInterval: "60 seconds" })  // scoped
 *   isAdminCertificate(der, trusted, now, yield* crl.current)
 */
import { Data, Duration, Effect, Either, Queue, Ref, type Scope } from "effect"
import * as crypto from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"
import type { TrustStore } from "./chain.js"
import { type Crl, loadVerifiedCrl, type RevocationList, revocationListOf } from "./crl.js"

/** Where request handlers read the list in force; undefined = revocation is not checked. */
export interface RevocationSource {
  readonly current: Effect.Effect<RevocationList | undefined>
}

/** A fixed list (tests, or a CRL given in memory). */
export const staticRevocations = (list: RevocationList | undefined): RevocationSource => ({ current: Effect.succeed(list) })

export type ReloadOutcome =
  | { readonly _tag: "Unchanged" }
  | { readonly _tag: "Replaced"; readonly revoked: number; readonly crlNumber: bigint | undefined }
  | { readonly _tag: "Kept"; readonly reason: string }

export interface LiveRevocations extends RevocationSource {
  /** Reads the file now (the watch and the interval call this too). */
  readonly reload: Effect.Effect<ReloadOutcome>
}

export class CrlUnusable extends Data.TaggedError("CrlUnusable")<{ readonly file: string; readonly message: string }> {}

export interface LiveRevocationsOptions {
  readonly file: string
  /** The trusted client CAs: the CRL must be signed by one of them. */
  readonly trusted: TrustStore
  /** Bytes read at start (TlsMaterial.crl); undefined = no CRL yet (read from `file` if it appears). */
  readonly initial?: Uint8Array
  readonly refreshInterval: Duration.DurationInput
  /** Watch the file's directory (default true); the interval applies either way. */
  readonly watch?: boolean
}

/** Parse + verify against any trusted CA: the CRL, or the reason none of them signed it. */
export const verifyAgainstTrusted = (bytes: Uint8Array, trusted: TrustStore): Either.Either<Crl, string> => {
  let last = "no trusted client CA"
  for (const anchor of trusted.anchors) {
    const r = loadVerifiedCrl(bytes, new Uint8Array(anchor.certificate.raw))
    if (Either.isRight(r)) return Either.right(r.right)
    last = r.left.reason
  }
  return Either.left(last)
}

const revokedCount = (list: RevocationList): number => {
  let n = 0
  for (const s of list.byIssuer.values()) n += s.size
  return n
}

interface InForce {
  readonly digest: string
  readonly crl: Crl
  readonly list: RevocationList
}

const digestOf = (bytes: Uint8Array) => crypto.createHash("sha256").update(bytes).digest("hex")

const readIfPresent = (file: string) =>
  Effect.try({
    try: () => (fs.existsSync(file) ? new Uint8Array(fs.readFileSync(file)) : undefined),
    catch: (e) => new CrlUnusable({ file, message: `${file} cannot be read: ${e instanceof Error ? e.message : String(e)}` })
  })

/** Verified at start (fails with CrlUnusable), then kept current until the scope closes. */
export const liveRevocations = (o: LiveRevocationsOptions): Effect.Effect<LiveRevocations, CrlUnusable, Scope.Scope> =>
  Effect.gen(function*() {
    const { file } = o
    let initial: InForce | undefined
    if (o.initial !== undefined) {
      const crl = verifyAgainstTrusted(o.initial, o.trusted)
      if (Either.isLeft(crl)) return yield* new CrlUnusable({ file, message: `${file} cannot be used: ${crl.left}` })
      initial = { digest: digestOf(o.initial), crl: crl.right, list: revocationListOf([crl.right], file) }
    }
    const state = yield* Ref.make<InForce | undefined>(initial)
    const lock = yield* Effect.makeSemaphore(1)

    const decide = (bytes: Uint8Array | undefined, inForce: InForce | undefined): ReloadOutcome | InForce => {
      if (bytes === undefined) {
        return inForce === undefined ? { _tag: "Unchanged" } : { _tag: "Kept", reason: "the file is gone" }
      }
      const digest = digestOf(bytes)
      if (inForce !== undefined && inForce.digest === digest) return { _tag: "Unchanged" }
      const crl = verifyAgainstTrusted(bytes, o.trusted)
      if (Either.isLeft(crl)) return { _tag: "Kept", reason: `the new CRL cannot be used: ${crl.left}` }
      const before = inForce?.crl.crlNumber
      const after = crl.right.crlNumber
      if (before !== undefined && (after === undefined || after < before)) {
        return { _tag: "Kept", reason: `the new CRL's number (${after ?? "none"}) is lower than the one in force (${before})` }
      }
      return { digest, crl: crl.right, list: revocationListOf([crl.right], file) }
    }

    const reload: Effect.Effect<ReloadOutcome> = lock.withPermits(1)(Effect.gen(function*() {
      const read = yield* Effect.either(readIfPresent(file))
      const inForce = yield* Ref.get(state)
      const next = Either.isLeft(read) ? { _tag: "Kept", reason: read.left.message } as const : decide(read.right, inForce)
      if ("_tag" in next) {
        if (next._tag === "Kept") {
          yield* Effect.logWarning(`admin CRL ${file}: kept the CRL in force; ${next.reason}`).pipe(
            Effect.annotateLogs({ crl: file })
          )
        }
        return next
      }
      yield* Ref.set(state, next)
      const revoked = revokedCount(next.list)
      yield* Effect.logInfo(
        `admin CRL ${file} reloaded: ${revoked} revoked serial(s)${next.crl.crlNumber === undefined ? "" : `, CRL number ${next.crl.crlNumber}`}`
      ).pipe(Effect.annotateLogs({ crl: file }))
      return { _tag: "Replaced", revoked, crlNumber: next.crl.crlNumber } as const
    }))

    // at least every refresh interval (Clock time: TestClock drives it in tests)
    yield* Effect.forkScoped(Effect.forever(Effect.zipRight(Effect.sleep(Duration.decode(o.refreshInterval)), reload)))

    if (o.watch !== false) {
      // the directory, not the file: `writeAtomic` replaces the file (a new inode) on every revocation
      const changes = yield* Queue.sliding<void>(1)
      const dir = path.dirname(file)
      const base = path.basename(file)
      const watcher = yield* Effect.acquireRelease(
        Effect.try(() =>
          fs.watch(dir, { persistent: false }, (_event, name) => {
            if (name === null || name === base) Queue.unsafeOffer(changes, undefined)
          })
        ).pipe(Effect.either),
        (w) => Effect.sync(() => Either.isRight(w) && w.right.close())
      )
      if (Either.isLeft(watcher)) {
        yield* Effect.logWarning(`admin CRL ${file}: cannot watch ${dir} (${String(watcher.left.error)}); relying on the refresh interval`)
      } else {
        // a watch that breaks (the directory removed) leaves the interval; it must not crash the process
        watcher.right.on("error", () => Queue.unsafeOffer(changes, undefined))
        // a burst of events (write, rename) is one reload, after the writer is done
        yield* Effect.forkScoped(Effect.forever(
          Queue.take(changes).pipe(Effect.zipRight(Effect.sleep("50 millis")), Effect.zipRight(Queue.takeAll(changes)), Effect.zipRight(reload))
        ))
      }
    }
    return { current: Effect.map(Ref.get(state), (s) => s?.list), reload } satisfies LiveRevocations
  })
