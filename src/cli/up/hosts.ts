/**
 * Where `attest up` listens (issue 22 §8): `--host` must be a loopback address unless
 * `--expose-on-network` says otherwise; then the registrar, the verifier, the agents and the
 * metrics listeners take that address, this process's own clients (tenant, agents registering,
 * push agents) reach them through loopback when it is a wildcard, and the dashboard, which reads
 * with the admin certificate, stays on 127.0.0.1 whatever `--host` says.
 *
 *   upHosts("0.0.0.0", false)  // Left: the refusal, naming the flag
 *   upHosts("0.0.0.0", true)   // Right({ listen: "0.0.0.0", reach: "127.0.0.1", dashboard: "127.0.0.1", exposed: true })
 */
import { Either } from "effect"
import { isLoopbackHost, localReach } from "../../http/loopback.js"

export interface UpHosts {
  /** Registrar, verifier, agents and metrics listeners. */
  readonly listen: string
  /** Where this process's own clients connect to them. */
  readonly reach: string
  /** The dashboard's address: always loopback. */
  readonly dashboard: string
  /** True when the listeners accept connections from the network. */
  readonly exposed: boolean
}

export const EXPOSE_FLAG = "--expose-on-network"

export const upHosts = (host: string, exposeOnNetwork: boolean): Either.Either<UpHosts, string> => {
  if (isLoopbackHost(host)) return Either.right({ listen: host, reach: host, dashboard: host, exposed: false })
  if (!exposeOnNetwork) {
    return Either.left(
      `--host ${host} is not a loopback address: the registrar, the verifier, the agents and the metrics listeners would accept connections from the network ` +
        `(with simulated TPMs and a generated CA). Use 127.0.0.1, ::1 or localhost, or add ${EXPOSE_FLAG} to do it anyway (the dashboard stays on 127.0.0.1)`
    )
  }
  return Either.right({ listen: host, reach: localReach(host), dashboard: "127.0.0.1", exposed: true })
}
