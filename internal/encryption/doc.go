// Package encryption keeps an encrypted location's objects unreadable to
// whoever reads the bucket: every object Salvor writes to it is encrypted
// on the way out and checked and decrypted on the way in, streamed, so
// memory does not grow with an object's size.
//
// It uses age (filippo.io/age), a small, audited format made for exactly
// this: each object gets a fresh random file key, wrapped (X25519) to the
// location's key; the payload is sealed with ChaCha20-Poly1305 in 64 KiB
// chunks, each authenticated, the last one marked, so a changed byte, a
// truncated object or a wrong key is an error before any of it is used.
// A location's key Secret holds age identities, oldest first: the newest
// encrypts, all decrypt, so rotating adds a key and old backups stay
// readable.
package encryption
