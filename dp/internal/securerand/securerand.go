package securerand

import (
	"crypto/rand"
	"io"
	"math/bits"
)

// bufSize is how many random bytes a Source fetches at once. Reading 512
// bytes per call keeps the cost of the system call well below the cost of
// using the bytes.
const bufSize = 512

// Source is a buffered stream of uniformly random bits.
type Source struct {
	r    io.Reader
	buf  [bufSize]byte
	pos  int    // next unread byte of buf; bufSize means empty
	word uint64 // bits not yet handed out by Bit
	left uint   // number of valid bits in word
}

// New returns a Source that reads from crypto/rand.
func New() *Source {
	return &Source{r: rand.Reader, pos: bufSize}
}

// NewFromReader returns a Source over r, which must deliver uniformly random
// bytes. It is meant for tests that need a reproducible stream; a read error
// from r makes the Source panic, since noise cannot be drawn without it (the
// crypto/rand reader used by New never fails on supported systems).
func NewFromReader(r io.Reader) *Source {
	return &Source{r: r, pos: bufSize}
}

func (s *Source) fill() {
	if _, err := io.ReadFull(s.r, s.buf[:]); err != nil {
		// crypto/rand.Read crashes the program on failure since Go 1.24; a
		// test reader that fails is a bug in the test.
		panic("securerand: random source failed: " + err.Error())
	}
	s.pos = 0
}

// Uint64 returns 64 uniformly random bits.
func (s *Source) Uint64() uint64 {
	if s.pos+8 > bufSize {
		s.fill()
	}
	b := s.buf[s.pos : s.pos+8]
	s.pos += 8
	return uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
		uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56
}

// Bit returns one uniformly random bit.
func (s *Source) Bit() bool {
	if s.left == 0 {
		s.refillWord()
	}
	b := s.word>>63 == 1 // the unread bits are the word's top ones
	s.word <<= 1
	s.left--
	return b
}

// refillWord takes the next 64 bits for Bit and FirstDifference.
func (s *Source) refillWord() {
	s.word = s.Uint64()
	s.left = 64
}

// FirstDifference reads random bits, one after another as Bit hands them
// out, against the n leading binary digits of digits (its most significant
// bit first; 1 <= n <= 64), and stops at the first bit that differs from its
// digit. It returns that digit's index, having consumed the bits up to and
// including it, or n when all n bits matched their digits (n bits consumed).
// It consumes exactly the bits a loop of Bit calls comparing one digit at a
// time would, and returns the same answer, a word at a time: the exact
// samplers compare a uniform real with a ratio's binary expansion this way.
func (s *Source) FirstDifference(digits uint64, n uint) uint {
	read := uint(0)
	for read < n {
		if s.left == 0 {
			s.refillWord()
		}
		m := min(s.left, n-read)
		diff := (s.word ^ digits<<read) >> (64 - m) // the next m bits against their digits
		if diff != 0 {
			j := m - uint(bits.Len64(diff)) // the first difference, j < m
			s.word <<= j + 1                // j+1 = 64 empties the word
			s.left -= j + 1
			return read + j
		}
		s.word <<= m
		s.left -= m
		read += m
	}
	return n
}

// Uint64n returns a uniformly random integer in [0, n). It panics if n is 0,
// which is a programming error in the caller. It uses Lemire's multiply and
// reject method, which is exact: every value has probability exactly 1/n.
func (s *Source) Uint64n(n uint64) uint64 {
	if n == 0 {
		panic("securerand: Uint64n(0)")
	}
	if n&(n-1) == 0 { // power of two
		return s.Uint64() & (n - 1)
	}
	hi, lo := bits.Mul64(s.Uint64(), n)
	if lo < n {
		thresh := -n % n
		for lo < thresh {
			hi, lo = bits.Mul64(s.Uint64(), n)
		}
	}
	return hi
}
