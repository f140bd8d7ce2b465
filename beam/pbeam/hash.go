package pbeam

// priority is the keyed hash that orders a privacy unit's partitions: a unit
// keeps the MaxPartitionsContributed partitions of smallest priority. The key
// (the PrivacySpec's seed, from crypto/rand) makes the choice unpredictable
// to whoever wrote the data; being a function of (unit, partition), it makes
// the choice the same whatever the order in which Beam merges partial
// results, so bounding is one mergeable combiner. The guarantee does not
// depend on the choice being random: any choice of at most kappa partitions
// bounds the unit's contribution; randomness only avoids bias.
func priority[U, P string | []byte](seed uint64, unit U, partition P) uint64 {
	h := mix(seed ^ 0x9e3779b97f4a7c15)
	h = absorb(h, unit)
	h = mix(h ^ uint64(len(unit)))
	h = absorb(h, partition)
	return mix(h ^ uint64(len(partition)))
}

// absorb folds b into h eight bytes (little-endian) at a time.
func absorb[B string | []byte](h uint64, b B) uint64 {
	i := 0
	for ; i+8 <= len(b); i += 8 {
		h = mix(h ^ (uint64(b[i]) | uint64(b[i+1])<<8 | uint64(b[i+2])<<16 | uint64(b[i+3])<<24 |
			uint64(b[i+4])<<32 | uint64(b[i+5])<<40 | uint64(b[i+6])<<48 | uint64(b[i+7])<<56))
	}
	var tail uint64
	for j := 0; i+j < len(b); j++ {
		tail |= uint64(b[i+j]) << (8 * j)
	}
	return mix(h ^ tail ^ uint64(len(b)-i)<<56)
}

// mix is the splitmix64 finaliser.
func mix(z uint64) uint64 {
	z += 0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}
