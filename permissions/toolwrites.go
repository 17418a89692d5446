package permissions

import (
	"net/url"
	"path"
	"strings"

	"github.com/moat-sandbox/moat/runtime/policy"
)

// The files that network, archive and copy tools write through their
// options and operands (curl -o, wget -O, tar -cf, dd of=, ln -s T LINK,
// ...), for outputPaths: under an allow rule such as Bash(curl:*) they
// are path-checked like any other write. What a tool would write but
// cannot be named here (a name chosen by a server, a script of commands,
// an option that runs a program or rewrites names) gives a reason to ask
// instead (fail closed); the everyday forms stay allowed.

// toolOutputs are the commands with a reader of their own.
var toolOutputs = lazy[map[string]func([]string) ([]string, string)]{make: func() map[string]func([]string) ([]string, string) {
	return map[string]func([]string) ([]string, string){
		"curl": curlOutputs,
		"wget": wgetOutputs,
		"ssh":  sshOutputs,
		"scp":  scpOutputs,
		"sftp": func([]string) ([]string, string) {
			return nil, "sftp runs file transfer commands from its input or a batch file"
		},
		"script":  scriptOutputs,
		"tar":     tarOutputs,
		"gtar":    tarOutputs,
		"bsdtar":  tarOutputs,
		"dd":      ddOutputs,
		"zip":     zipOutputs,
		"split":   splitOutputs,
		"csplit":  csplitOutputs,
		"gpg":     gpgOutputs,
		"gpg2":    gpgOutputs,
		"openssl": opensslOutputs,
		"install": installOutputs,
		"ln":      lnOutputs,
		"patch":   patchOutputs,
		"rsync":   rsyncOutputs,
		"unzip":   unzipOutputs,
		"cpio":    cpioOutputs,
		"yq":      yqOutputs,
		"sdiff":   sdiffOutputs,
		"sqlite3": sqliteOutputs,
	}
}}

// opt is one option or operand as a getopt-style reader sees it.
type opt struct {
	name   string // "-o", "--output" as written (without "=value"); "" for an operand
	val    string // the option's value, or the operand
	hasVal bool
}

// optReader says how a command's options take values.
type optReader struct {
	shortVal string   // short options that take a value (attached or the next word)
	longVal  []string // long options that take a value ("=value" or the next word)
	// minAbbrev: a long option abbreviated to at least this many
	// characters is taken as the one it abbreviates (0: exact names only).
	minAbbrev int
	// stopAt: options end at this operand (1: the first, POSIX order;
	// 2: ssh, which reads options after the host too); 0: never.
	stopAt int
}

// read splits args into options and operands. Listing an option that
// takes a value as one that does not only makes its value read as an
// option or an operand (one more path checked); the tables list only
// options known to take one.
func (r optReader) read(args []string) []opt {
	var out []opt
	min := r.minAbbrev
	if min == 0 {
		min = 1 << 30
	}
	operands := 0
	for i := 0; i < len(args); i++ {
		w := args[i]
		switch {
		case w == "--":
			for _, o := range args[i+1:] {
				out = append(out, opt{val: o})
			}
			return out
		case len(w) < 2 || w[0] != '-':
			if operands++; operands == r.stopAt {
				for _, o := range args[i:] {
					out = append(out, opt{val: o})
				}
				return out
			}
			out = append(out, opt{val: w})
		case strings.HasPrefix(w, "--"):
			name, val, hasVal := strings.Cut(w, "=")
			if !hasVal && isAbbrev(name, r.longVal, min) && i+1 < len(args) {
				i++
				val, hasVal = args[i], true
			}
			out = append(out, opt{name: name, val: val, hasVal: hasVal})
		default:
			for j := 1; j < len(w); j++ {
				c := w[j]
				if strings.IndexByte(r.shortVal, c) < 0 {
					out = append(out, opt{name: "-" + string(c)})
					continue
				}
				o := opt{name: "-" + string(c)}
				switch {
				case j+1 < len(w):
					o.val, o.hasVal = w[j+1:], true
				case i+1 < len(args):
					i++
					o.val, o.hasVal = args[i], true
				}
				out = append(out, o)
				break
			}
		}
	}
	return out
}

// is reports whether o is the short option c (0: none) or one of longs
// (abbreviated to min characters or more; 0: exact).
func (o opt) is(c byte, min int, longs ...string) bool {
	if o.name == "" {
		return false
	}
	if c != 0 && len(o.name) == 2 && o.name[1] == c {
		return true
	}
	if !strings.HasPrefix(o.name, "--") {
		return false
	}
	if min == 0 {
		min = 1 << 30
	}
	return isAbbrev(o.name, longs, min)
}

// inDir is p under dir ("" for none), p when absolute.
func inDir(dir, p string) string {
	if dir == "" {
		return p
	}
	return joinDir(dir, p)
}

// protectedNames are the names that ask when written, wherever they are.
func protectedNames() []string {
	n := append([]string{".git"}, policy.MandatoryFiles...)
	return append(n, policy.MandatoryDirs...)
}

// prefixOutputs are the files written by appending a generated suffix to
// prefix (split, csplit -f, git checkout-index --prefix): the prefix
// itself, so that its directory is checked, and every protected name of
// that directory the suffix could complete (split -a 1 x .profil writes
// .profile).
func prefixOutputs(prefix string) []string {
	out := []string{prefix}
	dir, base := path.Split(prefix)
	names := protectedNames()
	if strings.EqualFold(path.Base(path.Clean(dir)), ".git") {
		names = append(append(names, policy.GitProtected...), gitStateNames...)
	}
	for _, n := range names {
		if len(n) > len(base) && strings.EqualFold(n[:len(base)], base) {
			out = append(out, dir+n)
		}
	}
	return out
}

// urlFileNames are the names a downloader may give the file of a URL: the
// last segment of its path, with and without the query, decoded too.
func urlFileNames(u string) []string {
	s, _, _ := strings.Cut(u, "#")
	if i := strings.Index(s, "://"); i >= 0 {
		s = s[i+3:]
		j := strings.IndexByte(s, '/')
		if j < 0 {
			return nil
		}
		s = s[j:]
	}
	var names []string
	add := func(n string) {
		if n == "" {
			return
		}
		names = append(names, n)
		if d, err := url.PathUnescape(n); err == nil && d != n {
			names = append(names, d, path.Base(d))
		}
	}
	noQuery, _, _ := strings.Cut(s, "?")
	add(noQuery[strings.LastIndexByte(noQuery, '/')+1:])
	if noQuery != s {
		add(path.Base(s))
	}
	return names
}

// remoteSpec reports an ssh-style remote path (host:path, user@host:path,
// scp://...): a colon before any slash.
func remoteSpec(p string) bool {
	if strings.Contains(p, "://") {
		return true
	}
	c := strings.IndexByte(p, ':')
	return c > 0 && !strings.Contains(p[:c], "/")
}

