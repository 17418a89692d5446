//go:build !linux

package shell

// snapshotInput names the process's standard input, which holds the
// snapshot (Proc.Stdin).
const snapshotInput = "/dev/fd/0"
