/**
 * The browser side of "check it yourself" (src/dashboard/static/check.html): reads the forms and
 * dropped files, runs the checks of verify.ts on the portable crypto port, shows the verdict.
 * Bundled for the browser by scripts/checkPage.mjs (the dashboard serves it as /assets/check.js; the
 * offline page dist/attest-check.html carries it inline). Text from the evidence is shown with
 * textContent only.
 */
import { useCrypto } from "../../crypto/active.js"
import { portableCryptoPort } from "../../crypto/portable.js"
import { checkBoot, checkEar, checkIma, checkQuote, type CheckResult, checkSnp } from "./verify.js"

// A browser has no node:crypto, so this is the default there anyway; said here for any other host.
useCrypto(portableCryptoPort())

/** Bytes of files the user chose, per form and field. */
const files = new Map<string, Uint8Array>()

const field = (form: HTMLFormElement, name: string): string => {
  const e = form.elements.namedItem(name) as HTMLInputElement | HTMLTextAreaElement | HTMLSelectElement | null
  return e === null ? "" : e.value
}

/** A field's bytes: the chosen file, else the text. */
const bytesOr = (form: HTMLFormElement, name: string): Uint8Array | string => files.get(`${form.dataset["kind"]}/${name}`) ?? field(form, name)

const optional = (s: string): string | undefined => (s.trim() === "" ? undefined : s)

const run = (form: HTMLFormElement): Promise<CheckResult> => {
  switch (form.dataset["kind"]) {
    case "quote": {
      const bootLog = bytesOr(form, "bootLog")
      return checkQuote({
        quote: field(form, "quote"),
        ak: bytesOr(form, "ak"),
        nonce: field(form, "nonce"),
        hashAlg: field(form, "hashAlg"),
        ...withDefined({
          tpmPolicy: optional(field(form, "tpmPolicy")),
          imaList: optional(field(form, "imaList")),
          runtimePolicy: optional(field(form, "runtimePolicy")),
          bootLog: typeof bootLog === "string" ? optional(bootLog) : bootLog,
          refState: optional(field(form, "refState")),
          mbPolicy: optional(field(form, "mbPolicy"))
        })
      })
    }
    case "ima":
      return checkIma({ list: field(form, "list"), runtimePolicy: field(form, "runtimePolicy"), ...withDefined({ pcr10: optional(field(form, "pcr10")) }) })
    case "boot":
      return checkBoot({ log: bytesOr(form, "log"), refState: field(form, "refState"), mbPolicy: field(form, "mbPolicy") })
    case "snp":
      return checkSnp({
        report: bytesOr(form, "report"),
        vcek: bytesOr(form, "vcek"),
        now: new Date(),
        ...withDefined({ nonce: optional(field(form, "nonce")), pubkeyX: optional(field(form, "pubkeyX")), pubkeyY: optional(field(form, "pubkeyY")) })
      })
    default:
      return checkEar({ token: field(form, "token"), jwks: field(form, "jwks") })
  }
}

/** The object without its undefined members (the inputs' optional fields are absent, not undefined). */
const withDefined = <T extends Record<string, unknown>>(o: T): { [K in keyof T]?: Exclude<T[K], undefined> } =>
  Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as { [K in keyof T]?: Exclude<T[K], undefined> }

const item = (text: string, attrs: Record<string, string> = {}): HTMLLIElement => {
  const li = document.createElement("li")
  li.textContent = text
  for (const [k, v] of Object.entries(attrs)) li.setAttribute(k, v)
  return li
}

const show = (r: CheckResult | { readonly error: string }) => {
  const section = document.getElementById("result")!
  const verdict = section.querySelector("[data-testid=verdict]")!
  const failures = section.querySelector("[data-testid=failures]")!
  const facts = section.querySelector("[data-testid=facts]")!
  section.hidden = false
  if ("error" in r) {
    verdict.textContent = `Could not check: ${r.error}`
    verdict.className = "invalid"
    failures.replaceChildren()
    facts.replaceChildren()
    return
  }
  verdict.textContent = r.valid ? "VALID" : "INVALID"
  verdict.className = r.valid ? "valid" : "invalid"
  section.dataset["kind"] = r.kind
  section.dataset["valid"] = String(r.valid)
  failures.replaceChildren(...r.failures.map((f) => item(`${f.type}: ${f.message}`, { "data-testid": "failure", "data-type": f.type })))
  facts.replaceChildren(...r.facts.map((f) => item(f)))
}

const start = () => {
  for (const tab of document.querySelectorAll<HTMLButtonElement>("[data-tab]")) {
    tab.addEventListener("click", () => {
      for (const t of document.querySelectorAll<HTMLButtonElement>("[data-tab]")) t.classList.toggle("active", t === tab)
      for (const f of document.querySelectorAll<HTMLFormElement>("form[data-kind]")) f.hidden = f.dataset["kind"] !== tab.dataset["tab"]
    })
  }
  for (const input of document.querySelectorAll<HTMLInputElement>("input[type=file][data-for]")) {
    // typing into the field replaces the file chosen for it
    const form = input.closest("form")!
    ;(form.elements.namedItem(input.dataset["for"]!) as HTMLElement | null)?.addEventListener("input", () => {
      files.delete(`${form.dataset["kind"]}/${input.dataset["for"]}`)
      input.value = ""
    })
    input.addEventListener("change", async () => {
      const name = input.dataset["for"]!
      const file = input.files?.[0]
      const key = `${form.dataset["kind"]}/${name}`
      if (file === undefined) return void files.delete(key)
      const bytes = new Uint8Array(await file.arrayBuffer())
      // text files fill their field (visible, editable); binary ones are kept as bytes
      if (input.hasAttribute("data-text")) (form.elements.namedItem(name) as HTMLTextAreaElement).value = new TextDecoder().decode(bytes)
      else files.set(key, bytes)
      input.dataset["loaded"] = String(bytes.length)
    })
  }
  for (const form of document.querySelectorAll<HTMLFormElement>("form[data-kind]")) {
    form.addEventListener("submit", (event) => {
      event.preventDefault()
      const section = document.getElementById("result")!
      section.dataset["state"] = "checking"
      run(form)
        .then(show, (e: unknown) => show({ error: e instanceof Error ? e.message : String(e) }))
        .finally(() => (section.dataset["state"] = "done"))
    })
  }
  const engine = document.getElementById("engine")!
  engine.textContent = "Engines loaded: verification runs in this browser (WebCrypto and @noble/curves), offline."
  engine.dataset["ready"] = "true"
}

if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start)
else start()
