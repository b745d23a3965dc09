/**
 * The route template the router matches for a request, as the `route` label of the request metrics
 * (requestMetrics.ts), read from the router's own table of routes (method and path template) and
 * matched as its find-my-way tree matches: segment by segment in its order (a static segment, then
 * a parameter, then a wildcard), static segments without regard to case, duplicate and trailing
 * slashes ignored, the path ending at `?`, `;` or `#`, percent-escapes decoded (a malformed one
 * matches nothing), a parameter longer than 100 characters ending the search with no route, HEAD
 * answered by a GET route when no HEAD route matches. test/http/routeLabels.test.ts puts every
 * route of both APIs to the router itself and compares.
 *
 * The router also writes the template on the request's server span (`http.route`), but a listener
 * serves without that span when no exporter would read it (HttpServers.ts): building it, its URL
 * parse and its attributes cost every request more than this lookup. The template `*` (the 405
 * catch-all of routes.ts) and no match at all are `unmatched`, so ids in paths never become labels.
 *
 *   const label = routeLabels(router.routes)
 *   label("GET", "/agents/abc?x=1")   // "/agents/:agent_id"
 */
import { UNMATCHED_ROUTE } from "../ops/metrics.js"
import type { RouteTemplate } from "./routes.js"

/** A segment's rank as the router tries it: static 2, parameter 1, wildcard 0. */
type Rank = 0 | 1 | 2

interface Compiled {
  readonly path: string
  /** Static segments in lower case (the router's are). */
  readonly segments: ReadonlyArray<string>
  readonly ranks: ReadonlyArray<Rank>
}

/** find-my-way's `maxParamLength`: a longer parameter ends the search with no route. */
const MAX_PARAM_LENGTH = 100

const compile = (path: string): Compiled => {
  const segments = path === "*" ? ["*"] : path.split("/").slice(1)
  const ranks = segments.map((s): Rank => s === "*" ? 0 : s.startsWith(":") ? 1 : 2)
  return { path, segments: segments.map((s, i) => ranks[i] === 2 ? s.toLowerCase() : s), ranks }
}

/** The order the router's depth-first search reaches routes in: by their segments' ranks, highest first. */
const searchOrder = (a: Compiled, b: Compiled): number => {
  const n = Math.max(a.ranks.length, b.ranks.length)
  for (let i = 0; i < n; i++) {
    const ra = a.ranks[i] ?? -1
    const rb = b.ranks[i] ?? -1
    if (ra !== rb) return rb - ra
  }
  return 0
}

/** The request's path segments as the router reads them (lower case), or undefined for a malformed escape. */
const segmentsOf = (url: string): ReadonlyArray<string> | undefined => {
  let path = url.replace(/\/\/+/g, "/")
  const end = path.slice(1).search(/[?;#]/)
  if (end !== -1) path = path.slice(0, end + 1)
  if (path.includes("%")) {
    try {
      path = decodeURI(path)
    } catch {
      return undefined
    }
  }
  if (path.length > 1 && path.endsWith("/")) path = path.slice(0, -1)
  return path.toLowerCase().split("/").slice(1)
}

type Found = Compiled | "none" | "stop"

/** Walks `route` against the request: matched, not matched, or a too-long parameter (the search ends). */
const walk = (route: Compiled, segments: ReadonlyArray<string>): Found => {
  for (let i = 0; i < route.segments.length; i++) {
    const rank = route.ranks[i]!
    if (rank === 0) return i < segments.length ? route : "none"
    const segment = segments[i]
    if (segment === undefined) return "none"
    if (rank === 2 ? segment !== route.segments[i] : segment === "") return "none"
    if (rank === 1 && segment.length > MAX_PARAM_LENGTH) return "stop"
  }
  return segments.length === route.segments.length ? route : "none"
}

/** `(method, url) → the route label`, from the router's routes. */
export const routeLabels = (routes: Iterable<RouteTemplate>): (method: string, url: string) => string => {
  const all = [...routes].map((r) => ({ method: r.method, route: compile(r.path) }))
  // each method's routes with the ones served under every method (router.all), in search order;
  // node's parser admits only the methods it knows, so this holds a few dozen lists at most
  const byMethod = new Map<string, ReadonlyArray<Compiled>>()
  const forMethod = (method: string): ReadonlyArray<Compiled> => {
    let list = byMethod.get(method)
    if (list === undefined) {
      list = all.filter((r) => r.method === method || r.method === "*").map((r) => r.route).sort(searchOrder)
      byMethod.set(method, list)
    }
    return list
  }
  const find = (method: string, segments: ReadonlyArray<string>): Compiled | undefined => {
    for (const route of forMethod(method)) {
      const found = walk(route, segments)
      if (found === "stop") return undefined
      if (found !== "none") return found
    }
    return undefined
  }
  return (method, url) => {
    const segments = segmentsOf(url)
    if (segments === undefined) return UNMATCHED_ROUTE
    const found = find(method, segments) ?? (method === "HEAD" ? find("GET", segments) : undefined)
    return found === undefined || found.path === "*" ? UNMATCHED_ROUTE : found.path
  }
}
