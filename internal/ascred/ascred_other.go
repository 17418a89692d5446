//go:build !linux

// Package ascred runs file-system work with another user's credentials
// (Linux only: moatd is a Linux daemon).
package ascred

import "errors"

var errUnsupported = errors.New("ascred: only on Linux")

// Do is Linux-only.
func Do(uid, gid int, groups []int, fn func() error) error { return errUnsupported }

// DoCapless is Linux-only.
func DoCapless(fn func() error) error { return errUnsupported }

// Writable is Linux-only.
func Writable(uid, gid int, groups []int, path string) (string, error) { return "", errUnsupported }

// Usable is Linux-only.
func Usable(uid, gid int, groups []int, path string) (string, error) { return "", errUnsupported }

// Worker runs functions with a user's credentials (Linux only).
type Worker struct{}

// NewWorker returns an error off Linux.
func NewWorker(uid, gid int, groups []int) (*Worker, error) { return nil, errUnsupported }

// Do returns an error off Linux.
func (w *Worker) Do(fn func() error) error { return errUnsupported }

// Close does nothing.
func (w *Worker) Close() {}

// Borrower runs functions with a user's credentials (Linux only).
type Borrower struct{}

// NewBorrower returns an error off Linux.
func NewBorrower(uid, gid int, groups []int) (*Borrower, error) { return nil, errUnsupported }

// Do returns an error off Linux.
func (b *Borrower) Do(fn func() error) error { return errUnsupported }

// Close does nothing.
func (b *Borrower) Close() {}