// curlOutputs: -o/--output (joined to --output-dir), -O/--remote-name (the
// URL's last path segment, in --output-dir), -D, -c, --trace,
// --trace-ascii, --stderr, --libcurl, --etag-save, --hsts, --alt-svc,
// --ssl-sessions, -w's %output{FILE}, and with -T/--upload-file each
// file: URL's path (with the uploaded file's name when it ends in '/').
// A config file (-K), --expand-
// options, a write-out format read from a file, names chosen by the
// server (-J) or by URL globbing (with -O, or -T to a file: URL) ask.
func curlOutputs(args []string) (out []string, unsure string) {
	const min = 4
	r := optReader{shortVal: "AbcCdDeEFHKmoPQrTtuUwxXyYz", minAbbrev: min,
		longVal: []string{"--output", "--output-dir", "--dump-header", "--cookie-jar", "--trace", "--trace-ascii",
			"--stderr", "--libcurl", "--etag-save", "--hsts", "--alt-svc", "--ssl-sessions", "--write-out", "--config",
			"--upload-file", "--url"}}
	dir := ""
	var outputs, uploads []string
	remote, glob := false, true
	var operands []string
	for _, o := range r.read(args) {
		switch {
		case o.name == "", o.is(0, min, "--url"):
			operands = append(operands, o.val)
		case o.is('T', min, "--upload-file"):
			uploads = append(uploads, o.val)
		case o.is('o', min, "--output"):
			if strings.Contains(o.val, "#") {
				return nil, "curl -o " + o.val + ": the file is named after a URL glob"
			}
			outputs = append(outputs, o.val)
		case o.is(0, min, "--output-dir"):
			dir = o.val
			out = append(out, o.val)
		case o.is('O', min, "--remote-name", "--remote-name-all"):
			remote = true
		case o.is('J', min, "--remote-header-name"):
			return nil, "curl -J: the server names the file written"
		case o.is('g', min, "--globoff"):
			glob = false
		case o.is('K', min, "--config"):
			return nil, "curl reads options from a file, which cannot be checked"
		case strings.HasPrefix(o.name, "--expand-"):
			return nil, "curl " + o.name + ": the value is built from variables"
		case o.is('D', min, "--dump-header"), o.is('c', min, "--cookie-jar"),
			o.is(0, min, "--trace", "--trace-ascii", "--stderr", "--libcurl", "--etag-save", "--hsts", "--alt-svc", "--ssl-sessions"):
			out = append(out, o.val)
		case o.is('w', min, "--write-out"):
			if strings.HasPrefix(o.val, "@") {
				return nil, "curl -w reads its format from a file, which may write one"
			}
			rest := o.val
			for {
				k := strings.Index(rest, "%output{")
				if k < 0 {
					break
				}
				rest = rest[k+len("%output{"):]
				e := strings.IndexByte(rest, '}')
				if e < 0 {
					return nil, "curl -w %output{ without its end"
				}
				out = append(out, strings.TrimPrefix(rest[:e], ">>"))
				rest = rest[e+1:]
			}
		}
	}
	for _, o := range outputs {
		out = append(out, inDir(dir, o))
		if dir != "" {
			out = append(out, o)
		}
	}
	if len(uploads) > 0 {
		// -T to a file: URL writes that local file (file://localhost/p,
		// FILE:/p too); a URL ending in '/' gets the uploaded file's base
		// name (found by an attack pass: curl -T p file:///r/.git/config).
		for _, u := range operands {
			p, ok := curlFilePath(u)
			if !ok {
				continue
			}
			if glob && (strings.ContainsAny(u, "[{") || strings.ContainsAny(strings.Join(uploads, ""), "[{")) {
				return nil, "curl -T to a file: URL with a glob: the files written cannot be checked"
			}
			out = append(out, p)
			if strings.HasSuffix(p, "/") {
				for _, f := range uploads {
					if f != "-" && f != "." {
						out = append(out, p+path.Base(f))
					}
				}
			}
		}
	}
	if remote {
		for _, u := range operands {
			if glob && strings.ContainsAny(u, "[{") {
				return nil, "curl -O with a URL glob: the names written cannot be checked"
			}
			for _, n := range urlFileNames(u) {
				out = append(out, inDir(dir, n))
			}
		}
	}
	return out, ""
}

// curlFilePath is the local path of a file: URL (any case; file:/p,
// file:///p, file://host/p), without its query and fragment, percent-
// decoded, and whether u is one.
func curlFilePath(u string) (string, bool) {
	if len(u) < 5 || !strings.EqualFold(u[:5], "file:") {
		return "", false
	}
	p := u[5:]
	if rest, ok := strings.CutPrefix(p, "//"); ok {
		p = "/"
		if i := strings.IndexByte(rest, '/'); i >= 0 {
			p = rest[i:]
		}
	}
	p, _, _ = strings.Cut(p, "#")
	p, _, _ = strings.Cut(p, "?")
	if d, err := url.PathUnescape(p); err == nil {
		p = d
	}
	return p, true
}

// wgetOutputs: -O, -o, -a, --save-cookies, --hsts-file, --rejected-log,
// --warc-file, and, without -O, each URL's file name in -P's directory.
// Recursion, names from the server or an input file, and wgetrc commands
// (-e, --config) ask.
func wgetOutputs(args []string) (out []string, unsure string) {
	const min = 4
	r := optReader{shortVal: "oaOPeiBtTwQUlDARIXn", minAbbrev: min,
		longVal: []string{"--output-document", "--output-file", "--append-output", "--directory-prefix", "--execute",
			"--input-file", "--save-cookies", "--hsts-file", "--rejected-log", "--warc-file", "--config", "--default-page", "--use-askpass"}}
	dir, document := "", false
	var operands []string
	for _, o := range r.read(args) {
		switch {
		case o.name == "":
			operands = append(operands, o.val)
		case o.is('O', min, "--output-document"):
			document = true
			out = append(out, o.val)
		case o.is('o', min, "--output-file"), o.is('a', min, "--append-output"),
			o.is(0, min, "--save-cookies", "--hsts-file", "--rejected-log"):
			out = append(out, o.val)
		case o.is(0, min, "--warc-file"):
			out = append(out, prefixOutputs(o.val)...)
		case o.is('P', min, "--directory-prefix"):
			dir = o.val
			out = append(out, o.val)
		case o.is(0, min, "--default-page"):
			out = append(out, o.val)
		case o.is('e', min, "--execute"), o.is(0, min, "--config"):
			return nil, "wget runs wgetrc commands, which can name any file"
		case o.is('i', min, "--input-file", "--input-metalink", "--metalink-over-http", "--metalink-index"):
			return nil, "wget reads its URLs from a file: the names written cannot be checked"
		case o.is('r', min, "--recursive"), o.is('m', min, "--mirror"), o.is('p', min, "--page-requisites"),
			o.is('x', min, "--force-directories", "--protocol-directories", "--content-disposition", "--trust-server-names"):
			return nil, "wget " + o.name + ": the server names the files written"
		case o.is(0, min, "--use-askpass"):
			return nil, "wget --use-askpass runs a program"
		}
	}
	if !document {
		for _, u := range operands {
			for _, n := range urlFileNames(u) {
				out = append(out, inDir(dir, n))
			}
		}
	}
	return out, ""
}

// sshConfigOutputs reads an ssh -o option: the files it writes, or why it
// asks.
func sshConfigOutputs(v string) (out []string, unsure string) {
	key, val, ok := strings.Cut(v, "=")
	if !ok {
		key, val, _ = strings.Cut(v, " ")
	}
	key = strings.ToLower(strings.TrimSpace(key))
	val = strings.TrimSpace(val)
	switch key {
	case "userknownhostsfile", "controlpath":
		for _, f := range strings.Fields(val) {
			if strings.ToLower(f) != "none" {
				out = append(out, f)
			}
		}
	case "knownhostscommand", "include", "pkcs11provider", "securitykeyprovider":
		return nil, "ssh -o " + key + " runs a program or reads a file"
	}
	return out, ""
}

