// Package securerand is the only source of randomness of dpsql's privacy
// mechanisms.
//
// A Source hands out uniform bits, 64-bit words and integers in a range, and
// compares its next bits with given binary digits up to the first that
// differs (FirstDifference), which the exact samplers use to compare a
// uniform real with a ratio a word at a time. The
// production Source, from New, reads the operating system's CSPRNG through
// crypto/rand; it never falls back to math/rand. NewFromReader builds a Source
// over any byte stream and exists for tests that need reproducible noise;
// being internal to dp/, it cannot be reached by code outside the dp tree.
//
// A Source buffers bytes and is not safe for concurrent use; a mechanism that
// may be called from several goroutines guards its Source with a mutex.
package securerand
