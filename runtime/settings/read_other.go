//go:build !linux

package settings

import "os"

// kernelFilesystem: only Linux's pseudo filesystems are known (macOS has
// none that reports regular files).
func kernelFilesystem(*os.File) (string, error) { return "", nil }
