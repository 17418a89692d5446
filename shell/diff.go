package shell

import (
	"fmt"
	"strings"
)

// UnifiedDiff returns a unified diff (3 lines of context) from old to new,
// line by line, with name in the --- and +++ headers; "" when they are
// equal. A last line without a newline is marked as diff(1) marks it.
func UnifiedDiff(name, old, new string) string {
	if old == new {
		return ""
	}
	a, b := splitLines(old), splitLines(new)
	ops := diffLines(a, b)
	var out strings.Builder
	fmt.Fprintf(&out, "--- a/%s\n+++ b/%s\n", name, name)
	const ctx = 3
	// Group the edit script into hunks.
	for i := 0; i < len(ops); {
		if ops[i].kind == ' ' {
			i++
			continue
		}
		start := max(i-ctx, 0)
		end := i
		for end < len(ops) {
			if ops[end].kind != ' ' {
				end++
				continue
			}
			// A run of equal lines: does the next change come within 2*ctx?
			j := end
			for j < len(ops) && ops[j].kind == ' ' {
				j++
			}
			if j == len(ops) || j-end > 2*ctx {
				end = min(end+ctx, len(ops))
				break
			}
			end = j
		}
		h := ops[start:end]
		aStart, bStart := h[0].a, h[0].b
		var aN, bN int
		for _, op := range h {
			if op.kind != '+' {
				aN++
			}
			if op.kind != '-' {
				bN++
			}
		}
		fmt.Fprintf(&out, "@@ -%s +%s @@\n", hunkRange(aStart, aN), hunkRange(bStart, bN))
		for _, op := range h {
			line := op.line
			out.WriteByte(op.kind)
			if strings.HasSuffix(line, "\n") {
				out.WriteString(line)
			} else {
				out.WriteString(line + "\n\\ No newline at end of file\n")
			}
		}
		i = end
	}
	return out.String()
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

// splitLines splits s after each newline.
func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	lines := strings.SplitAfter(s, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

type diffOp struct {
	kind byte // ' ', '-' or '+'
	line string
	a, b int // line indexes in a and b before this op
}

// diffLines is Myers' O((N+M)D) diff, after trimming the common prefix and
// suffix.
func diffLines(a, b []string) []diffOp {
	var ops []diffOp
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		ops = append(ops, diffOp{' ', a[pre], pre, pre})
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	ma, mb := a[pre:len(a)-suf], b[pre:len(b)-suf]
	ops = append(ops, myers(ma, mb, pre, pre)...)
	for k := suf; k > 0; k-- {
		ops = append(ops, diffOp{' ', a[len(a)-k], len(a) - k, len(b) - k})
	}
	return ops
}

func myers(a, b []string, offA, offB int) []diffOp {
	n, m := len(a), len(b)
	maxD := n + m
	if maxD == 0 {
		return nil
	}
	v := make([]int, 2*maxD+2)
	var trace [][]int
	for d := 0; d <= maxD; d++ {
		trace = append(trace, append([]int(nil), v...))
		for k := -d; k <= d; k += 2 {
			var x int
			if k == -d || (k != d && v[k-1+maxD] < v[k+1+maxD]) {
				x = v[k+1+maxD]
			} else {
				x = v[k-1+maxD] + 1
			}
			y := x - k
			for x < n && y < m && a[x] == b[y] {
				x++
				y++
			}
			v[k+maxD] = x
			if x >= n && y >= m {
				return backtrack(trace, a, b, d, offA, offB, maxD)
			}
		}
	}
	return nil
}

// backtrack walks the trace (trace[d] is V before step d) from the end.
func backtrack(trace [][]int, a, b []string, d, offA, offB, maxD int) []diffOp {
	x, y := len(a), len(b)
	var rev []diffOp
	for ; d > 0; d-- {
		v := trace[d]
		k := x - y
		var prevK int
		if k == -d || (k != d && v[k-1+maxD] < v[k+1+maxD]) {
			prevK = k + 1
		} else {
			prevK = k - 1
		}
		prevX := v[prevK+maxD]
		prevY := prevX - prevK
		for x > prevX && y > prevY {
			x--
			y--
			rev = append(rev, diffOp{' ', a[x], x + offA, y + offB})
		}
		if x == prevX {
			y--
			rev = append(rev, diffOp{'+', b[y], x + offA, y + offB})
		} else {
			x--
			rev = append(rev, diffOp{'-', a[x], x + offA, y + offB})
		}
	}
	for x > 0 && y > 0 {
		x--
		y--
		rev = append(rev, diffOp{' ', a[x], x + offA, y + offB})
	}
	ops := make([]diffOp, len(rev))
	for i, op := range rev {
		ops[len(rev)-1-i] = op
	}
	return ops
}
