package shell

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"image"
	_ "image/gif" // image.DecodeConfig reads GIF headers
	_ "image/jpeg"
	_ "image/png"
	"io"
	"os"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/moat-sandbox/moat/runtime/policy"
)

// Output limits (the seeds' BASH_MAX_OUTPUT_DEFAULT, BASH_MAX_OUTPUT_UPPER_LIMIT,
// the 64 MB cap of a persisted output, and the preview's size).
const (
	DefaultMaxOutput    = 30_000
	MaxOutputUpperLimit = 150_000
	DefaultMaxFileBytes = 64 << 20
	// DefaultMaxSavedBytes caps a session's saved output on disk (the
	// oldest files go first).
	DefaultMaxSavedBytes = 4 * DefaultMaxFileBytes
	DefaultPreviewBytes  = 2000
	// MaxImageBytes is the largest output returned as an image.
	MaxImageBytes = 5 << 20
	// binarySniff is how much of the output is looked at for NUL bytes.
	binarySniff = 8000
)

// Image is output recognised as an image (PNG, JPEG, GIF or WebP bytes, or
// a data: URI of one). It is returned as an image, not as bytes in text.
type Image struct {
	MediaType string `json:"media_type"`
	// Data is the image file (base64 in JSON).
	Data   []byte `json:"data"`
	Width  int    `json:"width,omitempty"`
	Height int    `json:"height,omitempty"`
}

// capture keeps one command's output (hints already removed): in memory up
// to memMax bytes, then in a file of the session's output directory on the
// host (a directory the sandbox cannot write), up to fileMax bytes. It
// counts everything, kept or not.
type capture struct {
	mu        sync.Mutex
	memMax    int
	fileMax   int64
	spill     func() (*os.File, error) // creates the file; nil: never spill
	mem       []byte                   // the first memMax bytes
	file      *os.File                 // everything up to fileMax, once spilled
	fileBytes int64
	spillErr  error
	total     int64
	lines     int64 // newlines seen
	last      byte
}

func (c *capture) write(p []byte) {
	if len(p) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.total += int64(len(p))
	c.lines += int64(bytes.Count(p, []byte{'\n'}))
	c.last = p[len(p)-1]
	if c.file == nil && len(c.mem)+len(p) <= c.memMax {
		c.mem = append(c.mem, p...)
		return
	}
	if c.file == nil && c.spillErr == nil {
		c.spillLocked()
	}
	if c.file == nil {
		if room := c.memMax - len(c.mem); room > 0 {
			c.mem = append(c.mem, p[:min(room, len(p))]...)
		}
		return
	}
	if room := c.memMax - len(c.mem); room > 0 {
		c.mem = append(c.mem, p[:min(room, len(p))]...)
	}
	c.appendFile(p)
}

func (c *capture) spillLocked() {
	if c.spill == nil {
		c.spillErr = fmt.Errorf("no output directory")
		return
	}
	f, err := c.spill()
	if err != nil {
		c.spillErr = err
		return
	}
	c.file = f
	c.appendFile(c.mem)
}

func (c *capture) appendFile(p []byte) {
	room := c.fileMax - c.fileBytes
	if room <= 0 {
		return
	}
	if int64(len(p)) > room {
		p = p[:room]
	}
	n, err := c.file.Write(p)
	c.fileBytes += int64(n)
	if err != nil {
		c.spillErr = err
		c.fileMax = c.fileBytes // stop writing
	}
}

// counts returns the bytes and lines seen so far.
func (c *capture) counts() (int64, int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.total, c.lineCount()
}

// lineCount counts a last line without a newline as a line.
func (c *capture) lineCount() int64 {
	if c.total > 0 && c.last != '\n' {
		return c.lines + 1
	}
	return c.lines
}

