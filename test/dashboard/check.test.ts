/**
 * "Check it yourself" in a real headless Chromium: the offline page (dist/attest-check.html, opened
 * from disk) and the page the bundled `attest dashboard` serves verify the real vectors of
 * ../shared/vectors in the browser, with the portable engines (WebCrypto, @noble/curves): valid
 * evidence passes, and a flipped byte fails with the failure type the server gives for it — each
 * expected type is computed here, in node, by the function the verifier or the CLI calls for the
 * same evidence (verify/evidence's request logic, `attest policy check`, `check-boot`,
 * `tee verify-snp`, `ear verify`) on node:crypto.
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { Effect, Either } from "effect"
import { spawn } from "node:child_process"
import { mkdirSync } from "node:fs"
import { join, resolve } from "node:path"
import { pathToFileURL } from "node:url"
import type { Browser, Page } from "playwright-core"
import { createRefState } from "../../src/boot/createRefState.js"
import { evaluateMeasuredBoot } from "../../src/boot/evaluate.js"
import { examplePolicy } from "../../src/boot/examplePolicy.js"
import { replayPcrs } from "../../src/boot/replay.js"
import { generateEarKey, jwksDocument, keysFromJwks, signEar, verifyEar } from "../../src/ear/index.js"
import { loadRuntimePolicy } from "../../src/ima/load.js"
import { verifyIma } from "../../src/ima/verify.js"
import { TEE_FAILURE } from "../../src/tee/failures.js"
import { verifySnpEvidence } from "../../src/tee/snp/verify.js"
import { defaultSeverityPolicy } from "../../src/attestation/evaluate/severity.js"
import { verifyEvidenceRequest } from "../../src/verifier/stateless/verifyEvidence.js"
import { parsed, secureBootLog, withBootAppChanged } from "../boot/support.js"
import { launchChromium } from "../support/chromium.js"
import { needsChromium } from "../support/requirements.js"
import { readVector, readVectorText } from "../support/vectors.js"
import { milanReport, milanVcek } from "../tee/support.js"
import { makeTestPki, removePki, startDashboard } from "./harness.js"

const root = resolve(__dirname, "../..")
const offline = pathToFileURL(join(root, "dist/attest-check.html")).href
const shots = resolve(__dirname, "../../test-results/check")
const available = needsChromium()
let browser: Browser | undefined

const node = (...args: Array<string>) =>
  new Promise<number | null>((done, reject) => {
    const child = spawn(process.execPath, args, { cwd: root, stdio: "inherit" })
    child.once("error", reject)
    child.once("close", done)
  })

beforeAll(async () => {
  if (!available) return
  mkdirSync(shots, { recursive: true })
  // the bundle holds the page's browser code (dist/cli/dashboard/check.js) and the offline page
  if ((await node("scripts/build-if-needed.mjs")) !== 0) throw new Error("bundling failed")
  browser = await launchChromium()
}, 300_000)
afterAll(async () => {
  await browser?.close()
})

const WAIT = { timeout: 120_000 }

// --- the evidence: real vectors, and one byte of each flipped -----------------------------------

const quoteDir = ["keylime", "generated", "swtpm-quote-1"] as const
const quote = readVectorText(...quoteDir, "quote.txt").trim()
const akBytes = readVector(...quoteDir, "ak.pub")
const imaList = readVectorText(...quoteDir, "ima-log.txt")
const passPolicy = readVectorText(...quoteDir, "runtime-policy-pass.json")
const NONCE = "TestNonce1234567890A"

/** The quote with one byte of its TPMS_ATTEST flipped (inside pcrDigest: the signature no longer covers it). */
const flippedQuote = (() => {
  const attest = Buffer.from(quote.slice(1, quote.indexOf(":")), "base64")
  attest[attest.length - 1]! ^= 1
  return `r${attest.toString("base64")}${quote.slice(quote.indexOf(":"))}`
})()

/** The IMA list with one hex digit of its third entry's file digest changed. */
const flippedList = (() => {
  const lines = imaList.split("\n")
  const fields = lines[2]!.split(" ")
  const digest = fields[3]!
  const at = digest.indexOf(":") + 5
  fields[3] = digest.slice(0, at) + (digest[at] === "0" ? "1" : "0") + digest.slice(at + 1)
  lines[2] = fields.join(" ")
  return lines.join("\n")
})()

