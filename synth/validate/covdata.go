package validate

import (
	"encoding/binary"
	"errors"
	"fmt"
	"path"
)

// Go's coverage data files, read back. A binary built with -cover writes
// its meta-data (every coverable unit: file, lines, columns) and counter
// snapshots in the formats of Go's internal/coverage packages
// (runtime/coverage.WriteMeta and WriteCounters); no importable package
// reads them, so this file does, checking magic numbers and versions and
// returning an error, never panicking, on anything else: the caller then
// measures coverage the slower way (a process a test, with text profiles).
// Both formats are version 1 from Go 1.20 to 1.26.

var (
	covMetaMagic    = [4]byte{0x00, 'c', 'v', 'm'}
	covCounterMagic = [4]byte{0x00, 'c', 'w', 'm'}
)

const (
	covMetaHeaderSize    = 56 // internal/coverage.MetaFileHeader
	covPkgHeaderSize     = 44 // internal/coverage.CovMetaHeaderSize
	covCounterHeaderSize = 32 // internal/coverage.CounterFileHeader
	covFooterSize        = 16 // internal/coverage.CounterFileFooter
	covSegmentHeaderSize = 16 // internal/coverage.CounterSegmentHeader

	covFlavorRaw  = 1
	covFlavorULEB = 2
)

// covMeta is a meta-data file: for each package (in the file's order, the
// index counter records name), for each function, its units' blocks, each
// in its file's base name.
type covMeta [][][]Block

// covCounters is a counter snapshot: the counters of each function that
// has any, by package and function index; counter k counts unit k.
type covCounters map[[2]uint32][]uint32

// covReader reads little-endian fields of b from off, remembering the
// first read past the end instead of panicking.
type covReader struct {
	b   []byte
	off int
	bad bool
}

func (r *covReader) take(n int) []byte {
	if r.bad || n < 0 || r.off+n > len(r.b) {
		r.bad = true
		return make([]byte, max(n, 0))
	}
	p := r.b[r.off : r.off+n]
	r.off += n
	return p
}

func (r *covReader) u32() uint32 { return binary.LittleEndian.Uint32(r.take(4)) }
func (r *covReader) u64() uint64 { return binary.LittleEndian.Uint64(r.take(8)) }

func (r *covReader) uleb() uint64 {
	var v uint64
	for shift := uint(0); shift < 64; shift += 7 {
		b := r.take(1)[0]
		v |= uint64(b&0x7f) << shift
		if b&0x80 == 0 || r.bad {
			return v
		}
	}
	r.bad = true
	return 0
}

var errCovData = errors.New("malformed coverage data")

// decodeCovMeta reads a meta-data file (runtime/coverage.WriteMeta).
func decodeCovMeta(data []byte) (covMeta, error) {
	r := &covReader{b: data}
	if [4]byte(r.take(4)) != covMetaMagic {
		return nil, fmt.Errorf("%w: not a meta-data file", errCovData)
	}
	if v := r.u32(); v != 1 {
		return nil, fmt.Errorf("%w: meta-data version %d, not 1", errCovData, v)
	}
	total, entries := r.u64(), r.u64()
	r.off = covMetaHeaderSize
	if r.bad || total > uint64(len(data)) || entries > total/8 {
		return nil, fmt.Errorf("%w: meta-data header", errCovData)
	}
	offs, lens := make([]uint64, entries), make([]uint64, entries)
	for i := range offs {
		offs[i] = r.u64()
	}
	for i := range lens {
		lens[i] = r.u64()
	}
	if r.bad {
		return nil, fmt.Errorf("%w: meta-data package table", errCovData)
	}
	meta := make(covMeta, entries)
	for i := range meta {
		if offs[i] > total || lens[i] > total-offs[i] {
			return nil, fmt.Errorf("%w: package %d out of the file", errCovData, i)
		}
		funcs, err := decodeCovPackage(data[offs[i] : offs[i]+lens[i]])
		if err != nil {
			return nil, fmt.Errorf("package %d: %w", i, err)
		}
		meta[i] = funcs
	}
	return meta, nil
}