// readAt reads up to n bytes of the kept output from off.
func (c *capture) readAt(off int64, n int) []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.file != nil {
		if off >= c.fileBytes {
			return nil
		}
		buf := make([]byte, min(int64(n), c.fileBytes-off))
		k, _ := c.file.ReadAt(buf, off)
		return buf[:k]
	}
	if off >= int64(len(c.mem)) {
		return nil
	}
	return append([]byte(nil), c.mem[off:min(off+int64(n), int64(len(c.mem)))]...)
}

// all returns the whole kept output when it is at most max bytes and
// nothing was dropped.
func (c *capture) all(max int64) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.total > max {
		return nil, false
	}
	if c.file == nil {
		if int64(len(c.mem)) != c.total {
			return nil, false
		}
		return append([]byte(nil), c.mem...), true
	}
	if c.fileBytes != c.total {
		return nil, false
	}
	buf := make([]byte, c.fileBytes)
	if _, err := c.file.ReadAt(buf, 0); err != nil && err != io.EOF {
		return nil, false
	}
	return buf, true
}

// persist makes sure the file holds the output and returns its name.
func (c *capture) persist() (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.file == nil && c.spillErr == nil {
		c.spillLocked()
	}
	if c.file == nil {
		return "", c.spillErr
	}
	return c.file.Name(), nil
}

// close closes the file, if any; remove deletes it too.
func (c *capture) close(remove bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.file == nil {
		return
	}
	c.file.Close()
	if remove {
		os.Remove(c.file.Name())
	}
}

// rendered is the output as the agent sees it.
type rendered struct {
	text      string // inline output, or the persisted-output message
	file      string // the persisted file, or ""
	image     *Image
	binary    bool
	truncated bool // the file holds only the first fileMax bytes
}

// render applies the limits: an image is returned as one; binary output
// is saved to the file with a note; text longer than maxChars characters
// is saved to the file, and the agent sees a preview and the path.
func (c *capture) render(maxChars, previewBytes int) rendered {
	c.mu.Lock()
	head := append([]byte(nil), c.mem...)
	total, spilled := c.total, c.file != nil
	c.mu.Unlock()
	if total == 0 {
		return rendered{}
	}
	if img := c.image(head); img != nil {
		c.close(true)
		c.mu.Lock()
		c.file = nil
		c.mu.Unlock()
		return rendered{image: img}
	}
	if bytes.IndexByte(head[:min(len(head), binarySniff)], 0) >= 0 {
		r := rendered{binary: true}
		name, err := c.persist()
		if err != nil {
			r.text = fmt.Sprintf("Binary output (%s) not shown.\n", formatSize(total))
			return r
		}
		r.file = name
		r.truncated = c.fileSize() < total
		r.text = fmt.Sprintf("Binary output (%s) saved to: %s\n", formatSize(total), name)
		return r
	}
	// The command's own text loses the '<' of moat's tags
	// (policy.Defang) here, before moat's notice is put around it; the
	// saved file keeps what it wrote.
	if !spilled && utf8.RuneCount(head) <= maxChars {
		return rendered{text: policy.Defang(string(head))}
	}
	name, err := c.persist()
	if err != nil {
		// No file: the agent gets the first maxChars characters.
		cut := head
		for n, i := 0, 0; i < len(head); n++ {
			if n == maxChars {
				cut = head[:i]
				break
			}
			_, w := utf8.DecodeRune(head[i:])
			i += w
		}
		return rendered{text: policy.Defang(string(cut)) + fmt.Sprintf("\n... [output truncated: %s in all; it could not be saved: %v]\n", formatSize(total), err)}
	}
	r := rendered{file: name, truncated: c.fileSize() < total}
	preview, more := makePreview(head, previewBytes)
	preview = policy.Defang(preview)
	var b strings.Builder
	b.WriteString("<persisted-output>\n")
	if r.truncated {
		fmt.Fprintf(&b, "Output too large (%s). The first %s were saved to: %s\n", formatSize(total), formatSize(c.fileSize()), name)
	} else {
		fmt.Fprintf(&b, "Output too large (%s). Full output saved to: %s\n", formatSize(total), name)
	}
	fmt.Fprintf(&b, "\nPreview (first %s):\n%s", formatSize(int64(previewBytes)), preview)
	if more {
		if !strings.HasSuffix(preview, "\n") {
			b.WriteByte('\n')
		}
		b.WriteString("...\n")
	}
	b.WriteString("</persisted-output>\n")
	r.text = b.String()
	return r
}