const bootLog = secureBootLog()
const refState = JSON.stringify(Either.getOrThrowWith(createRefState(parsed(bootLog)), (e) => new Error(e.message)).refstate)
/** The log whose second boot application is another image (consistent across banks, as a TPM would measure it). */
const flippedBootLog = withBootAppChanged(bootLog, 1)

const snpReport = milanReport()
const flippedReport = (() => {
  const r = new Uint8Array(snpReport)
  r[21]! ^= 0x80
  return r
})()
const vcek = milanVcek()

const earKey = generateEarKey()
const jwks = JSON.stringify(jwksDocument([earKey]))
const ear = Either.getOrThrow(signEar({ agentId: "d432fbb3-d2f1-4a97-9ef7-75bd81c00001", failures: [], appraised: { quote: true, ima: true } }, earKey, { build: "attest test", verifierId: "v" }, 1_700_000_000))
const flippedEar = (() => {
  const [h, p, s] = ear.split(".") as [string, string, string]
  const i = Math.floor(p.length / 2)
  return `${h}.${p.slice(0, i)}${p[i] === "A" ? "B" : "A"}${p.slice(i + 1)}.${s}`
})()

// --- what the server (node:crypto) answers for the same evidence --------------------------------

const serverQuote = (q: string): ReadonlyArray<string> => {
  const body = {
    type: "tpm",
    data: { quote: q, nonce: NONCE, hash_alg: "sha256", tpm_ek: "(not checked)", tpm_ak: Buffer.from(akBytes).toString("base64"), runtime_policy: passPolicy, ima_measurement_list: imaList }
  }
  const r = verifyEvidenceRequest(body, { major: 2, minor: 5 }, { severity: defaultSeverityPolicy, measuredBootPolicy: examplePolicy, reportTomtou: false })
  return Either.isLeft(r) ? [r.left._tag] : r.right.evaluation.failures.map((f) => f.type)
}
const serverIma = (list: string) => verifyIma({ list, startEntry: 0, policy: Either.getOrThrow(loadRuntimePolicy(passPolicy)).policy, banks: ["sha256"] }).failures.map((f) => f.type)
const serverBoot = (log: Uint8Array) => {
  const p = parsed(log)
  return evaluateMeasuredBoot({ log: p, quotedPcrs: replayPcrs(p), refstate: JSON.parse(refState) }, examplePolicy).failures.map((f) => f.type)
}
const serverSnp = (report: Uint8Array) =>
  verifySnpEvidence({ report, vcek: Buffer.from(vcek).toString("base64"), freshness: undefined, policy: undefined }, { now: new Date() }).failures.map((f) => f.type)
const serverEar = (token: string) =>
  Effect.runPromise(Effect.either(verifyEar(token, Either.getOrThrow(keysFromJwks(jwks))))).then((r) => (Either.isRight(r) ? [] : [`ear.${r.left.reason}`]))

// --- driving the page --------------------------------------------------------------------------

type Input = string | { readonly file: Uint8Array }

interface Verdict {
  readonly valid: boolean
  readonly types: ReadonlyArray<string>
}

/** Fills the form of `kind` (text into fields, bytes through its file input), submits, reads the verdict. */
const check = async (page: Page, kind: string, inputs: Record<string, Input>): Promise<Verdict> => {
  await page.getByRole("button", { name: tabNames[kind]!, exact: true }).click()
  const form = page.locator(`form[data-kind=${kind}]`)
  // the optional fields sit in closed <details>
  await form.locator("details").evaluateAll((ds) => ds.forEach((d) => d.setAttribute("open", "")))
  for (const [name, value] of Object.entries(inputs)) {
    if (typeof value === "string") await form.locator(`[name=${name}]`).fill(value)
    else {
      const file = form.locator(`input[type=file][data-for=${name}]`)
      await file.evaluate((e) => e.removeAttribute("data-loaded"))
      await file.setInputFiles({ name: `${name}.bin`, mimeType: "application/octet-stream", buffer: Buffer.from(value.file) })
      await form.locator(`input[type=file][data-for=${name}][data-loaded="${value.file.length}"]`).waitFor(WAIT)
    }
  }
  const result = page.locator("#result")
  await result.evaluate((e) => e.removeAttribute("data-state"))
  await form.locator("button[type=submit]").click()
  await page.locator("#result[data-state=done]").waitFor(WAIT)
  const valid = (await result.getAttribute("data-valid")) === "true"
  const types = await page.locator("[data-testid=failure]").evaluateAll((items) => items.map((i) => i.getAttribute("data-type")!))
  return { valid, types }
}

