package pbeam

import "encoding/binary"

// priority is the keyed hash that orders a privacy unit's partitions: a unit
// keeps the MaxPartitionsContributed partitions of smallest priority. The key
// (the PrivacySpec's seed, from crypto/rand) makes the choice unpredictable
// to whoever wrote the data; being a function of (unit, partition), it makes
// the choice the same whatever the order in which Beam merges partial
// results, so bounding is one mergeable combiner. The guarantee does not
// depend on the choice being random: any choice of at most kappa partitions
// bounds the unit's contribution; randomness only avoids bias.
func priority(seed uint64, unit, partition []byte) uint64 {
	h := mix(seed ^ 0x9e3779b97f4a7c15)
	h = absorb(h, unit)
	h = mix(h ^ uint64(len(unit)))
	h = absorb(h, partition)
	return mix(h ^ uint64(len(partition)))
}

// absorb folds b into h eight bytes at a time.
func absorb(h uint64, b []byte) uint64 {
	for len(b) >= 8 {
		h = mix(h ^ binary.LittleEndian.Uint64(b))
		b = b[8:]
	}
	var tail [8]byte
	copy(tail[:], b)
	return mix(h ^ binary.LittleEndian.Uint64(tail[:]) ^ uint64(len(b))<<56)
}

// mix is the splitmix64 finaliser.
func mix(z uint64) uint64 {
	z += 0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}
