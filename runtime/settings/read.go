package settings

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
	"time"
)

// MaxFileSize bounds a settings file: no real one comes close, and a huge
// or endless one must not stall moat or fill its memory.
const MaxFileSize = 4 << 20

// readTimeout bounds the reading of one settings file (a file of a FUSE
// filesystem may never answer).
const readTimeout = 5 * time.Second

// readFile reads a settings file: a regular file (through a symlink, as the
// user may keep them), at most MaxFileSize. A FIFO, a device or a directory
// is refused at once, without blocking on it, and so is a file of the
// kernel's pseudo filesystems (procfs, sysfs, ...: /proc/kmsg is "regular"
// and blocks). The file is opened non-blocking; where the file can be
// polled (Go's runtime then waits for it rather than the kernel), the read
// has a deadline too.
func readFile(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%w: not a regular file (%s)", errNotRegular, describeMode(fi.Mode()))
	}
	if kfs, err := kernelFilesystem(f); err != nil {
		return nil, err
	} else if kfs != "" {
		return nil, fmt.Errorf("%w: a file of %s, the kernel's own view of itself, not a settings file (its reads may block or change)", errNotRegular, kfs)
	}
	if fi.Size() > MaxFileSize {
		return nil, fmt.Errorf("%w: %d bytes, more than the %d a settings file may have", errTooLarge, fi.Size(), MaxFileSize)
	}
	_ = f.SetReadDeadline(time.Now().Add(readTimeout)) // os.ErrNoDeadline: a plain file, whose reads do not wait
	b, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, err
	}
	if len(b) > MaxFileSize {
		return nil, fmt.Errorf("%w: more than the %d bytes a settings file may have", errTooLarge, MaxFileSize)
	}
	return b, nil
}

// placeholderLike reports whether p is what a moat run reserves a missing
// name with: a socket, or (on a filesystem without socket inodes) a
// directory of mode 0. Neither holds settings.
func placeholderLike(p string) bool {
	fi, err := os.Lstat(p)
	if err != nil {
		return false
	}
	m := fi.Mode()
	return m&fs.ModeSocket != 0 || m.IsDir() && m.Perm() == 0
}

var (
	errNotRegular = errors.New("refused")
	errTooLarge   = errors.New("too large")
)

func describeMode(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m&fs.ModeSocket != 0:
		return "a socket"
	}
	return m.Type().String()
}

// duplicateKey is a key that appears twice in one JSON object.
type duplicateKey struct {
	path        string // dotted path of the key ("network.allowedDomains")
	first, then int64  // byte offsets of both
}

// duplicateKeys finds every key that appears twice in one object of a JSON
// document (encoding/json keeps the last silently, so a second "network"
// block further down would replace the first without a word).
func duplicateKeys(data []byte) ([]duplicateKey, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	var out []duplicateKey
	var value func(path string, depth int) error
	value = func(path string, depth int) error {
		if depth > 512 {
			return errors.New("nested more than 512 levels deep")
		}
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		switch tok {
		case json.Delim('{'):
			keys := map[string]int64{}
			for dec.More() {
				off := dec.InputOffset()
				kt, err := dec.Token()
				if err != nil {
					return err
				}
				key, _ := kt.(string)
				p := key
				if path != "" {
					p = path + "." + key
				}
				if first, dup := keys[key]; dup {
					out = append(out, duplicateKey{path: p, first: first, then: off})
				} else {
					keys[key] = off
				}
				if err := value(p, depth+1); err != nil {
					return err
				}
			}
			_, err := dec.Token()
			return err
		case json.Delim('['):
			for dec.More() {
				if err := value(path+"[]", depth+1); err != nil {
					return err
				}
			}
			_, err := dec.Token()
			return err
		}
		return nil
	}
	if err := value("", 0); err != nil {
		return nil, err
	}
	return out, nil
}

// lineCol turns a byte offset into "line L, column C" (the offset is where
// the key's token begins, give or take the whitespace before it).
func lineCol(data []byte, off int64) string {
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	// Skip the separator and whitespace before the key itself.
	for off < int64(len(data)) && (data[off] == ',' || data[off] == ' ' || data[off] == '\t' || data[off] == '\n' || data[off] == '\r') {
		off++
	}
	line := 1 + bytes.Count(data[:off], []byte{'\n'})
	col := off - int64(bytes.LastIndexByte(data[:off], '\n'))
	return fmt.Sprintf("line %d, column %d", line, col)
}
