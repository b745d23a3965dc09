/**
 * API version routing. Requests carry `/v<major>.<minor>/…` (or `/v<major>/…`, an alias of that
 * major's newest minor); the platform strips the prefix before routing, so one set of routes serves
 * every version, and handlers read the version they were called with from `currentApiVersion`.
 */
import { FiberRef } from "effect"

export interface ApiVersion {
  readonly major: number
  readonly minor: number
}

export const formatVersion = (v: ApiVersion): string => `${v.major}.${v.minor}`

export const parseVersion = (text: string): ApiVersion | undefined => {
  const m = /^(\d{1,3})\.(\d{1,3})$/.exec(text)
  return m ? { major: Number(m[1]), minor: Number(m[2]) } : undefined
}

export const compareVersions = (a: ApiVersion, b: ApiVersion): number => a.major - b.major || a.minor - b.minor

/** a ≥ b: for "field added in 2.x" checks in handlers. */
export const atLeast = (a: ApiVersion, b: string): boolean => {
  const v = parseVersion(b)
  return v !== undefined && compareVersions(a, v) >= 0
}

/** The versions one component serves, newest last. */
export interface VersionSet {
  readonly supported: ReadonlyArray<string>
  readonly current: string
}

/** The `results` of GET /version: what the handlers answer and the fixed route's envelope holds (fixedRoutes.ts). */
export const versionInfo = (set: VersionSet) => ({ current_version: set.current, supported_versions: set.supported })

/** API 2.0 … 2.5 of the spec plus 2.6, which current Keylime clients send. */
export const V2_VERSIONS: VersionSet = {
  supported: ["2.0", "2.1", "2.2", "2.3", "2.4", "2.5", "2.6"],
  current: "2.6"
}

/** The verifier: API 2.x and the push model's 3.0 (one process serves both families). */
export const VERIFIER_VERSIONS: VersionSet = {
  supported: [...V2_VERSIONS.supported, "3.0"],
  current: "2.6"
}

/**
 * The router sees v3 routes under this prefix (their paths overlap the v2 ones: `/agents/:id` is
 * an envelope in 2.x and a JSON:API document in 3.0); the platform adds it for `/v3[.m]/…`.
 */
export const V3_ROUTE_PREFIX = "/v3"

/** Which wire form the current request answers in: the v2 envelope or JSON:API (API 3.0). */
export type ApiFamily = "v2" | "v3"
export const currentFamily: FiberRef.FiberRef<ApiFamily> = FiberRef.unsafeMake<ApiFamily>("v2")

export type PrefixMatch =
  | { readonly _tag: "Versioned"; readonly version: ApiVersion; readonly rest: string }
  | { readonly _tag: "Unsupported"; readonly requested: string }
  | { readonly _tag: "Unversioned" }

const PREFIX = /^\/v(\d[^/]*)(\/.*)?$/

/**
 * Splits `/v2.6/agents/x` into version 2.6 and `/agents/x`. `/v2/…` resolves to the newest 2.x the
 * set serves. A `/v…` segment that names no served version is Unsupported; anything else Unversioned.
 */
export const matchVersionPrefix = (pathname: string, set: VersionSet): PrefixMatch => {
  const m = PREFIX.exec(pathname)
  if (!m) return { _tag: "Unversioned" }
  const requested = m[1] ?? ""
  const rest = m[2] && m[2].length > 0 ? m[2] : "/"
  let chosen: string | undefined
  if (/^\d{1,3}$/.test(requested)) {
    // major-only alias: the newest served minor of that major
    for (const s of set.supported) if (s.startsWith(`${requested}.`)) chosen = s
  } else if (set.supported.includes(requested)) {
    chosen = requested
  }
  const version = chosen === undefined ? undefined : parseVersion(chosen)
  return version === undefined ? { _tag: "Unsupported", requested } : { _tag: "Versioned", version, rest }
}

/** The version the current request was routed under; unversioned routes see the current version. */
export const currentApiVersion: FiberRef.FiberRef<ApiVersion> = FiberRef.unsafeMake<ApiVersion>({
  major: 2,
  minor: 6
})
