package mutate

import (
	"bytes"
	"fmt"
	"strings"
)

// region says that a[aOff:aOff+aLen] became b[bOff:bOff+bLen]; the text
// between regions is identical in a and b.
type region struct{ aOff, aLen, bOff, bLen int }

const diffContext = 3

// unified returns a unified diff from a to b, both named path (as "a/path" and
// "b/path", the form git apply and patch -p1 take), given the regions where
// they differ in increasing order. It returns "" when a and b are equal.
func unified(path string, a, b []byte, regs []region) string {
	al, bl := lineStarts(a), lineStarts(b)
	type block struct{ a0, a1, b0, b1 int } // changed line ranges, half-open
	var blocks []block
	for _, r := range regs {
		blk := block{
			a0: lineOf(al, r.aOff), a1: lineOf(al, r.aOff+r.aLen) + 1,
			b0: lineOf(bl, r.bOff), b1: lineOf(bl, r.bOff+r.bLen) + 1,
		}
		blk.a1, blk.b1 = min(blk.a1, len(al)), min(blk.b1, len(bl))
		// Trim identical lines at both ends.
		for blk.a0 < blk.a1 && blk.b0 < blk.b1 && line(a, al, blk.a0) == line(b, bl, blk.b0) {
			blk.a0++
			blk.b0++
		}
		for blk.a0 < blk.a1 && blk.b0 < blk.b1 && line(a, al, blk.a1-1) == line(b, bl, blk.b1-1) {
			blk.a1--
			blk.b1--
		}
		if blk.a0 == blk.a1 && blk.b0 == blk.b1 {
			continue
		}
		if n := len(blocks); n > 0 && blk.a0 <= blocks[n-1].a1 {
			// Regions on shared lines: merge.
			blocks[n-1].a1 = max(blocks[n-1].a1, blk.a1)
			blocks[n-1].b1 = max(blocks[n-1].b1, blk.b1)
			continue
		}
		blocks = append(blocks, blk)
	}
	if len(blocks) == 0 {
		return ""
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "--- a/%s\n+++ b/%s\n", path, path)
	for i := 0; i < len(blocks); {
		j := i + 1
		for j < len(blocks) && blocks[j].a0-blocks[j-1].a1 <= 2*diffContext {
			j++
		}
		first, last := blocks[i], blocks[j-1]
		ctxA0 := max(0, first.a0-diffContext)
		ctxB0 := first.b0 - (first.a0 - ctxA0)
		ctxA1 := min(len(al), last.a1+diffContext)
		ctxB1 := last.b1 + (ctxA1 - last.a1)
		fmt.Fprintf(&sb, "@@ -%s +%s @@\n", hunkRange(ctxA0, ctxA1-ctxA0), hunkRange(ctxB0, ctxB1-ctxB0))
		pos := ctxA0
		for _, blk := range blocks[i:j] {
			for ; pos < blk.a0; pos++ {
				writeLine(&sb, ' ', line(a, al, pos))
			}
			for k := blk.a0; k < blk.a1; k++ {
				writeLine(&sb, '-', line(a, al, k))
			}
			for k := blk.b0; k < blk.b1; k++ {
				writeLine(&sb, '+', line(b, bl, k))
			}
			pos = blk.a1
		}
		for ; pos < ctxA1; pos++ {
			writeLine(&sb, ' ', line(a, al, pos))
		}
		i = j
	}
	return sb.String()
}

func hunkRange(start, n int) string {
	if n == 0 {
		return fmt.Sprintf("%d,0", start)
	}
	if n == 1 {
		return fmt.Sprintf("%d", start+1)
	}
	return fmt.Sprintf("%d,%d", start+1, n)
}

func writeLine(sb *strings.Builder, prefix byte, l string) {
	sb.WriteByte(prefix)
	sb.WriteString(l)
	if !strings.HasSuffix(l, "\n") {
		sb.WriteString("\n\\ No newline at end of file\n")
	}
}

// lineStarts returns the offset of each line's first byte. A final line
// without a newline counts; an empty trailing line after the last newline
// does not.
func lineStarts(s []byte) []int {
	starts := []int{}
	for off := 0; off < len(s); {
		starts = append(starts, off)
		i := bytes.IndexByte(s[off:], '\n')
		if i < 0 {
			break
		}
		off += i + 1
	}
	return starts
}

// lineOf returns the index of the line holding offset off.
func lineOf(starts []int, off int) int {
	lo, hi := 0, len(starts)
	for lo < hi {
		m := (lo + hi) / 2
		if starts[m] <= off {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return max(0, lo-1)
}

func line(s []byte, starts []int, i int) string {
	end := len(s)
	if i+1 < len(starts) {
		end = starts[i+1]
	}
	return string(s[starts[i]:end])
}
