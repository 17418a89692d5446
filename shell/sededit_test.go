package shell_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestPreviewEdit(t *testing.T) {
	e := newEnv(t, "", nil)
	const text = "hello world\npath /usr/bin\nfoo foo\n"
	tests := []struct {
		name, cmd, diff string
	}{
		{"simple", "sed -i 's/world/there/' f.txt", "@@ -1,3 +1,3 @@\n-hello world\n+hello there\n path /usr/bin\n foo foo\n"},
		{"global", "sed -i 's/foo/bar/g' f.txt", "@@ -1,3 +1,3 @@\n hello world\n path /usr/bin\n-foo foo\n+bar bar\n"},
		{"other delimiter with a slash", "sed -i 's|/usr/bin|/opt/bin|' f.txt", "@@ -1,3 +1,3 @@\n hello world\n-path /usr/bin\n+path /opt/bin\n foo foo\n"},
		{"escaped delimiter", `sed -i 's/\/usr/\/opt/' f.txt`, "@@ -1,3 +1,3 @@\n hello world\n-path /usr/bin\n+path /opt/bin\n foo foo\n"},
		{"extended", `sed -i -E 's/(o+) (o*)/<\1>/' f.txt`, "@@ -1,3 +1,3 @@\n-hello world\n+hell<o>world\n path /usr/bin\n-foo foo\n+f<oo>foo\n"},
		{"no change", "sed -i 's/absent/x/' f.txt", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := filepath.Join(e.dir, "f.txt")
			os.WriteFile(f, []byte(text), 0o644)
			fe, err := e.s.PreviewEdit(context.Background(), tc.cmd)
			if err != nil || fe == nil {
				t.Fatalf("%v %v", fe, err)
			}
			want := ""
			if tc.diff != "" {
				want = "--- a/f.txt\n+++ b/f.txt\n" + tc.diff
			}
			if fe.Diff != want || fe.Old != text || fe.Path != f {
				t.Errorf("diff\n%s\nwant\n%s\n(path %s)", fe.Diff, want, fe.Path)
			}
			if b, _ := os.ReadFile(f); string(b) != text {
				t.Fatalf("the preview changed the file: %q", b)
			}
			// Running the command makes exactly the previewed edit.
			e.run(t, tc.cmd)
			if b, _ := os.ReadFile(f); string(b) != fe.New {
				t.Errorf("the command wrote %q, the preview said %q", b, fe.New)
			}
		})
	}
}

func TestPreviewEditNotAnEdit(t *testing.T) {
	e := newEnv(t, "", nil)
	for _, cmd := range []string{"ls", "sed 's/a/b/' f", "sed -i.bak 's/a/b/' f", "sed -i 's/a/b/' f g", "sed -i 's/a/b/;s/c/d/' f", "sed -i '1d' f"} {
		fe, err := e.s.PreviewEdit(context.Background(), cmd)
		if fe != nil || err != nil {
			t.Errorf("%q: %+v %v", cmd, fe, err)
		}
	}
	starts := e.runner.Starts()
	if starts != 0 {
		t.Errorf("%d processes started for commands that are not edits", starts)
	}
}

func TestPreviewEditErrors(t *testing.T) {
	e := newEnv(t, "", nil)
	if _, err := e.s.PreviewEdit(context.Background(), "sed -i 's/a/b/' missing.txt"); err == nil || !strings.Contains(err.Error(), "preview failed") {
		t.Errorf("missing file: %v", err)
	}
	big := filepath.Join(e.dir, "big.txt")
	os.WriteFile(big, []byte(strings.Repeat("a\n", 600_000)), 0o644)
	if _, err := e.s.PreviewEdit(context.Background(), "sed -i 's/a/b/' big.txt"); err == nil || !strings.Contains(err.Error(), "too large") {
		t.Errorf("big file: %v", err)
	}
}

// A preview reads the file: only one the rules let a command read without
// asking, and only a regular file, in bounded time (a preview of a file
// outside the working directory showed it, and one of a FIFO held the
// session: found by an attack pass).
func TestPreviewEditOnlyWhatMayBeRead(t *testing.T) {
	e := newEnv(t, "", nil)
	outside := filepath.Join(filepath.Dir(e.dir), "secret.txt")
	os.WriteFile(outside, []byte("SECRET\n"), 0o644)
	fe, err := e.s.PreviewEdit(context.Background(), "sed -i 's/S/X/' "+outside)
	if err == nil || fe != nil || !strings.Contains(err.Error(), "without asking") {
		t.Errorf("a preview of a file outside the working directory: %+v %v", fe, err)
	}
	fifo := filepath.Join(e.dir, "pipe")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := e.s.PreviewEdit(context.Background(), "sed -i 's/S/X/' pipe"); done <- err }()
	select {
	case err := <-done:
		if err == nil {
			t.Errorf("a preview of a FIFO succeeded")
		}
	case <-time.After(20 * time.Second):
		t.Fatal("a preview of a FIFO hangs")
	}
}
