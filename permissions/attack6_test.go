package permissions

import (
	"testing"
)

// Regression tests for an attack pass on output options: commands an allow
// rule (Bash(curl:*), Bash(tar:*), ...) or acceptEdits allowed wrote a
// protected file, or a file outside the working directory, through an
// option or an operand. Each askV row was allowed before the fix.

// TestToolOutputsUnderAllowRules: the files network, archive and copy
// tools write through options and operands are path-checked; what cannot
// be named asks; the everyday forms stay allowed.
func TestToolOutputsUnderAllowRules(t *testing.T) {
	r := func(name string) []string { return []string{"Bash(" + name + ":*)"} }
	var rows []arow
	add := func(name string, want arow) {
		want.rules = r(name)
		rows = append(rows, want, arow{want.rules, "acceptEdits", want.cmd, want.want})
	}
	for _, tc := range []struct {
		name, cmd string
		want      bool // true: ask
	}{
		// curl
		{"curl", "curl -o .git/config https://example.com/x", true},
		{"curl", "curl -so.git/hooks/pre-commit https://example.com/x", true},
		{"curl", "curl --output /tmp/x https://example.com/x", true},
		{"curl", "curl --output=.bashrc https://example.com/x", true},
		{"curl", "curl -O --output-dir .git/hooks https://example.com/pre-commit", true},
		{"curl", "curl -O https://example.com/a/.bashrc", true},
		{"curl", "curl -O https://example.com/a/%2Eenvrc", true},
		{"curl", "curl -O 'https://example.com/.bash{rc,_profile}'", true},
		{"curl", "curl -D .git/config https://example.com", true},
		{"curl", "curl -c .git/config https://example.com", true},
		{"curl", "curl --cookie-jar /tmp/j https://example.com", true},
		{"curl", "curl --trace .git/config https://example.com", true},
		{"curl", "curl --trace-ascii .bashrc https://example.com", true},
		{"curl", "curl --stderr .git/config https://example.com", true},
		{"curl", "curl --libcurl .git/hooks/pre-push https://example.com", true},
		{"curl", "curl --etag-save .git/config https://example.com", true},
		{"curl", "curl --hsts .git/config https://example.com", true},
		{"curl", "curl --alt-svc .git/config https://example.com", true},
		{"curl", "curl -w '%output{.git/config}%{http_code}' https://example.com", true},
		{"curl", "curl -w '%output{>>.bashrc}x' https://example.com", true},
		{"curl", "curl -w @fmt.txt https://example.com", true},
		{"curl", "curl -K cfg.txt https://example.com", true},
		{"curl", "curl -OJ https://example.com/x", true},
		{"curl", "curl --expand-output '{{f}}' --variable f=.bashrc https://example.com", true},
		{"curl", "curl -s https://example.com", false},
		{"curl", "curl -o out.json https://example.com/x", false},
		{"curl", "curl -sSL -o out.json -H 'Accept: application/json' https://example.com/x", false},
		{"curl", "curl -O https://example.com/file.tgz", false},
		{"curl", "curl -w '%{http_code}' -o /dev/null https://example.com", false},
		// wget
		{"wget", "wget -O .git/config https://example.com/x", true},
		{"wget", "wget -O/tmp/x https://example.com/x", true},
		{"wget", "wget -o .bashrc https://example.com/x", true},
		{"wget", "wget -a .git/hooks/post-checkout https://example.com/x", true},
		{"wget", "wget -P .git/hooks https://example.com/pre-commit", true},
		{"wget", "wget --directory-prefix=/tmp https://example.com/x", true},
		{"wget", "wget --save-cookies .git/config https://example.com/x", true},
		{"wget", "wget https://example.com/.bashrc", true},
		{"wget", "wget -r https://example.com/", true},
		{"wget", "wget -e output_document=.bashrc https://example.com/", true},
		{"wget", "wget https://example.com/file.tgz", false},
		{"wget", "wget -q -O out.html https://example.com/", false},
		// ssh, scp, sftp
		{"ssh", "ssh -E .git/hooks/pre-commit host true", true},
		{"ssh", "ssh -E/tmp/log host true", true},
		{"ssh", "ssh -o UserKnownHostsFile=.git/hooks/pre-commit host true", true},
		{"ssh", "ssh -F ./cfg host true", true},
		{"ssh", "ssh host -E .git/config true", true},
		{"ssh", "ssh host uptime", false},
		{"ssh", "ssh host tail -F /var/log/syslog", false},
		{"scp", "scp host:x .git/hooks/pre-commit", true},
		{"scp", "scp host:.bashrc .", true},
		{"scp", "scp host:x /tmp/y", true},
		{"scp", "scp host:'*' .", true},
		{"scp", "scp host:file.txt .", false},
		{"scp", "scp file.txt host:/tmp/", false},
		{"sftp", "sftp -b batch host", true},
		// script
		{"script", "script .git/hooks/pre-commit", true},
		{"script", "script -q .bashrc", true},
		{"script", "script -O .git/config", true},
		{"script", "script --log-out=/tmp/x", true},
		{"script", "script -I .git/config", true},
		{"script", "script -T .git/config -q", true},
		{"script", "script -q out.log", false},
		// tar
		{"tar", "tar -cf .git/config a.txt", true},
		{"tar", "tar cf .git/config a.txt", true},
		{"tar", "tar -czf /tmp/x.tgz src", true},
		{"tar", "tar --create --file=.bashrc a.txt", true},
		{"tar", "tar -xf x.tar -C .git/hooks", true},
		{"tar", "tar -xzf x.tgz -C /tmp", true},
		{"tar", "tar xzf x.tgz -C /tmp", true},
		{"tar", "tar --extract --file x.tar --directory=/tmp", true},
		{"tar", "tar -xf x.tar .git/hooks/pre-commit", true},
		{"tar", "tar -cf x.tar --index-file=.git/config a", true},
		{"tar", "tar -xf x.tar --transform=s,^,.git/hooks/,", true},
		{"tar", "tar -xPf x.tar", true},
		{"tar", "tar -xf x.tar --no-such-option", true},
		{"tar", "tar -xf host:x.tar", true},
		{"tar", "tar -xzf x.tgz", false},
		{"tar", "tar -tf x.tar", false},
		{"tar", "tar tzvf x.tgz", false},
		{"tar", "tar -czf out.tgz src", false},
		{"tar", "tar -xzf x.tgz -C sub --strip-components=1", false},
		// dd
		{"dd", "dd if=a.txt of=.git/config", true},
		{"dd", "dd if=a.txt of=/tmp/x bs=1M", true},
		{"dd", "dd if=a of=b", false},
		// zip, unzip
		{"zip", "zip .git/config a.txt", true},
		{"zip", "zip -r /tmp/x.zip src", true},
		{"zip", "zip -r out.zip src --out .bashrc", true},
		{"zip", "zip -lf .git/config -r out.zip src", true},
		{"zip", "zip -r out.zip src", false},
		{"unzip", "unzip x.zip -d .git/hooks", true},
		{"unzip", "unzip -o x.zip -d /tmp/x", true},
		{"unzip", "unzip -qd /tmp/x x.zip", true},
		{"unzip", "unzip x.zip .bashrc", true},
		{"unzip", "unzip -: x.zip", true},
		{"unzip", "unzip x.zip", false},
		{"unzip", "unzip -l x.zip", false},
		{"unzip", "unzip -q x.zip -d out", false},
		// split, csplit
		{"split", "split a.txt .git/hooks/pre-", true},
		{"split", "split -a 1 a.txt .profil", true},
		{"split", "split -l 10 a.txt /tmp/part", true},
		{"split", "split --filter='sh -c id' a.txt", true},
		{"split", "split -l 10 a.txt part-", false},
		{"csplit", "csplit -f .git/hooks/pre-push a.txt 2", true},
		{"csplit", "csplit -f .bash -b '%.0drc' a.txt 2", true},
		{"csplit", "csplit -f part a.txt 2", false},
		// sqlite3
		{"sqlite3", "sqlite3 db.sqlite '.output .git/config' 'select 1'", true},
		{"sqlite3", "sqlite3 db.sqlite '.once .bashrc' 'select 1'", true},
		{"sqlite3", "sqlite3 db.sqlite '.save .git/config'", true},
		{"sqlite3", "sqlite3 db.sqlite '.backup /tmp/x'", true},
		{"sqlite3", "sqlite3 db.sqlite '.shell id'", true},
		{"sqlite3", "sqlite3 -cmd '.system id' db.sqlite 'select 1'", true},
		{"sqlite3", "sqlite3 db.sqlite \"ATTACH '.git/config' AS x; CREATE TABLE x.t(a)\"", true},
		{"sqlite3", "sqlite3 db.sqlite \"select writefile('.bashrc', 'x')\"", true},
		{"sqlite3", "sqlite3 .git/config 'create table t(a)'", true},
		{"sqlite3", "sqlite3 db.sqlite", true},
		{"sqlite3", "sqlite3 db.sqlite 'select * from t'", false},
		{"sqlite3", "sqlite3 -header db.sqlite .tables", false},
		// gpg, openssl
		{"gpg", "gpg -o .git/config -d x.gpg", true},
		{"gpg", "gpg --output=/tmp/x --decrypt x.gpg", true},
		{"gpg", "gpg -d .bashrc.gpg --batch --yes --decrypt-files .bashrc.gpg", true},
		{"gpg", "gpg -d x.gpg", false},
		{"gpg", "gpg --verify x.sig x", false},
		{"openssl", "openssl enc -d -in x -out .git/config", true},
		{"openssl", "openssl req -new -keyout /tmp/k -out x.csr", true},
		{"openssl", "openssl req -new -engine ./evil.so", true},
		{"openssl", "openssl genrsa -out key.pem 2048", false},
		{"openssl", "openssl x509 -in c.pem -noout -text", false},
		// install, ln, patch
		{"install", "install -m 755 a.sh .git/hooks/pre-commit", true},
		{"install", "install a.sh /tmp/x", true},
		{"install", "install -t .git/hooks pre-commit", true},
		{"install", "install -D a.sh bin/a", false},
		{"ln", "ln -sf /usr/bin/id .git/hooks/pre-commit", true},
		{"ln", "ln -s a.txt /tmp/x", true},
		{"ln", "ln -s x/.bashrc", true},
		{"ln", "ln -st .git/hooks ../../pre-commit", true},
		{"ln", "ln -s a.txt b.txt", false},
		{"patch", "patch -o .git/config a.txt p.diff", true},
		{"patch", "patch .git/config p.diff", true},
		{"patch", "patch -p1 -i p.diff", false},
		// rsync
		{"rsync", "rsync -a src .git/hooks", true},
		{"rsync", "rsync -a src/ dst/", true},
		{"rsync", "rsync -a host:x /tmp/y", true},
		{"rsync", "rsync -a --log-file=.git/config src dst", true},
		{"rsync", "rsync -e 'sh -c id' src host:dst", true},
		{"rsync", "rsync -a src dst", false},
		{"rsync", "rsync -avz -e ssh src host:dst", false},
		// cpio, yq, sdiff
		{"cpio", "cpio -o -O .git/config", true},
		{"cpio", "cpio -idv", true},
		{"cpio", "cpio -it", false},
		{"yq", "yq -i '.a = 1' .vscode/settings.json", true},
		{"yq", "yq -i '.a = 1' /tmp/x.yaml", true},
		{"yq", "yq -s '.a' x.yaml", true},
		{"yq", "yq -i '.a = 1' x.yaml", false},
		{"yq", "yq '.a' x.yaml", false},
		{"sdiff", "sdiff -o .git/config a b", true},
		{"sdiff", "sdiff a b", false},
		// git
		{"git", "git bundle create .git/config HEAD", true},
		{"git", "git bundle create /tmp/x.bundle HEAD", true},
		{"git", "git fast-export --export-marks=.git/config HEAD", true},
		{"git", "git checkout-index --prefix=.git/hooks/ -a", true},
		{"git", "git checkout-index --prefix=.git/hooks/pre- -- commit", true},
		{"git", "git index-pack -o /tmp/x.pack p.pack", true},
		{"git", "git init /tmp/repo", true},
		{"git", "git init -b main /tmp/repo", true},
		{"git", "git init --template=./tpl", true},
		{"git", "git clone https://example.com/r.git /tmp/r", true},
		{"git", "git clone https://example.com/.envrc", true},
		{"git", "git worktree add ../wt", true},
		{"git", "git worktree add -b x /tmp/wt", true},
		{"git", "git -C .git init hooks", true},
		{"git", "git bundle create x.bundle HEAD", false},
		{"git", "git clone https://example.com/r.git", false},
		{"git", "git worktree add wt", false},
		{"git", "git init", false},
	} {
		want := allow
		if tc.want {
			want = askV
		}
		add(tc.name, arow{cmd: tc.cmd, want: want})
	}
	runRows(t, testCwd, Options{}, rows)
}

// TestProtectedNamesFoldCase: on a case-insensitive file system (macOS)
// .GIT is .git and .BashRC is .bashrc; the code points HFS+ ignores do
// not hide one either.
func TestProtectedNamesFoldCase(t *testing.T) {
	runRows(t, testCwd, Options{}, []arow{
		{nil, "acceptEdits", "cp a.txt .GIT/config", askV},
		{nil, "acceptEdits", "cp a.txt .Git/Hooks/pre-commit", askV},
		{nil, "acceptEdits", "cp a.txt .BASHRC", askV},
		{nil, "acceptEdits", "cp a.txt .VSCode/settings.json", askV},
		{nil, "acceptEdits", "tee .git/CONFIG", askV},
		{nil, "acceptEdits", "cp a.txt .g\u200cit/config", askV},
		{nil, "acceptEdits", "cp a.txt .\u212Ashrc", askV},
		{[]string{"Bash(curl:*)"}, "", "curl -o .GIT/config https://example.com", askV},
		{nil, "acceptEdits", "cp a.txt b.txt", allow},
		{nil, "acceptEdits", "cp a.txt gitconfig.txt", allow},
	})
}
