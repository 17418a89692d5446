package bpf

// The programs are compiled once and committed (sockfilter_bpfel.go and
// sockfilter_bpfel.o), so building moat never needs clang. Regenerate after
// changing c/sockfilter.bpf.c with `go generate ./bpf/...` (needs clang,
// llvm and libbpf-dev; see doc.go).
//
// The object keeps its BTF (map definitions, global variables, the event
// type) but not .BTF.ext (function and line information): without it the
// spec parses and the programs load in 0.99 instead of 1.29 ms, which every
// root start pays; only a verifier error's log loses its source lines.
//
//go:generate go tool bpf2go -tags linux -target bpfel -type event -type dest_key -type run_config sockfilter c/sockfilter.bpf.c -- -I./c/include -Wall -Werror
//go:generate llvm-objcopy --remove-section .BTF.ext --remove-section .rel.BTF.ext sockfilter_bpfel.o
