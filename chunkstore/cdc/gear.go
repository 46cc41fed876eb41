package cdc

// gearSeed seeds the generator of the gear table ("glyd-cdc" in ASCII).
const gearSeed = 0x676c79642d636463

// gear maps each byte value to a random 64-bit word for the gear hash. It is
// generated, not written out, so its origin is checkable: splitmix64 from
// gearSeed, entry i being the (i+1)th output. Its values are part of the
// on-disk format (they decide chunk boundaries); TestGearTablePinned pins
// them.
var gear = genGear(gearSeed)

func genGear(seed uint64) (t [256]uint64) {
	s := seed
	for i := range t {
		t[i] = splitmix64(&s)
	}
	return t
}

// splitmix64 is Vigna's SplitMix64: a Weyl sequence through a 64-bit
// finalizer. Simple, well mixed, and trivial to reimplement elsewhere.
func splitmix64(s *uint64) uint64 {
	*s += 0x9e3779b97f4a7c15
	z := *s
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}
