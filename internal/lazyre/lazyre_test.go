package lazyre

import (
	"regexp"
	"sync"
	"testing"
)

func TestRE(t *testing.T) {
	r := New(`^a(\d+)$`)
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if !r.MatchString("a12") || r.MatchString("b") {
				t.Error("match")
			}
			if m := r.FindStringSubmatch("a7"); len(m) != 2 || m[1] != "7" {
				t.Errorf("submatch %q", m)
			}
		}()
	}
	wg.Wait()
	if r.Regexp().String() != regexp.MustCompile(`^a(\d+)$`).String() {
		t.Error("expression")
	}
}
