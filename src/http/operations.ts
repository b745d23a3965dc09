/**
 * What each route of an HttpApi is, for its authorization middleware (spec §5.2): the action named
 * to the authorization provider and in its logs, the operation class, and the path parameter that
 * names the agent owning the resource. One table per API, complete by type (every endpoint of every
 * group it covers), read by route: an HttpApiMiddleware sees the matched route (method and path
 * template), not the endpoint, so the table is indexed by those.
 *
 *   const operations = operationTable(VerifierApi, { agents: { list: admin("list_agents"), … }, … })
 *   const operation = yield* operations.current   // in the middleware
 */
import type { HttpApi, HttpApiEndpoint, HttpApiGroup } from "@effect/platform"
import { HttpRouter } from "@effect/platform"
import { Effect } from "effect"
import type { OperationClass } from "./authorization.js"

export interface Operation {
  readonly action: string
  readonly operationClass: OperationClass
  /** The path parameter naming the agent that owns the resource (`agent` and `agentOrAdmin` classes). */
  readonly resourceParam?: string
}

export const publicOperation = (action: string): Operation => ({ action, operationClass: "public" })
export const adminOperation = (action: string): Operation => ({ action, operationClass: "admin" })
export const agentOperation = (action: string, resourceParam: string): Operation => ({ action, operationClass: "agent", resourceParam })
export const agentOrAdminOperation = (action: string, resourceParam: string): Operation => ({ action, operationClass: "agentOrAdmin", resourceParam })

/** An operation for every endpoint of the named groups. */
export type OperationsOf<Groups extends HttpApiGroup.HttpApiGroup.Any, Names extends HttpApiGroup.HttpApiGroup.Name<Groups>> = {
  readonly [G in Names]: {
    readonly [E in HttpApiEndpoint.HttpApiEndpoint.Name<HttpApiGroup.HttpApiGroup.EndpointsWithName<Groups, G>>]: Operation
  }
}

/** The operation of the route a request matched, with the owning agent read from its path. */
export interface RouteOperation extends Operation {
  readonly resourceAgentId?: string
}

export interface OperationTable {
  /** The operation of a route (its method and path template as the router has it). */
  readonly find: (method: string, path: string) => Operation | undefined
  /** The matched route's operation; a route missing from the table is a defect (never an open door). */
  readonly current: Effect.Effect<RouteOperation, never, HttpRouter.RouteContext>
}

const routeKey = (method: string, path: string) => `${method} ${path}`

export const operationTable = <
  Id extends string,
  Groups extends HttpApiGroup.HttpApiGroup.Any,
  E,
  R,
  const Names extends HttpApiGroup.HttpApiGroup.Name<Groups>
>(api: HttpApi.HttpApi<Id, Groups, E, R>, operations: OperationsOf<Groups, Names>): OperationTable => {
  const byRoute = new Map<string, Operation>()
  const groups = (api as unknown as HttpApi.HttpApi.AnyWithProps).groups
  for (const [groupName, endpoints] of Object.entries(operations as Record<string, Record<string, Operation>>)) {
    const group = groups[groupName]
    if (group === undefined) throw new Error(`operationTable: no group '${groupName}' in the API`)
    for (const [endpointName, operation] of Object.entries(endpoints)) {
      const endpoint = group.endpoints[endpointName]
      if (endpoint === undefined) throw new Error(`operationTable: no endpoint '${groupName}.${endpointName}' in the API`)
      byRoute.set(routeKey(endpoint.method, endpoint.path), operation)
    }
  }
  return {
    find: (method, path) => byRoute.get(routeKey(method, path)),
    current: Effect.flatMap(HttpRouter.RouteContext, ({ params, route }) => {
      const operation = byRoute.get(routeKey(route.method, route.path))
      if (operation === undefined) return Effect.dieMessage(`no operation declared for ${route.method} ${route.path}`)
      const resourceAgentId = operation.resourceParam === undefined ? undefined : params[operation.resourceParam]
      return Effect.succeed(resourceAgentId === undefined ? operation : { ...operation, resourceAgentId })
    })
  }
}
