/**
 * The admin CRL in force is re-read at least every refresh interval (issue 8, item 4), under
 * TestClock: a revocation takes effect at the next interval without a restart; a new CRL that
 * does not verify, an older CRL (lower CRL number) and a removed file keep the one in force and
 * say why; a CRL file that appears later is picked up; a bad CRL at start is refused.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Logger, TestClock } from "effect"
import * as crypto from "node:crypto"
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { CA_FILES, initCa, issueAdmin } from "../../src/pki/ca.js"
import { trustStoreOf } from "../../src/pki/chain.js"
import { normalizeSerial } from "../../src/pki/crl.js"
import { liveRevocations } from "../../src/pki/liveRevocations.js"
import { revokeAdmin } from "../../src/pki/revoke.js"

const setup = Effect.gen(function*() {
  const dir = join(mkdtempSync(join(tmpdir(), "attest-live-crl-")), "cv_ca")
  yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(dir, { recursive: true, force: true })))
  yield* Effect.orDie(initCa({ dir }))
  yield* Effect.orDie(issueAdmin(dir, "alice"))
  const ca = new crypto.X509Certificate(readFileSync(join(dir, CA_FILES.caCert)))
  const serial = normalizeSerial(new crypto.X509Certificate(readFileSync(join(dir, "alice-cert.crt"))).serialNumber)
  return { dir, file: join(dir, CA_FILES.crl), trusted: trustStoreOf([ca], dir), serial }
})

const revokedSerials = (list: { readonly byIssuer: ReadonlyMap<string, ReadonlySet<string>> } | undefined) =>
  [...(list?.byIssuer.values() ?? [])].flatMap((s) => [...s])

const warnings: Array<string> = []
const captureWarnings = Logger.replace(
  Logger.defaultLogger,
  Logger.make(({ logLevel, message }) => {
    if (logLevel._tag === "Warning") warnings.push(Array.isArray(message) ? message.join(" ") : String(message))
  })
)

describe("live admin CRL", () => {
  it.scoped("applies a revocation at the next refresh interval and keeps the CRL in force when a new one cannot be used", () =>
    Effect.gen(function*() {
      const { dir, file, serial, trusted } = yield* setup
      const first = new Uint8Array(readFileSync(file))
      const crl = yield* liveRevocations({ file, trusted, initial: first, refreshInterval: "60 seconds", watch: false })
      expect(revokedSerials(yield* crl.current)).toEqual([])

      yield* Effect.orDie(revokeAdmin({ dir, name: "alice" }))
      expect(revokedSerials(yield* crl.current)).toEqual([]) // not before the interval
      yield* TestClock.adjust("59 seconds")
      expect(revokedSerials(yield* crl.current)).toEqual([])
      yield* TestClock.adjust("1 second")
      expect(revokedSerials(yield* crl.current)).toEqual([serial])

      // garbage, then the older CRL (number 1, without alice), then no file: alice stays revoked
      const cases: ReadonlyArray<readonly [string, () => void, RegExp]> = [
        ["garbage", () => writeFileSync(file, "not a CRL"), /kept the CRL in force; the new CRL cannot be used: CRL: /],
        ["older CRL", () => writeFileSync(file, first), /kept the CRL in force; the new CRL's number \(1\) is lower than the one in force \(2\)/],
        ["removed", () => rmSync(file), /kept the CRL in force; the file is gone/]
      ]
      for (const [name, change, warning] of cases) {
        warnings.length = 0
        change()
        yield* TestClock.adjust("60 seconds")
        expect(revokedSerials(yield* crl.current), name).toEqual([serial])
        expect(warnings.some((w) => warning.test(w)), `${name}: ${warnings.join(" | ")}`).toBe(true)
      }
    }).pipe(Effect.provide(captureWarnings)))

  it.scoped("picks up a CRL file that appears after start", () =>
    Effect.gen(function*() {
      const { dir, file, serial, trusted } = yield* setup
      rmSync(file)
      const crl = yield* liveRevocations({ file, trusted, refreshInterval: "60 seconds", watch: false })
      expect(yield* crl.current).toBeUndefined()
      yield* TestClock.adjust("60 seconds")
      expect(yield* crl.current).toBeUndefined()
      yield* Effect.orDie(revokeAdmin({ dir, name: "alice" }))
      yield* TestClock.adjust("60 seconds")
      expect(revokedSerials(yield* crl.current)).toEqual([serial])
    }))

  it.scoped("refuses to start on a CRL that does not verify, naming the file", () =>
    Effect.gen(function*() {
      const { file, trusted } = yield* setup
      const e = yield* Effect.flip(liveRevocations({ file, trusted, initial: new TextEncoder().encode("junk"), refreshInterval: "60 seconds" }))
      expect(e.message).toMatch(new RegExp(`^${file.replace(/[.]/g, "\\.")} cannot be used: CRL: `))
    }))
})