const tabNames: Record<string, string> = { quote: "TPM quote", ima: "IMA list", boot: "Boot log", snp: "SEV-SNP report", ear: "EAR" }

/** A page at `url`; the check page's engines loaded unless it is the dashboard's index. */
const openPage = async (url: string, engines = true): Promise<Page> => {
  const page = await browser!.newPage()
  const errors: Array<string> = []
  page.on("pageerror", (e) => errors.push(e.message))
  await page.goto(url)
  if (engines) await page.locator("[data-testid=engine][data-ready=true]").waitFor(WAIT)
  expect(errors).toEqual([])
  return page
}

/** Every kind of evidence, valid and with a byte flipped, against the server's answer. */
const everyKind = async (page: Page) => {
  const quoteInputs = { ak: { file: akBytes }, nonce: NONCE, imaList, runtimePolicy: passPolicy }
  expect(await check(page, "quote", { quote, ...quoteInputs })).toEqual({ valid: true, types: [] })
  expect(await check(page, "quote", { quote: flippedQuote, ...quoteInputs })).toEqual({ valid: false, types: serverQuote(flippedQuote) })
  expect(serverQuote(flippedQuote)).toEqual(["qoute_validation.quote_validation"])

  expect(await check(page, "ima", { list: imaList, runtimePolicy: passPolicy })).toEqual({ valid: true, types: [] })
  expect(await check(page, "ima", { list: flippedList, runtimePolicy: passPolicy })).toEqual({ valid: false, types: serverIma(flippedList) })
  expect(serverIma(flippedList).length).toBeGreaterThan(0)

  expect(await check(page, "boot", { log: { file: bootLog }, refState })).toEqual({ valid: true, types: [] })
  expect(await check(page, "boot", { log: { file: flippedBootLog }, refState })).toEqual({ valid: false, types: serverBoot(flippedBootLog) })
  expect(serverBoot(flippedBootLog).length).toBeGreaterThan(0)

  expect(await check(page, "snp", { report: { file: snpReport }, vcek: { file: vcek } })).toEqual({ valid: true, types: [] })
  expect(await check(page, "snp", { report: { file: flippedReport }, vcek: { file: vcek } })).toEqual({ valid: false, types: serverSnp(flippedReport) })
  expect(serverSnp(flippedReport)).toEqual([TEE_FAILURE.invalidSignature])

  expect(await check(page, "ear", { token: ear, jwks })).toEqual({ valid: true, types: [] })
  expect(await check(page, "ear", { token: flippedEar, jwks })).toEqual({ valid: false, types: await serverEar(flippedEar) })
  expect(await serverEar(flippedEar)).toEqual(["ear.signature"])
}

describe.skipIf(!available)("check it yourself, in headless Chromium", () => {
  it("the offline page, opened from disk, verifies quote, IMA, boot log, SEV-SNP and EAR vectors and refuses each with a flipped byte as the server does", async () => {
    const page = await openPage(offline)
    expect(page.url()).toMatch(/^file:\/\//)
    await everyKind(page)
    await page.screenshot({ path: join(shots, "offline.png"), fullPage: true })
    await page.close()
  }, 600_000)

  it.scopedLive("the dashboard links to the page and serves it; it verifies there too", () =>
    Effect.gen(function*() {
      const pki = makeTestPki()
      yield* Effect.addFinalizer(() => Effect.sync(() => removePki(pki)))
      // no verifier or registrar: the page needs neither (the dashboard names them unreachable)
      const { url } = yield* startDashboard(["--port", "0", "--verifier", "https://127.0.0.1:1", "--registrar", "https://127.0.0.1:1", "--interval", "60"], { ATTEST_TENANT_TLS_DIR: pki.dir })
      yield* Effect.promise(async () => {
        const page = await openPage(url, false)
        await page.getByTestId("check-link").click()
        await page.locator("[data-testid=engine][data-ready=true]").waitFor(WAIT)
        expect(page.url()).toBe(`${url}assets/check.html`)
        await everyKind(page)
        await page.screenshot({ path: join(shots, "dashboard.png"), fullPage: true })
        await page.close()
      })
    }), 600_000)
})
