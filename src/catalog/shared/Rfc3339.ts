/**
 * The one form of every catalog timestamp on the wire (docs/api-contract.md, "Records and lists":
 * times are RFC 3339 UTC): `YYYY-MM-DDTHH:MM:SS.ffffffZ`, always six fractional digits, so a value
 * read back is exactly the stored `timestamptz` (PostgreSQL keeps microseconds) and two timestamps
 * compare as text in time order.
 *
 * It is written by PostgreSQL, never by `Date#toISOString`: a JavaScript `Date` holds milliseconds,
 * so formatting one would drop the last three digits the database keeps.
 */

/** SQL text of `column` (any `timestamptz` expression) as an RFC 3339 UTC string. */
export const rfc3339Sql = (column: string): string =>
  `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`
