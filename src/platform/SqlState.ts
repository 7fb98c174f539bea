/**
 * PostgreSQL failures told apart by SQLSTATE (PostgreSQL manual, appendix A "Error Codes") and the
 * constraint they name, never by message text. @effect/sql-pg classifies the SQLSTATE into the
 * `SqlError`'s reason: `23505` is `UniqueViolation` (with the constraint), `40P01` `DeadlockError`,
 * `40001` `SerializationError`.
 */
import { Schedule } from "effect"
import type { SqlError } from "effect/sql/SqlError"

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
