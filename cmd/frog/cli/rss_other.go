//go:build !unix

package cli

// peakRSS is unknown on this system.
func peakRSS() int64 { return 0 }
