//go:build !linux && !darwin

package term

import "os"

// No terminal relay on this platform (and no sandbox either).
const Supported = false

type Relay struct{}

func IsTerminal(*os.File) bool                   { return false }
func Size(*os.File) (rows, cols uint16)          { return 0, 0 }
func Mask([3]*os.File) uint32                    { return 0 }
func WindowSize([3]*os.File) (rows, cols uint16) { return 0, 0 }
func New([3]*os.File) *Relay                     { return &Relay{} }
func (t *Relay) Attach(*os.File)                 {}
func (t *Relay) Resize()                         {}
func (t *Relay) Finish()                         {}