const sshShortVal = "BbcDEeFIiJLlmOoPpQRSWw"

// sshOutputs: -E (log file), -S (control socket), -o
// UserKnownHostsFile/ControlPath, a local socket forwarded by -L; -F asks.
func sshOutputs(args []string) (out []string, unsure string) {
	r := optReader{shortVal: sshShortVal, stopAt: 2}
	for _, o := range r.read(args) {
		switch {
		case o.name == "":
		case o.is('E', 0), o.is('S', 0):
			out = append(out, o.val)
		case o.is('F', 0):
			return nil, "ssh reads a configuration file, which can name programs and files"
		case o.is('o', 0):
			w, why := sshConfigOutputs(o.val)
			if why != "" {
				return nil, why
			}
			out = append(out, w...)
		case o.is('L', 0):
			if l, _, _ := strings.Cut(o.val, ":"); strings.Contains(l, "/") {
				out = append(out, l)
			}
		}
	}
	return out, ""
}

// scpOutputs: a local destination, and what lands in it (DEST/base of
// each source); -S (the program), -F and -T (names from the server) ask.
func scpOutputs(args []string) (out []string, unsure string) {
	r := optReader{shortVal: "cDFiJloPSX"}
	var operands []string
	for _, o := range r.read(args) {
		switch {
		case o.name == "":
			operands = append(operands, o.val)
		case o.is('S', 0), o.is('F', 0):
			return nil, "scp " + o.name + " runs a program or reads a configuration"
		case o.is('T', 0):
			return nil, "scp -T: the server names the files written"
		case o.is('o', 0):
			w, why := sshConfigOutputs(o.val)
			if why != "" {
				return nil, why
			}
			out = append(out, w...)
		}
	}
	if len(operands) < 2 {
		return out, ""
	}
	dest := operands[len(operands)-1]
	if remoteSpec(dest) {
		return out, ""
	}
	out = append(out, dest)
	for _, src := range operands[:len(operands)-1] {
		p := src
		if remoteSpec(src) {
			if i := strings.Index(p, "://"); i >= 0 {
				p = p[i+3:]
				if j := strings.IndexByte(p, '/'); j >= 0 {
					p = p[j:]
				}
			} else {
				_, p, _ = strings.Cut(p, ":")
			}
		}
		base := path.Base(p)
		if p == "" || base == "." || base == ".." || base == "/" || strings.ContainsAny(base, "*?[{") {
			return nil, "scp " + src + ": the names written cannot be checked"
		}
		out = append(out, path.Join(dest, base))
	}
	return out, ""
}

// scriptOutputs: util-linux script's typescript operand and its -O, -I,
// -B, -T and -t[FILE] logs (BSD script: the first operand).
func scriptOutputs(args []string) (out []string, unsure string) {
	r := optReader{shortVal: "cEIOBTmo", minAbbrev: 4,
		longVal: []string{"--command", "--echo", "--log-in", "--log-out", "--log-io", "--log-timing", "--logging-format", "--output-limit"}}
	opts := r.read(args)
	operand := false
	for k, o := range opts {
		switch {
		case o.name == "":
			if !operand {
				out = append(out, o.val)
			}
			operand = true
		case o.is('I', 4, "--log-in"), o.is('O', 4, "--log-out"), o.is('B', 4, "--log-io"), o.is('T', 4, "--log-timing"):
			out = append(out, o.val)
		case o.name == "-t":
			// util-linux: -tFILE; BSD: -t SECONDS (the next word).
			if k+1 < len(opts) && opts[k+1].name == "" && strings.Trim(opts[k+1].val, "0123456789") == "" {
				opts[k+1].name = "-t value"
			}
		case o.is(0, 4, "--timing"):
			if o.hasVal {
				out = append(out, o.val)
			}
		}
	}
	// -tFILE (util-linux, the file attached)
	for _, w := range args {
		if w == "--" {
			break
		}
		if strings.HasPrefix(w, "-t") && len(w) > 2 && !strings.HasPrefix(w, "--") {
			out = append(out, w[2:])
		}
	}
	return out, ""
}

// ddOutputs: of=FILE.
func ddOutputs(args []string) (out []string, unsure string) {
	for _, w := range args {
		if f, ok := strings.CutPrefix(w, "of="); ok {
			out = append(out, f)
		}
	}
	return out, ""
}

// tarOutputs reads GNU tar and bsdtar: the archive of -c, -r, -u, -A and
// --delete, -C's directories and the members named on extraction, and the
// files of --index-file, -g, --volno-file; --remove-files makes the
// operands writes. An option not listed here, one that runs a program
// (the validators ask for most), a name transformation or absolute names
// on extraction, and a remote archive ask.
func tarOutputs(args []string) (out []string, unsure string) {
	// The first word may be a bundle without '-' (tar xzf A -C D).
	var words []string
	if len(args) > 0 && args[0] != "" && args[0][0] != '-' {
		letters := args[0]
		rest := args[1:]
		words = nil
		k := 0
		for _, c := range letters {
			w := "-" + string(c)
			if strings.ContainsRune(tarShortVal, c) && k < len(rest) {
				words = append(words, w, rest[k])
				k++
				continue
			}
			words = append(words, w)
		}
		words = append(words, rest[k:]...)
	} else {
		words = args
	}
	r := optReader{shortVal: tarShortVal, minAbbrev: 3, longVal: tarLongVal}
	var (
		create, extract, removes, rewrites bool
		archives, dirs, operands           []string
		dir                                = ""
	)
	for _, o := range r.read(words) {
		if o.name == "" {
			operands = append(operands, inDir(dir, o.val))
			continue
		}
		if strings.HasPrefix(o.name, "--") {
			full := tarLong(o.name)
			switch full {
			case "":
				return nil, "tar " + o.name + ": an option whose effect is not checked"
			case "--create", "--append", "--update", "--catenate", "--concatenate", "--delete":
				create = true
			case "--extract", "--get":
				extract = true
			case "--file":
				archives = append(archives, o.val)
			case "--directory":
				dir = inDir(dir, o.val)
				dirs = append(dirs, dir)
			case "--index-file", "--listed-incremental", "--volno-file":
				out = append(out, o.val)
			case "--one-top-level":
				if o.hasVal {
					dirs = append(dirs, inDir(dir, o.val))
				}
			case "--remove-files":
				removes = true
			case "--transform", "--xform", "--absolute-names":
				rewrites = true
			}
			continue
		}
		switch o.name[1] {
		case 'c', 'r', 'u', 'A':
			create = true
		case 'x':
			extract = true
		case 'f':
			archives = append(archives, o.val)
		case 'C':
			dir = inDir(dir, o.val)
			dirs = append(dirs, dir)
		case 'g':
			out = append(out, o.val)
		case 'P', 's':
			rewrites = true
		case 't', 'd', 'z', 'j', 'J', 'Z', 'a', 'v', 'k', 'm', 'o', 'p', 'O', 'S', 'h', 'l', 'W', 'w', 'B', 'i',
			'T', 'X', 'b', 'H', 'U', 'G', 'K', 'N', 'L', 'V', 'M', 'q', 'n', 'e', 'y':
		default:
			return nil, "tar " + o.name + ": an option whose effect is not checked"
		}
	}
	for _, f := range archives {
		if remoteSpec(f) && !strings.HasPrefix(f, "/") {
			return nil, "tar -f " + f + ": a remote archive runs rsh"
		}
	}
	if create {
		out = append(out, archives...)
	}
	if extract {
		if rewrites {
			return nil, "tar extracts under names it rewrites (-P, -s, --transform)"
		}
		out = append(out, dirs...)
		out = append(out, operands...)
	}
	if removes {
		out = append(out, operands...)
	}
	return out, ""
}

