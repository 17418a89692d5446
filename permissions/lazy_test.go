package permissions

import (
	"sync"
	"sync/atomic"
	"testing"
)

// TestLazy: concurrent first uses make the value once and all see it.
func TestLazy(t *testing.T) {
	var made atomic.Int32
	l := lazy[map[string]bool]{make: func() map[string]bool {
		made.Add(1)
		return map[string]bool{"x": true}
	}}
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if !l.get()["x"] {
				t.Error("value not seen")
			}
		}()
	}
	wg.Wait()
	if n := made.Load(); n != 1 {
		t.Errorf("made %d times", n)
	}
}