func (c *capture) fileSize() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.fileBytes
}

// image returns the output as an image when it is one.
func (c *capture) image(head []byte) *Image {
	mt := sniffImage(head)
	if mt == "" {
		return nil
	}
	data, ok := c.all(MaxImageBytes * 2)
	if !ok {
		return nil
	}
	if mt == "data" {
		mt, data = decodeDataURI(data)
		if mt == "" || sniffImage(data) != mt {
			return nil
		}
	}
	if len(data) > MaxImageBytes {
		return nil
	}
	img := &Image{MediaType: mt, Data: data}
	if mt == "image/webp" {
		return img
	}
	cfg, format, err := image.DecodeConfig(bytes.NewReader(data))
	if err != nil || "image/"+format != mt {
		return nil
	}
	img.Width, img.Height = cfg.Width, cfg.Height
	return img
}

// sniffImage recognises image files by their magic numbers, and data:
// URIs ("data").
func sniffImage(b []byte) string {
	switch {
	case bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")):
		return "image/png"
	case bytes.HasPrefix(b, []byte("\xff\xd8\xff")):
		return "image/jpeg"
	case bytes.HasPrefix(b, []byte("GIF87a")), bytes.HasPrefix(b, []byte("GIF89a")):
		return "image/gif"
	case len(b) >= 12 && bytes.HasPrefix(b, []byte("RIFF")) && string(b[8:12]) == "WEBP":
		return "image/webp"
	case bytes.HasPrefix(bytes.TrimLeft(b, " \t\r\n"), []byte("data:image/")):
		return "data"
	}
	return ""
}

// decodeDataURI decodes "data:image/png;base64,...".
func decodeDataURI(b []byte) (string, []byte) {
	s := strings.TrimSpace(string(b))
	rest, ok := strings.CutPrefix(s, "data:")
	if !ok {
		return "", nil
	}
	mt, payload, ok := strings.Cut(rest, ";base64,")
	if !ok || !strings.HasPrefix(mt, "image/") || strings.ContainsAny(mt, " ;,") {
		return "", nil
	}
	payload = strings.Map(func(r rune) rune {
		if r == '\n' || r == '\r' || r == ' ' || r == '\t' {
			return -1
		}
		return r
	}, payload)
	data, err := base64.StdEncoding.DecodeString(payload)
	if err != nil {
		return "", nil
	}
	return mt, data
}

// makePreview is the seeds' generatePreview: the first maxBytes bytes,
// cut at the last newline when that keeps more than half of them.
func makePreview(b []byte, maxBytes int) (string, bool) {
	if len(b) <= maxBytes {
		return string(b), false
	}
	cut := maxBytes
	if nl := bytes.LastIndexByte(b[:maxBytes], '\n'); nl > maxBytes/2 {
		cut = nl
	}
	for cut > 0 && !utf8.RuneStart(b[cut]) {
		cut--
	}
	return string(b[:cut]), true
}

// formatSize renders a byte count as the seeds' formatFileSize does.
func formatSize(n int64) string {
	switch {
	case n < 1024:
		if n == 1 {
			return "1 byte"
		}
		return fmt.Sprintf("%d bytes", n)
	case n < 1<<20:
		return trimZero(fmt.Sprintf("%.1f", float64(n)/1024)) + " KB"
	case n < 1<<30:
		return trimZero(fmt.Sprintf("%.1f", float64(n)/(1<<20))) + " MB"
	}
	return trimZero(fmt.Sprintf("%.1f", float64(n)/(1<<30))) + " GB"
}

func trimZero(s string) string { return strings.TrimSuffix(s, ".0") }