const tarShortVal = "bCfFgHIKLNTVX"

var tarLongVal = []string{"--file", "--directory", "--index-file", "--listed-incremental", "--volno-file",
	"--exclude", "--exclude-from", "--files-from", "--strip-components", "--owner", "--group", "--mode", "--mtime",
	"--sort", "--format", "--blocking-factor", "--record-size", "--label", "--newer", "--after-date", "--newer-mtime",
	"--starting-file", "--tape-length", "--xattrs-include", "--xattrs-exclude", "--quoting-style", "--quote-chars",
	"--no-quote-chars", "--add-file", "--transform", "--xform", "--suffix", "--pax-option", "--level", "--exclude-tag",
	"--exclude-tag-under", "--exclude-tag-all", "--exclude-caches-under", "--owner-map", "--group-map", "--warning",
	"--hole-detection", "--sparse-version",
	"--use-compress-program", "--to-command", "--info-script", "--new-volume-script", "--rsh-command", "--rmt-command",
	"--checkpoint-action"}

// tarKnownLong are the long options tar may be given without asking:
// those above (the ones that run programs are the validators' to ask
// for, and they do), and flags that change neither where tar writes nor
// what it runs.
var tarKnownLong = []string{"--create", "--append", "--update", "--catenate", "--concatenate", "--delete", "--extract",
	"--get", "--list", "--diff", "--compare", "--test-label", "--gzip", "--gunzip", "--ungzip", "--bzip2", "--xz",
	"--lzma", "--lzip", "--lzop", "--zstd", "--lz4", "--compress", "--uncompress", "--auto-compress", "--no-auto-compress",
	"--verbose", "--keep-old-files", "--skip-old-files", "--keep-newer-files", "--overwrite", "--overwrite-dir",
	"--no-overwrite-dir", "--touch", "--same-owner", "--no-same-owner", "--preserve-permissions", "--same-permissions",
	"--no-same-permissions", "--preserve", "--preserve-order", "--same-order", "--numeric-owner", "--to-stdout",
	"--exclude-vcs", "--exclude-vcs-ignores", "--exclude-caches", "--exclude-caches-all", "--exclude-backups",
	"--anchored", "--no-anchored", "--wildcards", "--no-wildcards", "--wildcards-match-slash",
	"--no-wildcards-match-slash", "--ignore-case", "--no-ignore-case", "--null", "--no-null", "--verbatim-files-from",
	"--no-verbatim-files-from", "--unquote", "--no-unquote", "--posix", "--totals", "--show-transformed-names",
	"--show-stored-names", "--one-file-system", "--dereference", "--hard-dereference", "--no-recursion", "--recursion",
	"--sparse", "--ignore-zeros", "--ignore-failed-read", "--block-number", "--delay-directory-restore",
	"--no-delay-directory-restore", "--unlink-first", "--recursive-unlink", "--remove-files", "--xattrs", "--no-xattrs",
	"--acls", "--no-acls", "--selinux", "--no-selinux", "--full-time", "--utc", "--incremental", "--keep-directory-symlink",
	"--check-device", "--no-check-device", "--force-local", "--restrict", "--no-seek", "--seek", "--check-links",
	"--help", "--usage", "--version", "--show-defaults", "--interactive", "--confirmation", "--one-top-level",
	"--absolute-names", "--verify", "--read-full-records", "--multi-volume", "--no-ignore-command-error",
	"--ignore-command-error", "--show-omitted-dirs", "--index-file", "--volno-file", "--listed-incremental",
	"--fast-read", "--quiet", "--silent", "--clamp-mtime", "--atime-preserve", "--checkpoint", "--occurrence", "--backup"}

// tarLong is the long option name abbreviates, "" when it is not one tar
// may be given without asking (ambiguous abbreviations are tar's error).
func tarLong(name string) string {
	all := append(append([]string(nil), tarLongVal...), tarKnownLong...)
	for _, l := range all {
		if name == l {
			return l
		}
	}
	found := ""
	for _, l := range all {
		if len(name) >= 3 && strings.HasPrefix(l, name) {
			if found != "" && found != l {
				return "" // ambiguous: ask
			}
			found = l
		}
	}
	switch found {
	case "--use-compress-program", "--to-command", "--info-script", "--new-volume-script", "--rsh-command",
		"--rmt-command", "--checkpoint-action":
		return "" // the validators ask for them by their full name only
	}
	return found
}

// zipOutputs: the archive (and ARCHIVE.zip), --out/-O, the log file
// (-lf), -b's directory; -m's sources are removed. Options not listed
// ask.
func zipOutputs(args []string) (out []string, unsure string) {
	var operands []string
	move := false
	for i := 0; i < len(args); i++ {
		w := args[i]
		next := func() string {
			if i+1 < len(args) {
				i++
				return args[i]
			}
			return ""
		}
		switch {
		case w == "--":
			operands = append(operands, args[i+1:]...)
			i = len(args)
		case len(w) < 2 || w[0] != '-':
			operands = append(operands, w)
		case w == "-O" || w == "--out" || w == "--output-file" || w == "-lf" || w == "--logfile-path" || w == "-b" || w == "--temp-path":
			out = append(out, next())
		case w == "-x" || w == "-i" || w == "--exclude" || w == "--include":
			// a list of patterns up to the next option
			for i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
				i++
			}
		case w == "-n" || w == "-t" || w == "-tt" || w == "-Z" || w == "-P" || w == "--suffixes" || w == "--password" ||
			w == "--compression-method":
			next()
		case w == "-la" || w == "-li" || w == "--log-append" || w == "--log-info" || w == "-@" || w == "--names-stdin" ||
			w == "--recurse-paths" || w == "--quiet" || w == "--verbose" || w == "--junk-paths" || w == "--symlinks" ||
			w == "--update" || w == "--freshen" || w == "--no-dir-entries" || w == "--grow" || w == "--no-extra":
		case w == "-m" || w == "--move":
			move = true
		case w[1] != '-' && strings.Trim(w[1:], "rqvjXyuDf0123456789gkoRSmF") == "":
			if strings.Contains(w, "m") {
				move = true
			}
		default:
			return nil, "zip " + w + ": an option whose effect is not checked"
		}
	}
	if len(operands) == 0 {
		return out, ""
	}
	if a := operands[0]; a != "-" {
		out = append(out, a, a+".zip")
	}
	if move {
		out = append(out, operands[1:]...)
	}
	return out, ""
}

// splitOutputs: PREFIX (the second operand) and what its suffixes can
// make of it; --filter runs a command.
func splitOutputs(args []string) (out []string, unsure string) {
	r := optReader{shortVal: "abClnt", minAbbrev: 4, longVal: []string{"--suffix-length", "--bytes", "--line-bytes",
		"--lines", "--number", "--separator", "--additional-suffix", "--filter"}}
	var operands []string
	for _, o := range r.read(args) {
		switch {
		case o.name == "":
			operands = append(operands, o.val)
		case o.is(0, 4, "--filter"):
			return nil, "split --filter runs a command"
		}
	}
	if len(operands) >= 2 {
		out = append(out, prefixOutputs(operands[1])...)
	}
	return out, ""
}

