/**
 * The size of libuv's thread pool, fixed before anything uses the pool (README "Operating it").
 *
 * The pool runs password hashing (scrypt), image decoding (sharp), file access, DNS lookups and
 * compression; libuv reads `UV_THREADPOOL_SIZE` once, when the first task is queued, and never
 * again. So this module is the first import of src/main.ts and imports nothing that could queue a
 * task: an ES module's imports are evaluated in order before its body, so the variable would be set
 * too late in main.ts's own body if any module imported before it queued work at load time. It is a
 * module of the server's own rather than `UV_THREADPOOL_SIZE=... node` in the npm script so that
 * every way of starting `dist/src/main.js` (npm start, the tests, the benchmarks, a supervisor)
 * gets the same pool.
 *
 * `UV_THREADPOOL_SIZE` set in the environment is honoured (1 to 1024, libuv's range); unset, it is
 * twice the cores, at least libuv's own 4. The pool's threads are cheap and spend part of their
 * time blocked; what bounds CPU work is not the pool's size but the users' own limits
 * (`IDENTITY_SCRYPT_CONCURRENCY`, and the image work derived from the size set here:
 * src/identity/account/Avatars.ts), which read the value back as a setting.
 */
import * as Os from "node:os"

const given = process.env.UV_THREADPOOL_SIZE
if (given === undefined || given === "") {
  process.env.UV_THREADPOOL_SIZE = String(Math.max(4, 2 * Os.availableParallelism()))
} else if (!/^[0-9]+$/.test(given) || Number(given) < 1 || Number(given) > 1024) {
  throw new Error(`UV_THREADPOOL_SIZE must be an integer from 1 to 1024, not ${given}`)
}
