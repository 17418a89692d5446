package bpf

// The programs are compiled once and committed (sockfilter_bpfel.go and
// sockfilter_bpfel.o), so building moat never needs clang. Regenerate after
// changing c/sockfilter.bpf.c with `go generate ./bpf/...` (needs clang,
// llvm-strip and libbpf-dev; see doc.go).
//
//go:generate go tool bpf2go -tags linux -target bpfel -type event -type dest_key sockfilter c/sockfilter.bpf.c -- -I./c/include -Wall -Werror