// csplitOutputs: -f PREFIX; a suffix format (-b) can spell any name.
func csplitOutputs(args []string) (out []string, unsure string) {
	r := optReader{shortVal: "bfn", minAbbrev: 4, longVal: []string{"--suffix-format", "--prefix", "--digits"}}
	for _, o := range r.read(args) {
		switch {
		case o.is('f', 4, "--prefix"):
			out = append(out, prefixOutputs(o.val)...)
		case o.is('b', 4, "--suffix-format"):
			return nil, "csplit -b: a suffix format can spell any file name"
		}
	}
	return out, ""
}

// gpgOutputs: -o/--output, the files gpg keeps (--homedir, --keyring,
// logs), and, as gpg names its output after its input (file.gpg,
// file.asc, file.sig; file from file.gpg), each operand's derived names.
func gpgOutputs(args []string) (out []string, unsure string) {
	const min = 5
	writes := []string{"--output", "--homedir", "--keyring", "--secret-keyring", "--primary-keyring", "--trustdb-name",
		"--logger-file", "--log-file", "--status-file", "--attribute-file"}
	asks := []string{"--options", "--photo-viewer", "--exec-path", "--agent-program", "--dirmngr-program", "--load-extension",
		"--keyboxd-program"}
	r := optReader{shortVal: "orRuzfFN", minAbbrev: min, longVal: append(append([]string{"--recipient", "--local-user",
		"--default-key", "--passphrase-file", "--passphrase", "--compress-level"}, writes...), asks...)}
	var operands []string
	derived := true
	for _, o := range r.read(args) {
		switch {
		case o.name == "":
			operands = append(operands, o.val)
		case o.is(0, min, "--verify", "--import", "--recv-keys", "--search-keys", "--fingerprint", "--show-keys",
			"--list-packets", "--export", "--armor-export", "--check-sigs", "--list-sigs", "--delete-keys",
			"--delete-secret-keys", "--edit-key", "--sign-key", "--lsign-key", "--refresh-keys", "--send-keys", "--card-status"),
			strings.HasPrefix(o.name, "--list-"), o.name == "-k", o.name == "-K":
			derived = false
		case o.is('o', min, writes...):
			if o.val != "-" {
				out = append(out, o.val)
			}
		case o.is(0, min, asks...):
			return nil, "gpg " + o.name + " runs a program or reads options from a file"
		case o.is(0, min, "--use-embedded-filename"):
			// found by an attack pass: the message named ./.bashrc
			return nil, "gpg --use-embedded-filename writes the file the message names"
		}
	}
	for _, f := range operands {
		if f == "-" || !derived {
			continue
		}
		out = append(out, f+".gpg", f+".asc", f+".sig")
		for _, ext := range []string{".gpg", ".asc", ".sig", ".pgp"} {
			if s, ok := strings.CutSuffix(f, ext); ok {
				out = append(out, s)
			}
		}
	}
	return out, ""
}

// opensslOutputs: -out and the other options that name a file written
// (-keyout, -certout, -sess_out, -writerand, -keylogfile, -msgfile,
// -reqout, -respout, -signer, -certsout, -rspout, ..., -CAserial,
// -CAcreateserial's CA.srl); an engine, a
// provider, a configuration file and openssl ca ask.
func opensslOutputs(args []string) (out []string, unsure string) {
	if len(args) > 0 && (args[0] == "ca" || args[0] == "srp") {
		return nil, "openssl " + args[0] + " writes files its configuration names"
	}
	ca, serial, create := "", false, false
	for i := 0; i < len(args); i++ {
		w := args[i]
		if !strings.HasPrefix(w, "-") {
			continue
		}
		name, val, hasVal := strings.Cut(strings.TrimPrefix(strings.TrimPrefix(w, "-"), "-"), "=")
		value := func() string {
			if hasVal {
				return val
			}
			if i+1 < len(args) {
				i++
				return args[i]
			}
			return ""
		}
		switch name {
		case "out", "keyout", "certout", "sess_out", "writerand", "keylogfile", "msgfile", "reqout", "respout",
			"outdir", "rctout", "chainout", "ocsp_out", "signature_out", "CAserial",
			// cms, smime, ocsp and ts -signer (the verified signers'
			// certificates are written there), cms -certsout, cmp's
			// outputs, genpkey -outpubkey (found by an attack pass).
			"signer", "certsout", "outpubkey", "rspout", "extracertsout", "cacertsout", "crlout",
			"newwithnew", "newwithold", "oldwithnew":
			if name == "CAserial" {
				serial = true
			}
			out = append(out, value())
		case "CA":
			ca = value()
		case "CAcreateserial":
			create = true
		case "engine", "provider", "provider-path", "config", "conf", "keygen_engine", "ssl_config", "rand":
			if name == "rand" {
				value() // read
				continue
			}
			return nil, "openssl -" + name + " loads code or configuration"
		}
	}
	if create && !serial && ca != "" {
		out = append(out, strings.TrimSuffix(ca, path.Ext(ca))+".srl")
	}
	return out, ""
}

// installOutputs: like cp, the last operand and DEST/base(SRC), -t DIR,
// and with -d every operand; --strip-program runs a program.
func installOutputs(args []string) (out []string, unsure string) {
	r := optReader{shortVal: "gmoStZ", minAbbrev: 4, longVal: []string{"--group", "--mode", "--owner", "--suffix",
		"--target-directory", "--strip-program"}}
	var operands []string
	target, dirs := "", false
	for _, o := range r.read(args) {
		switch {
		case o.name == "":
			operands = append(operands, o.val)
		case o.is('t', 4, "--target-directory"):
			target = o.val
		case o.is('d', 4, "--directory"):
			dirs = true
		case o.is(0, 4, "--strip-program"):
			return nil, "install --strip-program runs a program"
		}
	}
	return copyLikeOutputs(operands, target, dirs, "install")
}

// copyLikeOutputs are the files a cp-like command writes: with a target
// directory, DIR/base(each operand); otherwise the last operand and
// LAST/base(each other).
func copyLikeOutputs(operands []string, target string, all bool, name string) (out []string, unsure string) {
	if all {
		return operands, ""
	}
	srcs := operands
	if target == "" {
		if len(operands) < 2 {
			return nil, ""
		}
		target = operands[len(operands)-1]
		srcs = operands[:len(operands)-1]
		out = append(out, target)
	}
	for _, s := range srcs {
		base := path.Base(s)
		if base == "." || base == ".." || base == "/" {
			return nil, name + " " + s + ": the name written cannot be checked"
		}
		out = append(out, path.Join(target, base))
	}
	return out, ""
}

// lnOutputs: the link written (LINK, DIR/base(TARGET), or base(TARGET)
// in the working directory).
func lnOutputs(args []string) (out []string, unsure string) {
	r := optReader{shortVal: "St", minAbbrev: 4, longVal: []string{"--suffix", "--target-directory"}}
	var operands []string
	target, noTarget := "", false
	for _, o := range r.read(args) {
		switch {
		case o.name == "":
			operands = append(operands, o.val)
		case o.is('t', 4, "--target-directory"):
			target = o.val
		case o.is('T', 4, "--no-target-directory"):
			noTarget = true
		}
	}
	if target == "" && len(operands) == 1 {
		target = "."
	}
	if noTarget && target == "" && len(operands) == 2 {
		return operands[1:], ""
	}
	return copyLikeOutputs(operands, target, false, "ln")
}

