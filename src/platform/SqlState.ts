/**
 * PostgreSQL failures told apart by SQLSTATE (PostgreSQL manual, appendix A "Error Codes") and the
 * constraint they name, never by message text.
 */
import type { SqlError } from "effect/sql/SqlError"
import { Predicate, Schedule } from "effect"

/** `23505 unique_violation` of the unique index or constraint `constraint`. */
export const isUniqueViolation = (error: SqlError, constraint: string): boolean => {
  const cause = error.cause
  return Predicate.hasProperty(cause, "code") && cause.code === "23505" &&
    Predicate.hasProperty(cause, "constraint") && cause.constraint === constraint
}

/** `40P01 deadlock_detected` and `40001 serialization_failure`: the transaction can simply run again. */
export const isRetryableTransaction = (error: SqlError): boolean => {
  const cause = error.cause
  return Predicate.hasProperty(cause, "code") && (cause.code === "40P01" || cause.code === "40001")
}

/** How often and how soon a retryable transaction runs again. */
export const transactionRetrySchedule = Schedule.exponential("20 millis").pipe(
  Schedule.jittered,
  Schedule.intersect(Schedule.recurs(5))
)