// decodeCovPackage reads one package's meta-data payload.
func decodeCovPackage(p []byte) ([][]Block, error) {
	r := &covReader{b: p}
	r.off = covPkgHeaderSize - 4
	nfuncs := int(r.u32())
	if r.bad || nfuncs > len(p)/4 {
		return nil, fmt.Errorf("%w: package header", errCovData)
	}
	foffs := make([]uint32, nfuncs)
	for i := range foffs {
		foffs[i] = r.u32()
	}
	nstr := r.uleb()
	if nstr > uint64(len(p)) {
		return nil, fmt.Errorf("%w: string table", errCovData)
	}
	strs := make([]string, nstr)
	for i := range strs {
		strs[i] = string(r.take(int(min(r.uleb(), uint64(len(p))))))
	}
	if r.bad {
		return nil, fmt.Errorf("%w: string table", errCovData)
	}
	str := func(i uint64) string {
		if i >= uint64(len(strs)) {
			r.bad = true
			return ""
		}
		return strs[i]
	}
	funcs := make([][]Block, nfuncs)
	for f, off := range foffs {
		r.off = int(off)
		n := r.uleb()
		str(r.uleb()) // the function's name
		file := path.Base(str(r.uleb()))
		if n > uint64(len(p)) {
			r.bad = true
		}
		if r.bad {
			return nil, fmt.Errorf("%w: function %d", errCovData, f)
		}
		units := make([]Block, n)
		for k := range units {
			units[k] = Block{File: file, StartLine: int(r.uleb()), StartCol: int(r.uleb()), EndLine: int(r.uleb()), EndCol: int(r.uleb())}
			r.uleb() // statements
		}
		if r.bad {
			return nil, fmt.Errorf("%w: function %d", errCovData, f)
		}
		funcs[f] = units
	}
	return funcs, nil
}

// decodeCovCounters reads a counter-data file (runtime/coverage.WriteCounters).
func decodeCovCounters(data []byte) (covCounters, error) {
	r := &covReader{b: data}
	if [4]byte(r.take(4)) != covCounterMagic {
		return nil, fmt.Errorf("%w: not a counter-data file", errCovData)
	}
	if v := r.u32(); v != 1 {
		return nil, fmt.Errorf("%w: counter-data version %d, not 1", errCovData, v)
	}
	r.take(16) // the meta-data's hash
	flavor, bigEndian := r.take(1)[0], r.take(1)[0] != 0
	if r.bad || len(data) < covCounterHeaderSize+covFooterSize || flavor != covFlavorRaw && flavor != covFlavorULEB {
		return nil, fmt.Errorf("%w: counter-data header", errCovData)
	}
	foot := &covReader{b: data, off: len(data) - covFooterSize}
	if [4]byte(foot.take(4)) != covCounterMagic {
		return nil, fmt.Errorf("%w: counter-data footer", errCovData)
	}
	foot.take(4)
	segments := foot.u32()
	u32 := r.uleb32
	if flavor == covFlavorRaw {
		u32 = r.u32
		if bigEndian {
			u32 = func() uint32 { return binary.BigEndian.Uint32(r.take(4)) }
		}
	}
	out := covCounters{}
	r.off = covCounterHeaderSize
	for s := range segments {
		if s > 0 {
			r.take(covFooterSize)
		}
		fns := r.u64()
		strLen, argsLen := r.u32(), r.u32()
		r.take(int(strLen))
		r.take(int(argsLen))
		r.take((4 - r.off%4) % 4)
		if r.bad || fns > uint64(len(data)) {
			return nil, fmt.Errorf("%w: segment %d", errCovData, s)
		}
		for range fns {
			n := u32()
			pkg, fn := u32(), u32()
			if r.bad || uint64(n) > uint64(len(data)) {
				return nil, fmt.Errorf("%w: segment %d", errCovData, s)
			}
			ctrs := make([]uint32, n)
			for k := range ctrs {
				ctrs[k] = u32()
			}
			if r.bad {
				return nil, fmt.Errorf("%w: segment %d", errCovData, s)
			}
			out[[2]uint32{pkg, fn}] = ctrs
		}
	}
	return out, nil
}

func (r *covReader) uleb32() uint32 { return uint32(r.uleb()) }

// executed lists the blocks whose counters grew from before to after (nil
// before: from zero), each once.
func (m covMeta) executed(before, after covCounters) []Block {
	var out []Block
	seen := map[Block]bool{}
	for k, ctrs := range after {
		if int(k[0]) >= len(m) || int(k[1]) >= len(m[k[0]]) {
			continue
		}
		units, was := m[k[0]][k[1]], before[k]
		for i, c := range ctrs {
			if i >= len(units) || c == 0 || i < len(was) && was[i] == c {
				continue
			}
			if b := units[i]; !seen[b] {
				seen[b] = true
				out = append(out, b)
			}
		}
	}
	return out
}
