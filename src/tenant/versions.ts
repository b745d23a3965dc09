/**
 * API version negotiation (spec §9.3): the tenant asks each server's `GET /version` and speaks the
 * highest version both support, so it drives servers that only know older 2.x versions. Pure.
 */
import { compareVersions, parseVersion, V2_VERSIONS } from "../http/versions.js"

/** The versions this tenant speaks, oldest first (the same 2.x set attest's servers serve). */
export const TENANT_VERSIONS: ReadonlyArray<string> = V2_VERSIONS.supported

/** The version spoken to a server that does not say (a Keylime verifier in push mode answers /version with 410). */
export const TENANT_CURRENT_VERSION: string = V2_VERSIONS.current

/**
 * Highest version in both lists (versions compared as numbers, so "2.10" > "2.9"); undefined when
 * they share none.
 */
export const negotiate = (ours: ReadonlyArray<string>, theirs: ReadonlyArray<string>): string | undefined => {
  let best: string | undefined
  for (const v of ours) {
    if (!theirs.includes(v)) continue
    const p = parseVersion(v)
    const b = best === undefined ? undefined : parseVersion(best)
    if (p !== undefined && (b === undefined || compareVersions(p, b) > 0)) best = v
  }
  return best
}

/**
 * The server's list from its `/version` answer: `supported_versions` when it sends them, else its
 * single current (registrar, verifier) or `supported_version` (older agents).
 */
export const offered = (answer: { readonly supported_versions?: ReadonlyArray<string> | undefined; readonly current?: string | undefined }): ReadonlyArray<string> =>
  answer.supported_versions !== undefined && answer.supported_versions.length > 0
    ? answer.supported_versions
    : answer.current === undefined ? [] : [answer.current]
