/**
 * Handlers of the registrar API: each states its operation class (spec §5.6) to the authorization
 * provider, calls the domain service, and turns its domain errors into the envelope: status and
 * Keylime's exact texts (keylime-wire.md §1.3) are chosen here, nowhere else.
 */
import { HttpApiBuilder, HttpServerRequest } from "@effect/platform"
import { Effect, Match, Option } from "effect"
import { BadRequest, Forbidden, InternalError, NotFound, ServiceUnavailable } from "../../schemas/Envelope.js"
import { authorize } from "../http/authorization.js"
import { versionInfo, type VersionSet } from "../http/versions.js"
import { RegistrarApi, RegistrarText } from "./Api.js"
import type { RegistrarError } from "./errors.js"
import { Registrar } from "./Registrar.js"

/** The envelope error of each domain error. */
export const httpErrorOf: (e: RegistrarError) => BadRequest | Forbidden | NotFound | InternalError | ServiceUnavailable = Match
  .type<RegistrarError>()
  .pipe(
    Match.tagsExhaustive({
      InvalidRegistrationData: (e) => new BadRequest({ message: `${RegistrarText.invalidData}: ${e.field} ${e.reason}` }),
      DifferentTpmIdentity: () => new Forbidden({ message: RegistrarText.differentIdentity }),
      ConcurrentRegistration: (e) => new Forbidden({ message: RegistrarText.concurrent(e.agentId) }),
      AgentNotFound: (e) => new NotFound({ message: RegistrarText.notFound(e.agentId) }),
      AgentNotActivated: (e) => new NotFound({ message: RegistrarText.notActivated(e.agentId) }),
      AuthTagMismatch: (e) =>
        new BadRequest({
          message: e.registrationDeleted
            ? RegistrarText.badAuthTag(e.authTag, e.agentId)
            : RegistrarText.badAuthTagActive(e.authTag, e.agentId)
        }),
      ActivationRaced: (e) => new BadRequest({ message: RegistrarText.raced(e.agentId) }),
      // a database still unreachable after the retry is a 503 (come back later), anything else a 500
      RepoError: (e) => e.transient ? new ServiceUnavailable({ message: RegistrarText.unavailable }) : new InternalError({ message: e.message })
    })
  )

const answer = <A, R>(effect: Effect.Effect<A, RegistrarError, R>) => Effect.mapError(effect, httpErrorOf)

export const RegistrarHttpLive = (versions: VersionSet) =>
  HttpApiBuilder.group(RegistrarApi, "agents", (handlers) =>
    Effect.gen(function*() {
      const registrar = yield* Registrar
      const activate = ({ path, payload }: { path: { agent_id: string }; payload: { auth_tag: string } }) =>
        authorize("activate_registration", "public").pipe(
          Effect.zipRight(HttpServerRequest.HttpServerRequest),
          Effect.flatMap((request) =>
            answer(registrar.activate(path.agent_id, payload.auth_tag, Option.getOrElse(request.remoteAddress, () => "(unknown address)")))
          ),
          Effect.as({})
        )
      return handlers
        .handle("version", () =>
          authorize("get_version", "public").pipe(
            Effect.as(versionInfo(versions))
          ))
        .handle("list", () => authorize("list_registrations", "admin").pipe(Effect.zipRight(answer(registrar.list()))))
        .handle("show", ({ path }) =>
          authorize("read_registration", "admin").pipe(Effect.zipRight(answer(registrar.show(path.agent_id)))))
        .handle("remove", ({ path }) =>
          authorize("delete_registration", "admin").pipe(
            Effect.zipRight(answer(registrar.remove(path.agent_id))),
            Effect.as({})
          ))
        .handle("register", ({ path, payload }) =>
          authorize("create_registration", "public").pipe(Effect.zipRight(answer(registrar.register(path.agent_id, payload)))))
        .handle("registerWithBodyId", ({ payload }) =>
          authorize("create_registration", "public").pipe(
            Effect.zipRight(answer(registrar.register(payload.agent_id, payload)))
          ))
        .handle("activate", activate)
        .handle("activatePost", activate)
        .handle("activateLegacy", activate)
        .handle("vactivate", () => Effect.fail(new BadRequest({ message: RegistrarText.deepQuote })))
    }))
