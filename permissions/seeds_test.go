package permissions

import (
	"slices"
	"testing"

	"github.com/moat-sandbox/moat/runtime/policy"
)

// seedCase is a command of one of the categories where moat and the
// seed's tool were compared (issue #11), with moat's answer. Deliberate
// differences are listed in docs/DECISIONS.md.
type seedCase struct {
	cmd      string
	verdict  policy.Verdict
	readOnly bool
}

var seedCategories = map[string][]seedCase{
	"system information": {
		{"uname -a", allow, true}, {"hostname", allow, true}, {"whoami", allow, true}, {"id -un", allow, true},
		{"date", allow, true}, {"uptime", allow, true}, {"df -h", allow, true}, {"free -h", allow, true},
		{"free -m", allow, true}, {"nproc", allow, true}, {"lscpu", allow, true}, {"arch", allow, true},
		{"getconf PAGE_SIZE", allow, true}, {"lsb_release -a", allow, true}, {"who", allow, true}, {"cal", allow, true},
		{"numfmt --to=iec 1048576", allow, true}, {"groups", allow, true}, {"locale", allow, true},
		// deliberate: secrets in the environment and in other processes' arguments, the network
		{"env", askV, false}, {"printenv HOME", askV, false}, {"ps aux", askV, false},
		{"kubectl get pods", askV, false}, {"helm list", askV, false}, {"date -s 2020-01-01", askV, false},
	},
	"checksums": {
		{"sha256sum README.md", allow, true}, {"md5sum a b", allow, true}, {"sha1sum -b x", allow, true},
		{"sha512sum --tag x", allow, true}, {"b2sum x", allow, true}, {"cksum x", allow, true}, {"sum x", allow, true},
		{"shasum -a 256 x", allow, true}, {"md5 x", allow, true},
		// deliberate: -c reads the files named inside the sums file
		{"sha256sum -c sums.txt", askV, false},
	},
	"xargs": {
		// read-only with a command none of whose options writes or runs
		// anything, as in the seed; never allowed by the tables (deliberate):
		// the paths come from the input
		{"find . -name '*.go' | xargs grep foo", askV, true}, {"git ls-files | xargs wc -l", askV, true},
		{"find . -print0 | xargs -0 grep -l foo", askV, true}, {"xargs -n 1 head -5", askV, true}, {"ls | xargs", askV, true},
		{"xargs rm < list", askV, false}, {"xargs -I{} cat {}", askV, false}, {"xargs rg x", askV, false},
		{"xargs sh -c id", askV, false}, {"xargs -a f cat", askV, false}, {"xargs -p cat", askV, false},
		{"xargs grep -n x", askV, true}, {"xargs -n1 cat", askV, true}, {"xargs cat -o x", askV, false},
	},
	"several cd": {
		{"cd src && ls", allow, true}, {"cd src; ls -la", allow, true},
		{"cd src; cd lib; ls", askV, true}, {"cd src && cd .. && ls", askV, true}, {"pushd src && cd lib", askV, true},
		{"cd /tmp && ls", askV, true},
	},
	"brace expansion hiding an operator": {
		{"echo {a;b}", askV, false}, {"echo a{;,}b", askV, false}, {"echo {a,b}", askV, false}, {"ls {src,docs}", askV, false},
		{"echo {a,b}&&id", askV, false}, {"echo {x,'&&',id}", askV, false},
		{"cat {a,b}>x", askV, false}, {`echo "{a;b}"`, allow, true}, {`echo '{a,b}'`, allow, true},
	},
	"quoted newlines": {
		{"echo \"a\nb\"", allow, true}, {"echo 'a\nb'", allow, true}, {"git log --format='%H\n%s'", allow, true},
		{"echo 'a\n# b'", askV, true}, {"echo \"a\n#b\"", askV, true},
		{"grep -n \"x\\\ny\" README.md", askV, true}, {"echo \"$\\\n(id)\"", askV, false},
	},
	"git flags that run configured programs": {
		{"git diff --textconv", askV, false}, {"git show --textconv HEAD", askV, false},
		{"git log --ext-diff -p", askV, false}, {"git diff --ext-diff", askV, false},
		{"git cat-file --filters HEAD:x", askV, false}, {"git cat-file --textconv HEAD:x", askV, false},
		{"git grep --textconv foo", askV, false}, {"git -c diff.x.textconv=sh diff", askV, false},
		{"git diff --no-ext-diff", allow, true}, {"git log -p --no-textconv", allow, true}, {"git diff", allow, true},
	},
	"container CLIs": {
		{"docker ps", allow, true}, {"docker ps -a --format '{{.Names}}'", allow, true},
		{"docker images --format '{{.Repository}}:{{.Tag}}'", allow, true},
		{"docker inspect --format '{{.State.Status}}' web", allow, true}, {"docker inspect -f '{{json .}}' web", allow, true},
		{"docker logs --tail 50 web", allow, true}, {"docker version --format '{{.Server.Version}}'", allow, true},
		{"docker info --format '{{json .}}'", allow, true}, {"docker container ls -q", allow, true},
		{"docker image ls", allow, true}, {"docker network ls", allow, true}, {"docker system df", allow, true},
		{"podman ps --format json", allow, true}, {"podman images", allow, true},
		{"docker run alpine", askV, false}, {"docker exec web sh", askV, false}, {"docker rm web", askV, false},
		{"docker -H ssh://h ps", askV, false}, {"docker --context prod ps", askV, false}, {"docker ps --bogus", askV, false},
		{"docker compose ps", askV, false}, {"docker image rm x", askV, false}, {"docker system prune", askV, false},
		{"DOCKER_HOST=ssh://h docker ps", askV, false},
	},
}

