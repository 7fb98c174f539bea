/**
 * The userinfo response (`GET /oauth/userinfo`, OpenID Connect Core section 5.3), bare JSON.
 *
 * `id`, `sub`, `roles` and `updated_at` are always present. `name` and `picture` come only with scope
 * `profile` or an empty scope, `email` and `email_verified` only with scope `email` or an empty
 * scope, and `site_roles` is omitted when the calling token's site grants none.
 */
import { Schema } from "effect"
import { GrantedRole, SiteRole, Subject, UserId } from "./User.js"

// Each class's fields are a Struct carrying the identifier and description: the OpenAPI document
// shows the encoded Struct, which would otherwise be an undescribed `<Name>Encoded`; the class's
// own description is the one a response takes.

export class UserInfo extends Schema.Class<UserInfo>("UserInfo")(
  Schema.Struct({
    id: UserId,
    sub: Subject,
    name: Schema.optionalKey(Schema.String).annotate({
      description: "Present with scope `profile` or an empty scope."
    }),
    email: Schema.optionalKey(Schema.String).annotate({
      description: "Present with scope `email` or an empty scope."
    }),
    email_verified: Schema.optionalKey(Schema.Boolean).annotate({
      description: "Whether the address was verified (OpenID Connect Core section 5.1); true for accounts an " +
        "operator created. Present whenever `email` is."
    }),
    picture: Schema.optionalKey(Schema.String).annotate({
      description: "Avatar URL; may be empty. Present with scope `profile` or an empty scope."
    }),
    roles: Schema.Array(GrantedRole).annotate({ description: "Same as the access token's `roles` claim." }),
    site_roles: Schema.optionalKey(Schema.Array(SiteRole)).annotate({
      description: "Roles scoped to the calling token's site; omitted when none granted."
    }),
    updated_at: Schema.Int.annotate({ description: "Unix timestamp (seconds) of the last profile change." })
  }).annotate({ identifier: "UserInfo", description: "User information." }),
  { description: "User information." }
) {}