// patchOutputs: the file patched (the first operand), -o, the reject
// file (-r), backup prefixes (-B, -Y) and the directory (-d). The files
// a patch names are patch's to write, as members are tar's.
func patchOutputs(args []string) (out []string, unsure string) {
	r := optReader{shortVal: "BDdFgioprVYz", minAbbrev: 4, longVal: []string{"--prefix", "--ifdef", "--directory",
		"--fuzz", "--get", "--input", "--output", "--strip", "--reject-file", "--version-control", "--basename-prefix",
		"--suffix", "--quoting-style", "--reject-format", "--read-only"}}
	first := true
	for _, o := range r.read(args) {
		switch {
		case o.name == "":
			if first {
				out = append(out, o.val)
			}
			first = false
		case o.is('o', 4, "--output"), o.is('r', 4, "--reject-file"), o.is('d', 4, "--directory"):
			if o.val != "-" {
				out = append(out, o.val)
			}
		case o.is('B', 4, "--prefix"), o.is('Y', 4, "--basename-prefix"):
			out = append(out, prefixOutputs(o.val)...)
		}
	}
	return out, ""
}

// rsyncOutputs: a local destination and DEST/base of each source (with
// -R, DEST/ the source's path, or its part after "/./"); a
// source's contents (src/, src/.) cannot be named and ask, as cp x/. does;
// so do the options that run a program, read a batch or a file list, or
// write elsewhere (--log-file, --write-batch, --backup-dir, --temp-dir,
// --partial-dir are checked).
func rsyncOutputs(args []string) (out []string, unsure string) {
	const min = 5
	writes := []string{"--log-file", "--write-batch", "--only-write-batch", "--backup-dir", "--temp-dir", "--partial-dir"}
	asks := []string{"--rsh", "--read-batch", "--files-from", "--daemon", "--config", "--suffix", "--remove-source-files",
		"--rsync-path", "--early-input", "--sockopts", "--remote-option"}
	r := optReader{shortVal: "efBTM@", minAbbrev: min, longVal: append(append([]string{"--filter", "--exclude", "--include",
		"--exclude-from", "--include-from", "--compare-dest", "--copy-dest", "--link-dest", "--password-file",
		"--chmod", "--chown", "--usermap", "--groupmap", "--out-format", "--log-file-format", "--max-size", "--min-size",
		"--bwlimit", "--timeout", "--contimeout", "--port", "--info", "--debug", "--modify-window", "--block-size",
		"--checksum-choice", "--compress-choice", "--compress-level", "--skip-compress", "--iconv", "--max-delete",
		"--max-alloc", "--protocol", "--checksum-seed", "--stop-after", "--stop-at", "--address", "--outbuf"}, writes...), asks...)}
	var operands []string
	relative := false
	for _, o := range r.read(args) {
		switch {
		case o.name == "":
			operands = append(operands, o.val)
		case o.is('R', min, "--relative"):
			relative = true
		case o.name == "--no-relative" || o.name == "--no-R":
			relative = false
		case o.is('T', min, writes...):
			out = append(out, o.val)
		case o.is('e', min, "--rsh") && plainSSH(o.val):
		case o.is('e', min, asks...), o.is('M', 0):
			return nil, "rsync " + o.name + ": an option whose effect is not checked"
		}
	}
	if len(operands) < 2 {
		return out, ""
	}
	dest := operands[len(operands)-1]
	if remoteSpec(dest) {
		return out, ""
	}
	out = append(out, dest)
	for _, src := range operands[:len(operands)-1] {
		p := src
		if remoteSpec(src) {
			if i := strings.Index(p, "::"); i >= 0 {
				p = p[i+2:]
			} else if i := strings.Index(p, "://"); i >= 0 {
				p = p[i+3:]
			} else {
				_, p, _ = strings.Cut(p, ":")
			}
		}
		base := path.Base(p)
		if p == "" || strings.HasSuffix(p, "/") || base == "." || base == ".." || base == "/" || strings.ContainsAny(base, "*?[") {
			return nil, "rsync " + src + ": what it copies into " + dest + " cannot be named"
		}
		if relative {
			// -R recreates the source's path under dest: the part after
			// "/./", or all of it (found by an attack pass: rsync -R
			// stage/./.git/hooks/pre-commit . wrote .git/hooks/pre-commit).
			rel := p
			if i := strings.Index(p, "/./"); i >= 0 {
				rel = p[i+3:]
			} else if strings.HasPrefix(p, "./") {
				rel = p[2:]
			}
			out = append(out, path.Join(dest, rel))
			continue
		}
		out = append(out, path.Join(dest, base))
	}
	return out, ""
}

// unzipOutputs: -d's directory and the members named (in it); -: (names
// with ..) and zipinfo mode's options are read as unzip's.
func unzipOutputs(args []string) (out []string, unsure string) {
	dir := ""
	var operands []string
	extract := true
	for i := 0; i < len(args); i++ {
		w := args[i]
		switch {
		case w == "-d":
			if i+1 < len(args) {
				i++
				dir = args[i]
			}
		case strings.HasPrefix(w, "-d") && !strings.HasPrefix(w, "--"):
			dir = w[2:]
		case w == "-x":
			for i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
				i++
			}
		case w == "-P":
			i++
		case len(w) > 1 && w[0] == '-':
			if strings.ContainsAny(w[1:], ":^") {
				return nil, "unzip " + w + ": members may be written outside the directory"
			}
			if strings.ContainsAny(w[1:], "lvtpcZz") {
				extract = false
			}
			if k := strings.IndexAny(w, "dP"); k > 0 {
				// -qd DIR, -od/tmp/x: the value is the rest or the next word
				v := w[k+1:]
				if v == "" && i+1 < len(args) {
					i++
					v = args[i]
				}
				if w[k] == 'd' {
					dir = v
				}
			}
		default:
			operands = append(operands, w)
		}
	}
	if !extract {
		return nil, ""
	}
	if dir != "" {
		out = append(out, dir)
	}
	if len(operands) > 1 {
		for _, m := range operands[1:] {
			out = append(out, inDir(dir, m))
		}
	}
	return out, ""
}

// cpioOutputs: copy-out's archive (-O, -F); copy-in and pass-through
// write names read from the archive or the input (absolute and .. ones
// too), and ask, unless only listing.
func cpioOutputs(args []string) (out []string, unsure string) {
	r := optReader{shortVal: "CDEFHIMOR", minAbbrev: 4, longVal: []string{"--file", "--format", "--io-size",
		"--pattern-file", "--message", "--owner", "--rsh-command", "--block-size", "--directory"}}
	in, pass, list := false, false, false
	for _, o := range r.read(args) {
		switch {
		case o.is('O', 0), o.is('F', 4, "--file"), o.is('D', 4, "--directory"):
			out = append(out, o.val)
		case o.is('i', 4, "--extract"):
			in = true
		case o.is('p', 4, "--pass-through"):
			pass = true
		case o.is('t', 4, "--list"):
			list = true
		case o.is(0, 4, "--rsh-command"):
			return nil, "cpio --rsh-command runs a program"
		}
	}
	if pass || in && !list {
		return nil, "cpio writes the names its input gives, which cannot be checked"
	}
	return out, ""
}

