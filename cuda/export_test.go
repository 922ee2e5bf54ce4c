package cuda

// StartOf returns the view of b.Len() elements at the start of b's
// allocation: what a kernel that ignored b's offset would address. The
// broken backends of broken_test.go use it.
func StartOf(b Buffer) Buffer {
	if b.a == nil {
		return b
	}
	return Buffer{a: b.a, n: b.n}
}

// RequireGPU is requireGPU for the external tests.
var RequireGPU = requireGPU
