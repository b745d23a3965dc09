/**
 * Handlers of the registrar API: each states its operation class (spec §5.6) to the authorization
 * provider, then calls the domain service.
 */
import { HttpApiBuilder, HttpServerRequest } from "@effect/platform"
import { Effect, Option } from "effect"
import { BadRequest } from "../../schemas/Envelope.js"
import { authorize } from "../http/authorization.js"
import type { VersionSet } from "../http/versions.js"
import { RegistrarApi, RegistrarText } from "./Api.js"
import { Registrar } from "./Registrar.js"

export const RegistrarHttpLive = (versions: VersionSet) =>
  HttpApiBuilder.group(RegistrarApi, "agents", (handlers) =>
    Effect.gen(function*() {
      const registrar = yield* Registrar
      const activate = ({ path, payload }: { path: { agent_id: string }; payload: { auth_tag: string } }) =>
        authorize("activate_registration", "public").pipe(
          Effect.zipRight(HttpServerRequest.HttpServerRequest),
          Effect.flatMap((request) =>
            registrar.activate(path.agent_id, payload.auth_tag, Option.getOrElse(request.remoteAddress, () => "(unknown address)"))
          ),
          Effect.as({})
        )
      return handlers
        .handle("version", () =>
          authorize("get_version", "public").pipe(
            Effect.as({ current_version: versions.current, supported_versions: versions.supported })
          ))
        .handle("list", () => authorize("list_registrations", "admin").pipe(Effect.zipRight(registrar.list())))
        .handle("show", ({ path }) =>
          authorize("read_registration", "admin").pipe(Effect.zipRight(registrar.show(path.agent_id))))
        .handle("remove", ({ path }) =>
          authorize("delete_registration", "admin").pipe(
            Effect.zipRight(registrar.remove(path.agent_id)),
            Effect.as({})
          ))
        .handle("register", ({ path, payload }) =>
          authorize("create_registration", "public").pipe(Effect.zipRight(registrar.register(path.agent_id, payload))))
        .handle("registerWithBodyId", ({ payload }) =>
          authorize("create_registration", "public").pipe(
            Effect.zipRight(registrar.register(payload.agent_id, payload))
          ))
        .handle("activate", activate)
        .handle("activatePost", activate)
        .handle("activateLegacy", activate)
        .handle("vactivate", () => Effect.fail(new BadRequest({ message: RegistrarText.deepQuote })))
    }))
