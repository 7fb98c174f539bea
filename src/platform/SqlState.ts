/**
 * PostgreSQL failures told apart by SQLSTATE (PostgreSQL manual, appendix A "Error Codes") and the
 * constraint they name, never by message text.
 */
import type { SqlError } from "@effect/sql/SqlError"
import { Predicate } from "effect"

/** `23505 unique_violation` of the unique index or constraint `constraint`. */
export const isUniqueViolation = (error: SqlError, constraint: string): boolean => {
  const cause = error.cause
  return Predicate.hasProperty(cause, "code") && cause.code === "23505" &&
    Predicate.hasProperty(cause, "constraint") && cause.constraint === constraint
}
