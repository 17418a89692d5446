// Package sys holds what moat's raw-syscall code shares: one retry loop for
// EINTR (a signal interrupted a blocking call), so that no caller forgets
// it, and errors named after the syscall that failed.
package sys

import (
	"errors"
	"os"
	"syscall"
)

// Retry calls f until it does not fail with EINTR.
func Retry(f func() error) error {
	for {
		err := f()
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}

// RetryValue is Retry for calls that return a value.
func RetryValue[T any](f func() (T, error)) (T, error) {
	for {
		v, err := f()
		if !errors.Is(err, syscall.EINTR) {
			return v, err
		}
	}
}

// Named wraps err (if any) as os.NewSyscallError does, so that the syscall
// that failed is in the message and errors.Is still reaches the errno.
func Named(name string, err error) error {
	if err == nil {
		return nil
	}
	return os.NewSyscallError(name, err)
}
