package api

import "testing"

// connsFor sizes the daemon's connection bounds from its descriptor
// limit: within what the limit leaves beside the proxies' slots, and four
// users together at most half of it.
func TestConnsFor(t *testing.T) {
	for _, c := range []struct {
		limit          uint64
		total, perUser int
	}{
		{0, 4096, 256},
		{1024, 192, 24},
		{4096, 768, 96},
		{20000, 1536, 192},
		{1 << 20, 1536, 192},
		{64, 64, 8},
	} {
		total, perUser := connsFor(c.limit)
		if total != c.total || perUser != c.perUser {
			t.Errorf("connsFor(%d) = %d, %d; want %d, %d", c.limit, total, perUser, c.total, c.perUser)
		}
		if c.limit > 0 && uint64(total) > c.limit/4 && c.limit >= 256 {
			t.Errorf("connsFor(%d): %d connections, more than a quarter of the limit", c.limit, total)
		}
		if 4*perUser > total/2 && total > 64 {
			t.Errorf("connsFor(%d): four users hold %d of %d connections, more than half", c.limit, 4*perUser, total)
		}
	}
}
