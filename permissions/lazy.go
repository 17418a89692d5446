package permissions

import "sync"

// lazy is a value made on first use; safe for concurrent use. The tables
// of this package are lazy because every moat process (moat run among
// them) initialises the package before main, whether it decides a command
// or not: built at init they cost 0.1 ms and 500 allocations at every
// start.
//
// It is sync.OnceValue as a struct: a package variable holding a
// lazy[T]{make: ...} literal is laid out by the compiler and costs nothing
// at init, where each sync.OnceValue(...) allocates its closures there.
type lazy[T any] struct {
	once sync.Once
	make func() T
	v    T
}

// get returns the value, made by the first call.
func (l *lazy[T]) get() T {
	l.once.Do(func() { l.v = l.make() })
	return l.v
}
