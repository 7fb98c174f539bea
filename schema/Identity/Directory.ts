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
const searchLimitDescription = `Most users answered (default ${SEARCH_DEFAULT_LIMIT}).`

// Each class's fields are a Struct carrying the identifier and description: the OpenAPI document
// shows the encoded Struct, which would otherwise be an undescribed `<Name>Encoded`; the class's
// own description is the one a response takes.

/** A client as the directory shows it. */
export class ClientInfo extends Schema.Class<ClientInfo>("ClientInfo")(
  Schema.Struct({
    client_id: Schema.String,
    name: Schema.String,
    logo_url: Schema.String.annotate({ description: "https URL of its logo; may be empty." }),
    tagline: Schema.String.annotate({ description: "One line about the application; may be empty." }),
    homepage_url: Schema.String.annotate({ description: "https URL of the application; may be empty." })
  }).annotate({ identifier: "ClientInfo", description: "A registered application, as the public directory shows it." }),
  { description: "A registered application, as the public directory shows it." }
) {}

export const ClientInfoParams = Schema.Struct({
  client_id: Bounded(MaxLength.clientId, 1).annotate({ description: "The client to describe." })
}).annotate({ identifier: "ClientInfoParams" })

export const ClientInfoResponse = Envelope(ClientInfo)

export class Ecosystem extends Schema.Class<Ecosystem>("Ecosystem")(
  Schema.Struct({
    items: Schema.Array(ClientInfo).annotate({ description: "Listed clients by display order, then client_id." })
  }).annotate({ identifier: "Ecosystem", description: "The applications the provider lists publicly." }),
  { description: "The applications the provider lists publicly." }
) {}

export const EcosystemResponse = Envelope(Ecosystem)

/** A user as another service may see them: never the email address. */
export class DirectoryUser extends Schema.Class<DirectoryUser>("DirectoryUser")(
  Schema.Struct({
    id: UserId,
    sub: Subject,
    name: Schema.String,
    picture: Schema.String.annotate({ description: "Avatar URL; may be empty." }),
    roles: Schema.Array(GrantedRole).annotate({ description: "Granted roles; `user` is implicit." }),
    site_roles: Schema.Array(SiteRole).annotate({
      description: "The user's roles at the calling client's site; empty when the client has no site."
    })
  }).annotate({
    identifier: "DirectoryUser",
    description: "A user as the service-to-service lookup shows them (no email)."
  }),
  { description: "A user as the service-to-service lookup shows them (no email)." }
) {}

export const UserBatchParams = Schema.Struct({
  // Annotated before the second pattern, whose JSON Schema goes to an `allOf`.
  ids: Bounded(4096).annotate({
    description: `Comma-separated user ids, at most ${MAX_BATCH_IDS}.`,
    examples: ["1,2,3"]
  })
    .check(Schema.isPattern(/^[1-9][0-9]{0,15}(,[1-9][0-9]{0,15})*$/u, { message: "comma-separated user ids" }))
}).annotate({ identifier: "UserBatchParams" })

export class UserBatch extends Schema.Class<UserBatch>("UserBatch")(
  Schema.Struct({
    items: Schema.Array(DirectoryUser).annotate({ description: "The users found, in request order." }),
    missing: Schema.Array(Schema.Int).annotate({ description: "The ids asked for that name no user." })
  }).annotate({ identifier: "UserBatch", description: "Users by id." }),
  { description: "Users by id." }
) {}

export const UserBatchResponse = Envelope(UserBatch)

export const UserSearchParams = Schema.Struct({
  q: Bounded(256, 1).annotate({
    description: "A name prefix (case-insensitive) or an exact email address (case-insensitive)."
  }),
  // Described on the encoded side too, the string: a query parameter is documented by it.
  limit: Schema.optionalKey(
    Schema.NumberFromString.check(Schema.isInt(), Schema.isBetween({ minimum: 1, maximum: SEARCH_MAX_LIMIT }))
      .annotate({ description: searchLimitDescription })
      .pipe(Schema.annotateEncoded({ description: searchLimitDescription }))
  )
}).annotate({ identifier: "UserSearchParams" })

export class UserSearch extends Schema.Class<UserSearch>("UserSearch")(
  Schema.Struct({
    items: Schema.Array(DirectoryUser)
  }).annotate({ identifier: "UserSearch", description: "Users matching a search." }),
  { description: "Users matching a search." }
) {}

export const UserSearchResponse = Envelope(UserSearch)