// yqOutputs: with -i, the files edited in place; --split-exp writes files
// its expression names.
func yqOutputs(args []string) (out []string, unsure string) {
	r := optReader{shortVal: "Iops", minAbbrev: 4, longVal: []string{"--indent", "--output-format", "--input-format",
		"--split-exp", "--expression", "--from-file", "--front-matter", "--xml-attribute-prefix", "--xml-content-name"}}
	inPlace := false
	var operands []string
	for _, o := range r.read(args) {
		switch {
		case o.name == "":
			operands = append(operands, o.val)
		case o.is('i', 4, "--inplace", "--in-place"):
			inPlace = true
		case o.is('s', 4, "--split-exp"):
			return nil, "yq --split-exp writes files its expression names"
		}
	}
	if inPlace {
		out = append(out, operands...)
	}
	return out, ""
}

// sdiffOutputs: -o/--output, the merged file.
func sdiffOutputs(args []string) (out []string, unsure string) {
	r := optReader{shortVal: "Iow", minAbbrev: 4, longVal: []string{"--output", "--ignore-matching-lines", "--width", "--diff-program"}}
	for _, o := range r.read(args) {
		if o.is('o', 4, "--output") {
			out = append(out, o.val)
		} else if o.is(0, 4, "--diff-program") {
			return nil, "sdiff --diff-program runs a program"
		}
	}
	return out, ""
}

// sqliteOutputs: the database (the first operand) is written; the SQL and
// -cmd words are checked for dot-commands other than a few that only
// show, and for what writes or runs (ATTACH, VACUUM INTO, writefile,
// load_extension, edit). Without SQL, sqlite3 reads its input, which
// cannot be checked; -init reads a script.
func sqliteOutputs(args []string) (out []string, unsure string) {
	var operands, scripts []string
	for i := 0; i < len(args); i++ {
		w := args[i]
		if w == "--" {
			operands = append(operands, args[i+1:]...)
			break
		}
		if len(w) < 2 || w[0] != '-' {
			operands = append(operands, w)
			continue
		}
		n := "-" + strings.TrimLeft(w, "-")
		switch n {
		case "-cmd":
			if i+1 < len(args) {
				i++
				scripts = append(scripts, args[i])
			}
		case "-init":
			return nil, "sqlite3 -init reads a script, which cannot be checked"
		case "-separator", "-newline", "-nullvalue", "-vfs", "-pagecache", "-lookaside", "-heap", "-maxsize",
			"-mmap", "-escape", "-zip", "-A", "-a", "-archive":
			if n == "-A" || n == "-a" || n == "-archive" || n == "-zip" {
				return nil, "sqlite3 " + w + ": archive mode writes files"
			}
			i++
		}
	}
	if len(operands) > 0 && operands[0] != ":memory:" {
		out = append(out, operands[0])
	}
	if len(operands) < 2 && len(scripts) == 0 {
		return out, "sqlite3 reads its commands from its input, which cannot be checked"
	}
	if len(operands) > 1 {
		scripts = append(scripts, operands[1:]...)
	}
	for _, s := range scripts {
		if why := sqliteScript(s); why != "" {
			return nil, why
		}
	}
	return out, ""
}

// sqliteSafeDot are the dot-commands that only show or format.
var sqliteSafeDot = map[string]bool{"tables": true, "table": true, "schema": true, "indexes": true, "indices": true,
	"dump": true, "headers": true, "header": true, "mode": true, "databases": true, "show": true, "help": true,
	"fullschema": true, "width": true, "nullvalue": true, "separator": true, "timer": true, "echo": true,
	"stats": true, "eqp": true, "explain": true, "print": true, "dbinfo": true, "changes": true, "bail": true}

func sqliteScript(s string) string {
	for _, line := range strings.Split(s, "\n") {
		l := strings.TrimSpace(line)
		if !strings.HasPrefix(l, ".") {
			continue
		}
		cmd := strings.TrimPrefix(strings.Fields(l)[0], ".")
		if !sqliteSafeDot[strings.ToLower(cmd)] {
			return "sqlite3 ." + cmd + ": a dot-command that may write a file or run a program"
		}
	}
	low := strings.ToLower(s)
	for _, k := range []string{"attach", "vacuum", "writefile", "load_extension", "edit(", "fts3_tokenizer", "readfile"} {
		if strings.Contains(low, k) {
			return "sqlite3 SQL with " + k + " may write or read files or load code"
		}
	}
	return ""
}

// gitSubOutputs are the files git subcommands write through their
// operands and options: bundle create FILE, fast-export and fast-import
// --export-marks, checkout-index --prefix, index-pack -o (and the index
// it writes next to the pack), the repository init, clone and worktree
// add create (a template directory, whose hooks git copies, asks).
func gitSubOutputs(sub string, args []string) (out []string, unsure string) {
	if w, why, ok := gitPathWrites(sub, args); ok {
		return w, why
	}
	var operands []string
	prefix := ""
	value := func(i *int, w string) (string, bool) {
		if _, v, ok := strings.Cut(w, "="); ok {
			return v, true
		}
		if *i+1 < len(args) {
			*i++
			return args[*i], true
		}
		return "", false
	}
	stripExt := func(p string) string { return strings.TrimSuffix(p, path.Ext(p)) }
	for i := 0; i < len(args); i++ {
		w := args[i]
		name, _, _ := strings.Cut(w, "=")
		switch {
		case w == "--":
			operands = append(operands, args[i+1:]...)
			i = len(args)
		case len(w) < 2 || w[0] != '-':
			operands = append(operands, w)
		case isAbbrev(name, []string{"--template"}, len("--te")) && (sub == "init" || sub == "clone" || sub == "submodule"):
			return nil, "git " + sub + " --template copies hooks from a directory"
		case isAbbrev(name, []string{"--export-marks", "--export-pack-edges"}, len("--exp")) && (sub == "fast-export" || sub == "fast-import"):
			if v, ok := value(&i, w); ok {
				out = append(out, v)
			}
		case name == "--prefix" && sub == "checkout-index":
			if v, ok := value(&i, w); ok {
				out = append(out, prefixOutputs(v)...)
				prefix = v
			}
		case (name == "-o") && sub == "index-pack":
			if v, ok := value(&i, w); ok {
				out = append(out, v, stripExt(v)+".idx", stripExt(v)+".rev", stripExt(v)+".keep")
			}
		case isAbbrev(name, []string{"--separate-git-dir", "--reference", "--reference-if-able"}, len("--sep")) && (sub == "init" || sub == "clone"):
			if v, ok := value(&i, w); ok && name != "--reference" && name != "--reference-if-able" {
				out = append(out, v)
			}
		case (sub == "clone" || sub == "worktree") && (w == "-b" || w == "-B" || w == "-o" || w == "--origin" || w == "--branch" ||
			w == "--depth" || w == "--reason" || w == "-u" || w == "--upload-pack" || w == "--filter" || w == "-j" || w == "--jobs" ||
			w == "--shallow-since" || w == "--shallow-exclude" || w == "-c" || w == "--config" || w == "--server-option" || w == "--bundle-uri"):
			i++ // a value
		}
	}
	if prefix != "" {
		for _, o := range operands {
			out = append(out, prefix+o)
		}
	}
	switch sub {
	case "bundle":
		if len(operands) >= 2 && operands[0] == "create" {
			out = append(out, operands[1])
		}
	case "index-pack":
		for _, o := range operands {
			out = append(out, stripExt(o)+".idx", stripExt(o)+".rev", stripExt(o)+".keep")
		}
	case "init":
		// Every operand: a value option not listed above (-b main) may
		// have been read as one.
		out = append(out, operands...)
	case "clone":
		switch {
		case len(operands) >= 2:
			out = append(out, operands[1:]...)
		case len(operands) == 1:
			u := strings.TrimRight(operands[0], "/")
			if remoteSpec(u) && !strings.Contains(u, "://") {
				_, u, _ = strings.Cut(u, ":")
			}
			b := strings.TrimSuffix(path.Base(u), ".git")
			out = append(out, b, b+".git")
		}
	case "worktree":
		if len(operands) >= 2 && operands[0] == "add" {
			out = append(out, operands[1:]...)
		}
	}
	return out, ""
}

