/**
 * Which methods a server serves on which route templates, so that a request whose path exists
 * under other methods is answered 405 with `Allow` (as Keylime's router does) rather than 404.
 * The table comes from the server's HttpApi (`routesOf`), so it cannot drift from the routes.
 */
import { HttpApi } from "@effect/platform"

export interface RouteTemplate {
  readonly method: string
  /** As declared, without the version prefix: `/agents/:agent_id`. */
  readonly path: string
}

/** Every endpoint's method and path template of an HttpApi. */
export const routesOf = (api: HttpApi.HttpApi.Any): ReadonlyArray<RouteTemplate> => {
  const routes: Array<RouteTemplate> = []
  HttpApi.reflect(api as HttpApi.HttpApi.AnyWithProps, {
    onGroup: () => {},
    onEndpoint: ({ endpoint }) => void routes.push({ method: endpoint.method, path: endpoint.path })
  })
  return routes
}

const templateRegExp = (path: string): RegExp =>
  new RegExp(`^${path.split("/").map((s) => (s.startsWith(":") ? "[^/]+" : s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"))).join("/")}$`)

/**
 * `(method, path) → the methods served on that path` when the method is not one of them (a 405),
 * or undefined (served, or no such path: the router answers).
 */
export const methodChecker = (routes: ReadonlyArray<RouteTemplate>) => {
  const compiled = routes.map((r) => ({ method: r.method.toUpperCase(), re: templateRegExp(r.path) }))
  return (method: string, path: string): ReadonlyArray<string> | undefined => {
    const allowed = [...new Set(compiled.filter((r) => r.re.test(path)).map((r) => r.method))]
    return allowed.length === 0 || allowed.includes(method.toUpperCase()) ? undefined : allowed
  }
}
