//go:build !linux && !darwin

package runtime

import "os"

// No terminal relay on this platform (and no sandbox either).
const hasTerminal = false

type terminal struct{}

func isTerminal(*os.File) bool               { return false }
func termSize(*os.File) (rows, cols uint16)  { return 0, 0 }
func newTerminal(in, out *os.File) *terminal { return &terminal{} }
func (t *terminal) attach(*os.File)          {}
func (t *terminal) resize()                  {}
func (t *terminal) finish()                  {}
