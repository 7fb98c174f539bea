/**
 * The application directory (`GET /oauth/client-info`, `GET /oauth/ecosystem`, public) and the
 * service-to-service user lookup (`GET /users/batch`, `GET /users/search`, client Basic
 * authentication), all in the envelope. A looked-up user never carries an email address.
 */
import { Schema } from "effect"
import { Envelope } from "./Envelope.js"
import { Bounded, MaxLength } from "./Limits.js"
import { GrantedRole, SiteRole, Subject, UserId } from "./User.js"

/** The most ids one `GET /users/batch` may ask for. */
export const MAX_BATCH_IDS = 100
/** `GET /users/search`: `limit` when absent, and its largest value. */
export const SEARCH_DEFAULT_LIMIT = 20
export const SEARCH_MAX_LIMIT = 100

/** A client as the directory shows it. */
export class ClientInfo extends Schema.Class<ClientInfo>("ClientInfo")({
  client_id: Schema.String,
  name: Schema.String,
  logo_url: Schema.String.annotate({ description: "https URL of its logo; may be empty." }),
  tagline: Schema.String.annotate({ description: "One line about the application; may be empty." }),
  homepage_url: Schema.String.annotate({ description: "https URL of the application; may be empty." })
}, { description: "A registered application, as the public directory shows it." }) {}

export const ClientInfoParams = Schema.Struct({
  client_id: Bounded(MaxLength.clientId, 1).annotate({ description: "The client to describe." })
}).annotate({ identifier: "ClientInfoParams" })

export const ClientInfoResponse = Envelope(ClientInfo)

export class Ecosystem extends Schema.Class<Ecosystem>("Ecosystem")({
  items: Schema.Array(ClientInfo).annotate({ description: "Listed clients by display order, then client_id." })
}, { description: "The applications the provider lists publicly." }) {}

export const EcosystemResponse = Envelope(Ecosystem)

/** A user as another service may see them: never the email address. */
export class DirectoryUser extends Schema.Class<DirectoryUser>("DirectoryUser")({
  id: UserId,
  sub: Subject,
  name: Schema.String,
  picture: Schema.String.annotate({ description: "Avatar URL; may be empty." }),
  roles: Schema.Array(GrantedRole).annotate({ description: "Granted roles; `user` is implicit." }),
  site_roles: Schema.Array(SiteRole).annotate({
    description: "The user's roles at the calling client's site; empty when the client has no site."
  })
}, { description: "A user as the service-to-service lookup shows them (no email)." }) {}

export const UserBatchParams = Schema.Struct({
  ids: Bounded(4096).pipe(
    Schema.pattern(/^[1-9][0-9]{0,15}(,[1-9][0-9]{0,15})*$/, { message: () => "comma-separated user ids" })
  ).annotate({ description: `Comma-separated user ids, at most ${MAX_BATCH_IDS}.`, examples: ["1,2,3"] })
}).annotate({ identifier: "UserBatchParams" })

export class UserBatch extends Schema.Class<UserBatch>("UserBatch")({
  items: Schema.Array(DirectoryUser).annotate({ description: "The users found, in request order." }),
  missing: Schema.Array(Schema.Int).annotate({ description: "The ids asked for that name no user." })
}, { description: "Users by id." }) {}

export const UserBatchResponse = Envelope(UserBatch)

export const UserSearchParams = Schema.Struct({
  q: Bounded(256, 1).annotate({
    description: "A name prefix (case-insensitive) or an exact email address (case-insensitive)."
  }),
  limit: Schema.optional(
    Schema.NumberFromString.pipe(Schema.int(), Schema.between(1, SEARCH_MAX_LIMIT))
  ).annotate({ description: `Most users answered (default ${SEARCH_DEFAULT_LIMIT}).` })
}).annotate({ identifier: "UserSearchParams" })

export class UserSearch extends Schema.Class<UserSearch>("UserSearch")({
  items: Schema.Array(DirectoryUser)
}, { description: "Users matching a search." }) {}

export const UserSearchResponse = Envelope(UserSearch)
