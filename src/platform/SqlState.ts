/**
 * PostgreSQL failures told apart by SQLSTATE (PostgreSQL manual, appendix A "Error Codes") and the
 * constraint they name, never by message text. @effect/sql-pg classifies the SQLSTATE into the
 * `SqlError`'s reason: `23505` is `UniqueViolation` (with the constraint), `40P01` `DeadlockError`,
 * `40001` `SerializationError`, `57014` `StatementTimeoutError`, class `08` `ConnectionError`; the
 * server's fields (`code` among them) are the reason's `cause`.
 */
import { Schedule } from "effect"
import { isSqlError, type SqlError } from "effect/sql/SqlError"

/** `23505 unique_violation` of the unique index or constraint `constraint`. */
export const isUniqueViolation = (error: SqlError, constraint: string): boolean =>
  error.reason._tag === "UniqueViolation" && error.reason.constraint === constraint

/** `40P01 deadlock_detected` and `40001 serialization_failure`: the transaction can simply run again. */
export const isRetryableTransaction = (error: SqlError): boolean =>
  error.reason._tag === "DeadlockError" || error.reason._tag === "SerializationError"

/** How often and how soon a retryable transaction runs again: both schedules must recur, at the slower delay. */
export const transactionRetrySchedule = Schedule.max([
  Schedule.exponential("20 millis").pipe(Schedule.jittered),
  Schedule.recurs(5)
])

/**
 * SQLSTATEs of a database that cannot run the statement now, though the statement was fine: class `08`
 * connection exceptions, `57014 query_canceled` (the statement timeout, or a cancel), `57P01
 * admin_shutdown`, `57P02 crash_shutdown`, `57P03 cannot_connect_now`, `53300 too_many_connections`.
 */
const isUnavailableSqlState = (code: string): boolean =>
  code.startsWith("08") || ["57014", "57P01", "57P02", "57P03", "53300"].includes(code)

/**
 * Node's system error codes (Node.js documentation, "Common system errors") of a connection to the
 * database that could not be made or was lost.
 */
const unavailableSystemErrors: ReadonlySet<string> = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ECONNABORTED",
  "EPIPE",
  "ETIMEDOUT",
  "ENOTFOUND",
  "EAI_AGAIN",
  "EHOSTUNREACH",
  "ENETUNREACH"
])

/**
 * Transient database failures: unreachable, shutting down, out of connections, or a statement
 * cancelled under load. The request was not wrong; the client should retry later. Told by structured
 * fields only: @effect/sql-pg's reason (`ConnectionError` is also what it reports for a connection
 * refused, closed by the other end or not made within `connectTimeout`, whose causes carry no SQLSTATE
 * and not always a system error code), then the `code` of each cause down the chain.
 */
export const isDatabaseUnavailable = (u: unknown): boolean => {
  if (!isSqlError(u)) return false
  if (u.reason._tag === "ConnectionError" || u.reason._tag === "StatementTimeoutError") return true
  let cause: unknown = u.reason.cause
  for (let depth = 0; typeof cause === "object" && cause !== null && depth < 4; depth++) {
    const code: unknown = (cause as { readonly code?: unknown }).code
    if (typeof code === "string" && (isUnavailableSqlState(code) || unavailableSystemErrors.has(code))) return true
    cause = (cause as { readonly cause?: unknown }).cause
  }
  return false
}
