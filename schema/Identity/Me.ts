/**
 * `GET /api/v1/auth/me` (SPEC 4.2, named there): the signed-in user's own account, in the envelope.
 */
import { Schema } from "effect"
import { Envelope } from "./Envelope.js"
import { GrantedRole, Subject, UserId } from "./User.js"

export class Me extends Schema.Class<Me>("Me")({
  id: UserId,
  sub: Subject,
  email: Schema.String,
  name: Schema.String,
  picture: Schema.String.annotations({ description: "Avatar URL; may be empty." }),
  roles: Schema.Array(GrantedRole).annotations({ description: "Granted roles; `user` is implicit." }),
  updated_at: Schema.Int.annotations({ description: "Unix timestamp (seconds) of the last profile change." })
}, { description: "The signed-in user." }) {}

export const MeResponse = Envelope(Me)
