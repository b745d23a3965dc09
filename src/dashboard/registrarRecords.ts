/**
 * The registrar's view of an agent for the dashboard: registered (listed by `GET /agents/`),
 * active (its record is served: Keylime serves only activated agents), `regcount`, contact
 * address and the issuer of its EK certificate (read with node's X509Certificate).
 */
import { X509Certificate } from "node:crypto"

export interface RegistrarEntry {
  readonly id: string
  readonly active: boolean
  readonly regcount: number | null
  readonly ip: string | null
  readonly port: number | null
  /** "CN=…, O=…" of the EK certificate; null without one; "unreadable" when it does not parse. */
  readonly ekIssuer: string | null
  /** Why the record could not be read (other than "not activated"). */
  readonly error: string | null
}

export const ekIssuerOf = (ekcertB64: unknown): string | null => {
  if (typeof ekcertB64 !== "string" || ekcertB64 === "") return null
  try {
    return new X509Certificate(Buffer.from(ekcertB64, "base64")).issuer.split("\n").join(", ")
  } catch {
    return "unreadable certificate"
  }
}

/** A registrar record (`GET /agents/<id>` results) as the dashboard shows it. */
export const registrarEntryOf = (id: string, r: unknown): RegistrarEntry => {
  const o = (typeof r === "object" && r !== null ? r : {}) as Record<string, unknown>
  return {
    id,
    active: true,
    regcount: typeof o["regcount"] === "number" ? o["regcount"] : null,
    ip: typeof o["ip"] === "string" ? o["ip"] : null,
    port: typeof o["port"] === "number" ? o["port"] : null,
    ekIssuer: ekIssuerOf(o["ekcert"]),
    error: null
  }
}

export const inactiveEntry = (id: string, error: string | null): RegistrarEntry => ({
  id,
  active: false,
  regcount: null,
  ip: null,
  port: null,
  ekIssuer: null,
  error
})
