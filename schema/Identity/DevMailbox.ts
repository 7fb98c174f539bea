/**
 * The development mailbox (src/identity/http/DevHttp.ts): what the provider mailed, read back from
 * its outbox, for a developer without an SMTP server. It answers only where it is enabled
 * (src/identity/mail/MailConfig.ts); elsewhere both paths are 404 like any unknown path.
 */
import { Schema } from "effect"
import { Envelope } from "./Envelope.js"
import { Bounded, MaxLength } from "./Limits.js"

export const DevMailboxParams = Schema.Struct({
  to: Schema.optionalKey(Bounded(MaxLength.email)).annotate({
    description: "The recipient's address (case-insensitive). Without it: every recipient's messages."
  })
}).annotate({ identifier: "DevMailboxParams" })
export type DevMailboxParams = typeof DevMailboxParams.Type

// Each class's fields are a Struct carrying the identifier and description: the OpenAPI document
// shows the encoded Struct, which would otherwise be an undescribed `<Name>Encoded`; the class's
// own description is the one a response takes.

export class DevMailboxMessage extends Schema.Class<DevMailboxMessage>("DevMailboxMessage")(
  Schema.Struct({
    to: Schema.String,
    subject: Schema.String,
    text: Schema.String.annotate({ description: "The plain-text body." }),
    html: Schema.optionalKey(Schema.String).annotate({
      description: "The HTML alternative, when the message has one."
    }),
    created_at: Schema.String.annotate({ description: "When the message was queued (RFC 3339, UTC)." })
  }).annotate({ identifier: "DevMailboxMessage", description: "One message of the outbox, sent or not." }),
  { description: "One message of the outbox, sent or not." }
) {}

export const DevMailbox = Schema.Struct({
  items: Schema.Array(DevMailboxMessage).annotate({
    description: "Oldest first; the newest 100 at most."
  })
}).annotate({ identifier: "DevMailbox" })

export const DevMailboxResponse = Envelope(DevMailbox)
