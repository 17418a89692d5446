//go:build !unix

package main

import "os"

func controlFile(fd int) (*os.File, error) {
	return nil, usageError("--control-fd is not supported on this platform")
}
