/**
 * What a new password must be (NIST SP 800-63B section 5.1.1.2): at least 8 characters (at most
 * 1024, which bounds the hashing work), not one of the passwords every guesser tries first, and
 * not built from the account's own email address or name. No composition rules and no expiry,
 * which the same guideline advises against.
 */
import { MaxLength } from "../../../schema/Identity/Limits.js"
import { MIN_PASSWORD_LENGTH } from "../users/Users.js"

/** The passwords that top every published list of leaked passwords, lower-cased. */
const COMMON = new Set([
  "password",
  "password1",
  "password12",
  "password123",
  "passw0rd",
  "p@ssw0rd",
  "12345678",
  "123456789",
  "1234567890",
  "12345678910",
  "87654321",
  "11111111",
  "00000000",
  "88888888",
  "123123123",
  "1q2w3e4r",
  "1q2w3e4r5t",
  "qwertyui",
  "qwertyuiop",
  "qwerty123",
  "qwerty1234",
  "asdfghjkl",
  "zxcvbnm1",
  "iloveyou",
  "iloveyou1",
  "sunshine",
  "princess",
  "football",
  "baseball",
  "welcome1",
  "welcome123",
  "letmein1",
  "trustno1",
  "superman",
  "starwars",
  "dragon123",
  "monkey123",
  "abc12345",
  "abcd1234",
  "aa123456",
  "admin123",
  "administrator",
  "changeme",
  "computer",
  "internet",
  "whatever",
  "michelle",
  "jennifer",
  "shadow123",
  "master123",
  "access14",
  "mustang1",
  "charlie1",
  "qazwsxedc",
  "1qaz2wsx",
  "zaq12wsx",
  "secret123",
  "test1234",
  "testtest",
  "visualnovel",
  "shiori123"
])

/** Why `password` is refused for an account with this email and name, or undefined when it is fine. */
export const weakPasswordReason = (
  password: string,
  account: { readonly email: string; readonly name: string }
): string | undefined => {
  if (password.length < MIN_PASSWORD_LENGTH) return `shorter than ${MIN_PASSWORD_LENGTH} characters`
  if (password.length > MaxLength.password) return `longer than ${MaxLength.password} characters`
  const lower = password.toLowerCase()
  if (COMMON.has(lower)) return "one of the most common passwords"
  const local = account.email.split("@")[0]!.toLowerCase()
  if (local.length >= 4 && lower.includes(local)) return "contains the email address"
  const name = account.name.trim().toLowerCase()
  if (name.length >= 4 && lower.includes(name)) return "contains the name"
  return undefined
}