func TestSeedCategories(t *testing.T) {
	e := mustEngine(t, policy.Permissions{})
	for cat, cases := range seedCategories {
		for _, tc := range cases {
			r := e.Decide(Request{Command: tc.cmd, Cwd: testCwd})
			if r.Decision.Verdict != tc.verdict || r.ReadOnly != tc.readOnly {
				t.Errorf("%s: %q = %v, read-only %v; want %v, read-only %v", cat, tc.cmd, r.Decision, r.ReadOnly, tc.verdict, tc.readOnly)
			}
		}
	}
}

// TestSeedWarnings: moat warns on the seed's patterns, on the commands the
// line runs (not on text: deliberate), and on a few more.
func TestSeedWarnings(t *testing.T) {
	e := mustEngine(t, policy.Permissions{})
	for cmd, want := range map[string]string{
		// the seed's patterns
		"git reset --hard":            warnDiscard,
		"git reset --hard HEAD~1":     warnDiscard,
		"git push --force":            warnForcePush,
		"git push -f origin main":     warnForcePush,
		"git push --force-with-lease": warnForcePush,
		"git clean -fd":               warnClean,
		"git clean -xdf":              warnClean,
		"rm -rf build":                warnRm,
		"rm -Rf build":                warnRm,
		"rm -rvf build":               warnRm,
		"psql -c 'DROP TABLE users'":  warnSQL,
		"mysql -e 'truncate table x'": warnSQL,
		"kubectl delete pod x":        warnKube,
		"terraform destroy":           warnTerraform,
		// more than the seed: other spellings and commands
		"rm -fr build":            warnRm,
		"rm -r -f build":          warnRm,
		"sudo rm -rf /":           warnRm,
		"bash -c 'rm -rf x'":      warnRm,
		"git push origin +main":   warnForcePush,
		"git branch -D feature":   warnBranch,
		"git stash clear":         warnStash,
		"git checkout -- .":       warnDiscard,
		"find . -name x -delete":  warnFindDel,
		"docker system prune -af": warnDocker,
		// none
		"git clean -n":              "",
		"git clean -fdn":            "",
		"git clean --dry-run -f":    "",
		"git push origin main":      "",
		"git reset --soft HEAD~1":   "",
		"rm -r build":               "",
		"echo 'git reset --hard'":   "", // text, not a command (the seed's regex warns)
		"grep 'rm -rf' notes.md":    "",
		"kubectl get pods":          "",
		"terraform plan -destroy":   "",
		"echo 'select * from drop'": "",
	} {
		r := e.Decide(Request{Command: cmd, Cwd: testCwd})
		switch {
		case want == "" && len(r.Warnings) > 0:
			t.Errorf("%q: warnings %q; want none", cmd, r.Warnings)
		case want != "" && !slices.Contains(r.Warnings, want):
			t.Errorf("%q: warnings %q; want %q", cmd, r.Warnings, want)
		}
	}
}

// TestSeedSedEdit: the seed shows "sed -i 's/old/new/[g]' FILE" as a file
// edit; moat reads more forms, and none that is not a plain replacement.
func TestSeedSedEdit(t *testing.T) {
	e := mustEngine(t, policy.Permissions{})
	for cmd, want := range map[string]*SedEdit{
		"sed -i 's/old/new/' a.go":         {File: "a.go", Pattern: "old", Replacement: "new"},
		"sed -i 's/old/new/g' a.go":        {File: "a.go", Pattern: "old", Replacement: "new", Flags: "g"},
		"sed -i 's|a/b|c|g' a.go":          {File: "a.go", Pattern: "a/b", Replacement: "c", Flags: "g"},
		"sed -i -e 's/a/b/' a.go":          {File: "a.go", Pattern: "a", Replacement: "b"},
		"sed --in-place 's/a/b/' a.go":     {File: "a.go", Pattern: "a", Replacement: "b"},
		"sed -E -i 's/a+/b/' a.go":         {File: "a.go", Pattern: "a+", Replacement: "b", Extended: true},
		"sed -i 's/a/b/I' a.go":            {File: "a.go", Pattern: "a", Replacement: "b", Flags: "I"},
		"sed -i \"s/a/b/\" a.go":           {File: "a.go", Pattern: "a", Replacement: "b"},
		"sed -i 's/a\\/b/c/' a.go":         {File: "a.go", Pattern: "a/b", Replacement: "c"},
		"sed -i.bak 's/a/b/' a.go":         nil, // also writes a.go.bak
		"sed -i 's/a/b/;s/c/d/' a.go":      nil, // two edits
		"sed -i -e 's/a/b/' -e 's/c/d/' x": nil,
		"sed -i 's/a/b/' a.go b.go":        nil, // two files
		"sed -i 's/a/b/w out' a.go":        nil, // writes another file
		"sed -ni 's/a/b/p' a.go":           nil, // keeps only the printed lines
		"sed -i 's/a/b/p' a.go":            nil, // doubles the matched lines
		"sed -zi 's/a/b/' a.go":            nil, // NUL-separated records
		"sed -i '2s/a/b/' a.go":            nil, // an address
		"sed 's/a/b/' a.go":                nil, // not in place
	} {
		r := e.Decide(Request{Command: cmd, Cwd: testCwd})
		switch {
		case want == nil && r.SedEdit != nil:
			t.Errorf("%q: SedEdit %+v; want none", cmd, *r.SedEdit)
		case want != nil && (r.SedEdit == nil || *r.SedEdit != *want):
			t.Errorf("%q: SedEdit %+v; want %+v", cmd, r.SedEdit, *want)
		}
	}
}