// plainSSH reports an rsync -e command that is ssh with options that
// neither run a program nor read a configuration (ssh -p 2222).
func plainSSH(cmd string) bool {
	f := strings.Fields(cmd)
	if len(f) == 0 || f[0] != "ssh" {
		return false
	}
	for _, w := range f[1:] {
		if strings.HasPrefix(w, "-") && strings.ContainsAny(w, "oFESL") || strings.ContainsAny(w, "$`'\"\\;|&<>(){}") {
			return false
		}
	}
	return true
}

// gitPathWrites are the files git checkout and restore write through
// their pathspecs, and those of apply, am, submodule add,
// credential-store, bugreport, diagnose and mailsplit (found by an attack
// pass: git checkout REV -- .claude/settings.json, git apply evil.patch
// wrote protected files under Bash(git:*)). A pathspec that may cover
// several files ("." or a name ending in '/', a pattern, magic) asks, as
// the files it covers in another revision or the index cannot be named;
// checkout or switch of a whole branch writes tree content and is left
// alone. ok is false for the other subcommands.
func gitPathWrites(sub string, args []string) (out []string, unsure string, ok bool) {
	// split: options, operands before "--", operands after it (nil: no "--").
	var opts, before, after []string
	dash := false
	split := func(values ...string) {
		for i := 0; i < len(args); i++ {
			w := args[i]
			switch {
			case dash:
				after = append(after, w)
			case w == "--":
				dash = true
			case len(w) < 2 || w[0] != '-':
				before = append(before, w)
			default:
				opts = append(opts, w)
				for _, v := range values {
					if w == v && i+1 < len(args) {
						i++
						opts = append(opts, args[i])
					}
				}
			}
		}
	}
	hasOpt := func(names ...string) bool {
		for _, o := range opts {
			n, _, _ := strings.Cut(o, "=")
			for _, name := range names {
				if n == name {
					return true
				}
			}
		}
		return false
	}
	pathspecs := func(specs []string) ([]string, string) {
		var w []string
		for _, p := range specs {
			c := path.Clean(p)
			b := path.Base(c)
			if strings.HasPrefix(p, ":") || strings.ContainsAny(p, "*?[") || strings.HasSuffix(p, "/") || b == "." || b == ".." || b == "/" {
				return nil, "git " + sub + " " + p + ": the pathspec may cover protected files, which cannot be named"
			}
			// A directory's files are written too (git checkout REV --
			// sub writes sub/.envrc, sub/.vscode/...): what it holds on
			// disk is checked through the glob (a file only REV has is
			// not seen).
			w = append(w, p, strings.TrimSuffix(p, "/")+"/**")
		}
		return w, ""
	}
	switch sub {
	case "checkout", "restore":
		split("-b", "-B", "--orphan", "-s", "--source", "--conflict")
		if hasOpt("--pathspec-from-file") {
			return nil, "git " + sub + " --pathspec-from-file: the files written cannot be named", true
		}
		specs := after
		if sub == "restore" {
			staged, worktree := false, false
			for _, o := range opts {
				if len(o) > 1 && o[1] != '-' {
					staged = staged || strings.ContainsRune(o, 'S')
					worktree = worktree || strings.ContainsRune(o, 'W')
				}
			}
			staged = staged || hasOpt("--staged")
			worktree = worktree || hasOpt("--worktree")
			if staged && !worktree {
				return nil, "", true // the index only
			}
			specs = append(before, after...)
		} else if !dash {
			// git checkout X [PATHS]: X is a revision or, when none is
			// named so, a path; the words after it are paths.
			if len(before) > 0 && before[0] != "-" {
				first, why := pathspecs(before[:1])
				if why != "" {
					return nil, why, true
				}
				out = append(out, first...)
			}
			if len(before) > 1 {
				specs = before[1:]
			}
		}
		w, why := pathspecs(specs)
		if why != "" {
			return nil, why, true
		}
		return append(out, w...), "", true
	case "apply":
		split("-p", "-C", "--exclude", "--include", "--directory", "--whitespace", "--build-fake-ancestor")
		if hasOpt("--check", "--stat", "--numstat", "--summary") && !hasOpt("--apply", "--index", "--cached", "--3way", "-3", "--reject") {
			return nil, "", true
		}
		return nil, "git apply writes the files its patch names, which cannot be checked", true
	case "am":
		split()
		if hasOpt("--abort", "--quit", "--show-current-patch") {
			return nil, "", true
		}
		return nil, "git am writes the files its patches name, which cannot be checked", true
	case "submodule":
		split("-b", "--branch", "--name", "--reference", "--depth")
		if len(before) == 0 || before[0] != "add" || hasOpt("--template") {
			return nil, "", false
		}
		ops := append(before[1:], after...)
		switch {
		case len(ops) >= 2:
			out = append(out, ops[1:]...)
		case len(ops) == 1:
			u := strings.TrimSuffix(strings.TrimRight(ops[0], "/"), ".git")
			if remoteSpec(u) && !strings.Contains(u, "://") {
				_, u, _ = strings.Cut(u, ":")
			}
			out = append(out, path.Base(u))
		}
		return out, "", true
	case "credential-store":
		split("--file")
		file := "~/.git-credentials"
		for i, o := range opts {
			if v, ok := strings.CutPrefix(o, "--file="); ok {
				file = v
			} else if o == "--file" && i+1 < len(opts) {
				file = opts[i+1]
			}
		}
		if len(before) == 0 || before[0] == "store" || before[0] == "erase" {
			out = append(out, file)
		}
		return out, "", true
	case "bugreport", "diagnose", "mailsplit":
		split("-o", "--output-directory", "-s", "--suffix", "--mode")
		for i, o := range opts {
			n, v, hasV := strings.Cut(o, "=")
			switch {
			case o == "-o" || n == "--output-directory" && !hasV:
				if i+1 < len(opts) {
					out = append(out, opts[i+1])
				}
			case n == "--output-directory":
				out = append(out, v)
			case strings.HasPrefix(o, "-o"):
				out = append(out, o[2:])
			case (o == "-s" || n == "--suffix") && (!hasV && i+1 < len(opts) && strings.Contains(opts[i+1], "/") || strings.Contains(v, "/")),
				strings.HasPrefix(o, "-s") && len(o) > 2 && strings.Contains(o, "/"):
				return nil, "git " + sub + " --suffix with a '/' names a file elsewhere", true
			}
		}
		return out, "", true
	}
	return nil, "", false
}
