package shell

import (
	"bytes"
	"encoding/base64"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func pngBytes(t *testing.T, w, h int) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	img.Set(1, 1, color.RGBA{R: 255, A: 255})
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// newCapture returns a capture spilling into a new file of dir.
func newCapture(t *testing.T, memMax int, fileMax int64) (*capture, string) {
	dir := t.TempDir()
	n := 0
	return &capture{memMax: memMax, fileMax: fileMax, spill: func() (*os.File, error) {
		n++
		return os.OpenFile(filepath.Join(dir, "out"+strings.Repeat("x", n)+".txt"), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	}}, dir
}

func TestRender(t *testing.T) {
	pic := pngBytes(t, 3, 2)
	dataURI := "data:image/png;base64," + base64.StdEncoding.EncodeToString(pic) + "\n"
	long := strings.Repeat("line of text\n", 1000) // 13,000 bytes
	tests := []struct {
		name     string
		in       string
		maxChars int
		memMax   int
		fileMax  int64
		check    func(t *testing.T, r rendered)
	}{
		{"empty", "", 100, 1000, 1 << 20, func(t *testing.T, r rendered) {
			if r != (rendered{}) {
				t.Errorf("%+v", r)
			}
		}},
		{"inline", "hello\n", 100, 1000, 1 << 20, func(t *testing.T, r rendered) {
			if r.text != "hello\n" || r.file != "" {
				t.Errorf("%+v", r)
			}
		}},
		{"characters, not bytes", strings.Repeat("é", 100), 100, 1000, 1 << 20, func(t *testing.T, r rendered) {
			if r.file != "" || r.text != strings.Repeat("é", 100) {
				t.Errorf("100 characters (200 bytes) were not inline: %+v", r)
			}
		}},
		{"persisted with preview", long, 1000, 100000, 1 << 20, func(t *testing.T, r rendered) {
			if r.file == "" {
				t.Fatalf("not persisted: %.200q", r.text)
			}
			got, _ := os.ReadFile(r.file)
			if string(got) != long {
				t.Errorf("the file holds %d bytes, want %d", len(got), len(long))
			}
			if !strings.HasPrefix(r.text, "<persisted-output>\nOutput too large (12.7 KB). Full output saved to: "+r.file+"\n\nPreview (first 2 KB):\n") ||
				!strings.HasSuffix(r.text, "line of text\n...\n</persisted-output>\n") {
				t.Errorf("message: %q", r.text)
			}
		}},
		{"spilled while running", long, 1000, 500, 1 << 20, func(t *testing.T, r rendered) {
			got, _ := os.ReadFile(r.file)
			if string(got) != long {
				t.Errorf("the file holds %d bytes, want %d", len(got), len(long))
			}
		}},
		{"file capped", long, 1000, 500, 4096, func(t *testing.T, r rendered) {
			got, _ := os.ReadFile(r.file)
			if len(got) != 4096 || !r.truncated || !strings.Contains(r.text, "The first 4 KB were saved to: ") {
				t.Errorf("file %d bytes, truncated %v, %q", len(got), r.truncated, r.text[:200])
			}
		}},
		{"binary", "\x7fELF\x00\x00\x01binary", 1000, 1000, 1 << 20, func(t *testing.T, r rendered) {
			if !r.binary || r.file == "" || !strings.HasPrefix(r.text, "Binary output (13 bytes) saved to: ") {
				t.Errorf("%+v", r)
			}
		}},
		{"png image", string(pic), 10, 1000, 1 << 20, func(t *testing.T, r rendered) {
			if r.image == nil || r.image.MediaType != "image/png" || r.image.Width != 3 || r.image.Height != 2 ||
				!bytes.Equal(r.image.Data, pic) || r.text != "" || r.file != "" {
				t.Errorf("%+v", r)
			}
		}},
		{"data uri image", dataURI, 10, 100000, 1 << 20, func(t *testing.T, r rendered) {
			if r.image == nil || r.image.MediaType != "image/png" || !bytes.Equal(r.image.Data, pic) {
				t.Errorf("%+v", r)
			}
		}},
		{"png magic but not an image", "\x89PNG\r\n\x1a\nnot really", 1000, 1000, 1 << 20, func(t *testing.T, r rendered) {
			if r.image != nil {
				t.Errorf("%+v", r)
			}
		}},
		{"data uri of text", "data:image/png;base64," + base64.StdEncoding.EncodeToString([]byte("hello")), 1000, 1000, 1 << 20, func(t *testing.T, r rendered) {
			if r.image != nil || r.text == "" {
				t.Errorf("%+v", r)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, _ := newCapture(t, tc.memMax, tc.fileMax)
			for i := 0; i < len(tc.in); i += 97 {
				c.write([]byte(tc.in[i:min(i+97, len(tc.in))]))
			}
			r := c.render(tc.maxChars, DefaultPreviewBytes)
			tc.check(t, r)
			if n, _ := c.counts(); n != int64(len(tc.in)) {
				t.Errorf("counted %d bytes, want %d", n, len(tc.in))
			}
			c.close(false)
		})
	}
}

func TestRenderWithoutOutputDir(t *testing.T) {
	c := &capture{memMax: 100, fileMax: 1 << 20}
	c.write([]byte(strings.Repeat("ab", 100)))
	r := c.render(50, 10)
	if r.file != "" || !strings.HasPrefix(r.text, strings.Repeat("ab", 25)+"\n... [output truncated: 200 bytes in all") {
		t.Errorf("%+v", r)
	}
}

func TestCaptureCounts(t *testing.T) {
	tests := []struct {
		in    []string
		bytes int64
		lines int64
	}{
		{nil, 0, 0},
		{[]string{"a"}, 1, 1},
		{[]string{"a\n"}, 2, 1},
		{[]string{"a\nb", "\nc"}, 5, 3},
		{[]string{"\n\n"}, 2, 2},
	}
	for _, tc := range tests {
		c := &capture{memMax: 10, fileMax: 10}
		for _, s := range tc.in {
			c.write([]byte(s))
		}
		if b, l := c.counts(); b != tc.bytes || l != tc.lines {
			t.Errorf("%q: %d bytes %d lines, want %d %d", tc.in, b, l, tc.bytes, tc.lines)
		}
	}
}

func TestMakePreview(t *testing.T) {
	tests := []struct {
		in   string
		max  int
		want string
		more bool
	}{
		{"short", 10, "short", false},
		{"line1\nline2\nline3", 14, "line1\nline2", true},
		{"ab\ncdefghijkl", 10, "ab\ncdefghi", true}, // the newline is in the first half
		{"ééééé", 5, "éé", true},                    // never inside a character
	}
	for _, tc := range tests {
		got, more := makePreview([]byte(tc.in), tc.max)
		if got != tc.want || more != tc.more {
			t.Errorf("makePreview(%q, %d) = %q %v, want %q %v", tc.in, tc.max, got, more, tc.want, tc.more)
		}
	}
}

func TestFormatSize(t *testing.T) {
	tests := []struct {
		n    int64
		want string
	}{
		{0, "0 bytes"}, {1, "1 byte"}, {1023, "1023 bytes"}, {1024, "1 KB"}, {1536, "1.5 KB"},
		{64 << 20, "64 MB"}, {3 << 30, "3 GB"},
	}
	for _, tc := range tests {
		if got := formatSize(tc.n); got != tc.want {
			t.Errorf("formatSize(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
}

func TestCompleteUTF8(t *testing.T) {
	e := []byte("é") // 2 bytes
	euro := []byte("€")
	tests := []struct {
		in   []byte
		want int
	}{
		{[]byte("abc"), 3},
		{append([]byte("a"), e[0]), 1},
		{append([]byte("a"), e...), 3},
		{append([]byte("a"), euro[:2]...), 1},
		{[]byte{0xff}, 1}, // invalid, not incomplete
	}
	for _, tc := range tests {
		if got := completeUTF8(tc.in); got != tc.want {
			t.Errorf("completeUTF8(%q) = %d, want %d", tc.in, got, tc.want)
		}
	}
}
