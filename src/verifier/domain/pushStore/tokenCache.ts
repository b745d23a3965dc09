/**
 * Sessions whose token this process checked against the store moments ago. A push attestation is
 * two requests with the same token, and an agent sends them every `quote_interval`: reading the
 * session row for each was the largest share of a request's work. An entry is trusted for
 * `recheckMs` after its read (and never past its token's expiry); after that the store decides
 * again. This process drops or updates entries itself when it ends, replaces or extends a session,
 * and when an administrator's change ends an agent's sessions (SessionEnds): a read that began
 * before such an end is not cached. A session another verifier process ends is refused by the
 * attestation path at once (its context read and its accept check the session row) and by the
 * other routes here at most `recheckMs` later.
 *
 * One per process (`TokenCache`), shared by Sessions, which fills it, and SessionEnds, which
 * empties it for an agent.
 */
import { Effect } from "effect"
import type { SessionRow } from "./rows.js"

/** How long a token checked against the store is trusted without reading it again. */
export const TOKEN_RECHECK_MS = 10_000

interface Entry {
  readonly session: SessionRow
  readonly checkedAt: number
}

export const makeTokenCache = (recheckMs: number = TOKEN_RECHECK_MS) => {
  const bySession = new Map<string, Entry>()
  const sessionOfAgent = new Map<string, string>()
  let puts = 0
  // how many times an agent's sessions were ended in this process: a read that began before an
  // end may have seen the session active, and is not cached
  let ends = 0

  const forget = (sessionId: string) => {
    const entry = bySession.get(sessionId)
    if (entry === undefined) return
    bySession.delete(sessionId)
    if (sessionOfAgent.get(entry.session.agent_id) === sessionId) sessionOfAgent.delete(entry.session.agent_id)
  }

  return {
    /** The session checked at most `recheckMs` before `now`, its token unexpired; undefined otherwise. */
    get: (sessionId: string, now: number): SessionRow | undefined => {
      const entry = bySession.get(sessionId)
      if (entry === undefined) return undefined
      if (now - entry.checkedAt >= recheckMs || now < entry.checkedAt || (entry.session.token_expires_at ?? 0) <= now) {
        forget(sessionId)
        return undefined
      }
      return entry.session
    },
    /** Taken before a read of the store: `put` then knows whether an end came while it read. */
    mark: (): number => ends,
    /** An active session just read from the store, by a read that began at `mark`. */
    put: (session: SessionRow, now: number, mark: number) => {
      if (mark !== ends) return
      // entries of agents that stopped asking are dropped now and then (at most one per agent meanwhile)
      if (++puts % 1024 === 0) for (const [id, e] of bySession) if (now - e.checkedAt >= recheckMs) forget(id)
      const previous = sessionOfAgent.get(session.agent_id)
      if (previous !== undefined && previous !== session.session_id) forget(previous)
      bySession.set(session.session_id, { session, checkedAt: now })
      sessionOfAgent.set(session.agent_id, session.session_id)
    },
    /** The session ends (deleted, or another of its agent activated). */
    forget,
    /** Every session of the agent ends (a new one is activated, an administrator's change). */
    forgetAgent: (agentId: string) => {
      ends++
      const sessionId = sessionOfAgent.get(agentId)
      if (sessionId !== undefined) forget(sessionId)
    },
    /** The agent's active token now expires at `expiresAt` (stored first). */
    extended: (agentId: string, expiresAt: number) => {
      const sessionId = sessionOfAgent.get(agentId)
      const entry = sessionId === undefined ? undefined : bySession.get(sessionId)
      if (entry !== undefined) bySession.set(entry.session.session_id, { ...entry, session: { ...entry.session, token_expires_at: expiresAt } })
    },
    /** The token expiry this process last read or wrote for the agent's active session, if it holds one. */
    expiryOf: (agentId: string): number | undefined => {
      const sessionId = sessionOfAgent.get(agentId)
      const entry = sessionId === undefined ? undefined : bySession.get(sessionId)
      return entry?.session.token_expires_at ?? undefined
    },
    size: () => bySession.size
  } as const
}
export type TokenCacheShape = ReturnType<typeof makeTokenCache>

/** This process's token cache. */
export class TokenCache extends Effect.Service<TokenCache>()("attest/verifier/push/TokenCache", {
  sync: () => makeTokenCache()
}) {}
