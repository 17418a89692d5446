package permissions

import (
	"strings"

	"github.com/moat-sandbox/moat/validators"
)

// readOnlySpecs is the read-only table: commands that only search, read or
// list files, or print something, with the flags known to keep them so.
// Anything not here (and not git, sed, find or cd, which have their own
// code) is not read-only. Deliberately absent: less and more (they run
// commands), xargs (read-only only with the commands of globOK, in
// readonly.go, and never allowed by the tables), env with arguments, ping, dig, nslookup, host, curl and
// wget (they reach the network: data can leave through a DNS name),
// ps (other processes' arguments), env and printenv (they print the
// environment's secrets), python, node and every interpreter.
//
// Flags deliberately absent (an unknown flag makes the command not
// read-only): sort -o/--output/--compress-program/-T, rg --pre/--pre-glob/
// -z/--search-zip/--hostname-bin, fd -x/-X/--exec/--exec-batch/-l,
// tree -o/-R, date -s/--set, hostname NAME, file -C/-f/--files-from, man -P/-H/--pager/
// --html/-l, jq -f/--rawfile/--slurpfile/-L, awk -f/-e/-i/-l/-o/-p/-d,
// printf -v, xxd with an output file, uniq with an output file, diff -l
// (--paginate runs pr),
// --files0-from (it names the files to read inside another file).
var readOnlySpecs = lazy[map[string]*cmdSpec]{make: func() map[string]*cmdSpec {
	m := map[string]*cmdSpec{}
	add := func(names string, s cmdSpec) {
		for _, n := range strings.Fields(names) {
			c := s
			m[n] = &c
		}
	}

	// neutral: print or compute, no files
	add("true false :", cmdSpec{kind: kindNeutral, anyArgs: true})
	add("echo", cmdSpec{kind: kindNeutral, anyArgs: true})
	add("test [", cmdSpec{kind: kindNeutral, anyArgs: true})
	add("printf", cmdSpec{kind: kindNeutral, flags: flags(""), pos: posNone, opts: flagOpts{noDoubleDash: true}})
	add("sleep", cmdSpec{kind: kindNeutral, pos: posNone, flags: flags("")})
	add("seq", cmdSpec{kind: kindNeutral, pos: posNone, flags: flags("-f= -s= -w --format= --separator= --equal-width")})
	add("basename", cmdSpec{kind: kindNeutral, pos: posNone, flags: flags("-a -s= -z --multiple --suffix= --zero")})
	add("dirname", cmdSpec{kind: kindNeutral, pos: posNone, flags: flags("-z --zero")})
	add("pwd", cmdSpec{kind: kindNeutral, pos: posNone, maxPos: -1, flags: flags("-L -P")})
	add("whoami tty arch", cmdSpec{kind: kindNeutral, pos: posNone, maxPos: -1, flags: flags("")})
	add("id", cmdSpec{kind: kindNeutral, pos: posNone, flags: flags("-a -g -G -n -r -u -z -Z --group --groups --name --real --user --zero --context")})
	add("groups", cmdSpec{kind: kindNeutral, pos: posNone, flags: flags("")})
	add("uname", cmdSpec{kind: kindNeutral, pos: posNone, maxPos: -1, flags: flags("-a -s -n -r -v -m -p -i -o --all --kernel-name --nodename " +
		"--kernel-release --kernel-version --machine --processor --hardware-platform --operating-system")})
	add("hostname", cmdSpec{kind: kindNeutral, pos: posNone, maxPos: -1, flags: flags("-f -s -i -I -d -A -a -y --fqdn --long --short " +
		"--ip-address --all-ip-addresses --domain --alias --all-fqdns")})
	add("nproc", cmdSpec{kind: kindNeutral, pos: posNone, maxPos: -1, flags: flags("--all --ignore=")})
	add("uptime", cmdSpec{kind: kindNeutral, pos: posNone, maxPos: -1, flags: flags("-p -s --pretty --since")})
	// system information (as the seed's read-only list)
	add("free", cmdSpec{kind: kindNeutral, pos: posNone, maxPos: -1, flags: flags("-b -k -m -g -h -l -t -w -s= -c= " +
		"--bytes --kilo --mega --giga --tera --peta --kibi --mebi --gibi --tebi --pebi --human --si --lohi --total --wide --committed")})
	add("lscpu", cmdSpec{kind: kindNeutral, pos: posNone, maxPos: -1, flags: flags("-a -b -c -e? -J -p? -s@ -x -y -B -C? " +
		"--all --online --offline --extended? --json --parse? --sysroot@ --hex --physical --bytes --caches? --output-all")})
	add("getconf", cmdSpec{kind: kindNeutral, pos: posNone, maxPos: 2, flags: flags("-a")})
	add("who", cmdSpec{kind: kindNeutral, pos: posNone, maxPos: -1, flags: flags("-a -b -d -H -l -m -p -q -r -s -t -T -u " +
		"--all --boot --dead --heading --login --lookup --process --count --runlevel --short --time --mesg --users")})
	add("cal ncal", cmdSpec{kind: kindNeutral, pos: posNone, maxPos: 3, flags: flags("-1 -3 -y -m -j -h -s -M -w -n= --one --three --year --monday --sunday --julian")})
	add("numfmt", cmdSpec{kind: kindNeutral, pos: posNone, flags: flags("-d= -z --debug --delimiter= --field= --format= " +
		"--from= --from-unit= --grouping --header? --invalid= --padding= --round= --suffix= --to= --to-unit= --zero-terminated")})
	add("lsb_release", cmdSpec{kind: kindNeutral, pos: posNone, maxPos: -1, flags: flags("-a -d -i -r -c -s -v --all --description " +
		"--id --release --codename --short --version")})
	add("locale", cmdSpec{kind: kindNeutral, pos: posNone, flags: flags("-a -m -c -k -v --all-locales --charmaps --category-name --keyword-name --verbose")})
	add("date", cmdSpec{kind: kindNeutral, pos: posNone,
		flags: flags("-d= -f@ -I? -R -r@ -u --date= --file@ --iso-8601? --rfc-3339= --rfc-email --reference@ --utc --universal --debug"),
		check: func(a *analysis, args []string, pa *parsedArgs) {
			for _, i := range pa.pos {
				if !strings.HasPrefix(args[i], "+") {
					a.notReadOnly("date with an operand sets the clock")
				}
			}
		}})
	add("command", cmdSpec{kind: KindSearch, pos: posNone, flags: flags("-v -V -p"),
		check: func(a *analysis, args []string, pa *parsedArgs) {
			if !pa.has("-v", "-V") {
				a.notReadOnly("command runs its argument")
			}
		}})
	add("which", cmdSpec{kind: KindSearch, pos: posNone, flags: flags("-a -s --all")})
	add("whereis", cmdSpec{kind: KindSearch, pos: posNone, flags: flags("-b -m -s -u -l")})
	add("type", cmdSpec{kind: KindSearch, pos: posNone, flags: flags("-a -f -p -P -t")})
	add("tr", cmdSpec{kind: kindNeutral, pos: posNone, flags: flags("-c -C -d -s -t --complement --delete --squeeze-repeats --truncate-set1")})
	add("help", cmdSpec{kind: kindNeutral, pos: posNone, flags: flags("-d -m -s")})
	add("man", cmdSpec{kind: KindRead, pos: posNone, flags: flags("-k -f -a -w -W -s= -S= -L= -m= -K -E= -7 --apropos --whatis " +
		"--all --where --path --location --sections= --locale= --encoding= --ascii --no-hyphenation --no-justification --regex --wildcard --names-only"),
		check: func(a *analysis, args []string, pa *parsedArgs) {
			for _, i := range pa.pos {
				if strings.Contains(args[i], "/") { // man formats a file named by a path
					a.reads = append(a.reads, args[i])
					// whose requests read other files: .so /etc/shadow
					// in a page the repository ships printed the file
					// (attack pass 67)
					a.notReadOnly("man formats the page file " + args[i] + ", whose requests (.so) read other files")
				}
			}
		}})

	// read
	add("cat", cmdSpec{kind: KindRead, flags: flags("-A -b -e -E -n -s -t -T -u -v --show-all --number-nonblank --show-ends " +
		"--number --squeeze-blank --show-tabs --show-nonprinting")})
	headFlags := flags("-c= -n= -q -v -z --bytes= --lines= --quiet --silent --verbose --zero-terminated")
	add("head", cmdSpec{kind: KindRead, flags: headFlags, opts: flagOpts{numeric: true}})
	add("tail", cmdSpec{kind: KindRead, opts: flagOpts{numeric: true},
		flags: merge(headFlags, flags("-f -F -s= --follow? --retry --sleep-interval= --pid= --max-unchanged-stats="))})
	add("wc", cmdSpec{kind: KindRead, flags: flags("-c -m -l -L -w --bytes --chars --lines --words --max-line-length --total=")})
	add("nl", cmdSpec{kind: KindRead, flags: flags("-b= -d= -f= -h= -i= -l= -n= -p -s= -v= -w= --body-numbering= --section-delimiter= " +
		"--footer-numbering= --header-numbering= --line-increment= --join-blank-lines= --number-format= --no-renumber " +
		"--number-separator= --starting-line-number= --number-width=")})
	add("od", cmdSpec{kind: KindRead, flags: flags("-A= -j= -N= -S= -t= -v -w? -a -b -c -d -f -i -l -o -s -x --endian= " +
		"--address-radix= --skip-bytes= --read-bytes= --strings? --format= --output-duplicates --width? --traditional")})
	add("hexdump hd", cmdSpec{kind: KindRead, flags: flags("-b -c -C -d -o -x -e= -f@ -n= -s= -v -L?")})
	// xxd reads its own arguments (analyzeXxd): its options end at its
	// first operand, and a second operand is the file it writes.
	add("xxd", cmdSpec{kind: KindRead, maxPos: 1})
	add("strings", cmdSpec{kind: KindRead, flags: flags("-a -d -f -n= -t= -e= -w -s= -o --all --data --print-file-name " +
		"--bytes= --radix= --encoding= --include-all-whitespace --output-separator=")})
	// not -z, -Z, --uncompress, --uncompress-noreport: file runs the
	// decompressors it finds on PATH (zstd, lz4, gzip for .Z...); not -f
	// and --files-from: the files they name are read unchecked.
	add("file", cmdSpec{kind: KindRead, flags: flags("-b -d -E -h -i -k -l -L -N -n -r -s -0 -e= -F= -m@ -P= " +
		"--brief --dereference --no-dereference --mime --mime-type --mime-encoding --keep-going --raw --special-files " +
		"--extension --apple --print0 --exclude= --exclude-quiet= --separator= " +
		"--magic-file@ --parameter= --no-pad --no-buffer")})
	add("stat", cmdSpec{kind: KindRead, flags: flags("-L -f -t -c= --format= --printf= --dereference --file-system --terse --cached=")})
	add("md5sum sha1sum sha224sum sha256sum sha384sum sha512sum b2sum", cmdSpec{kind: KindRead,
		flags: flags("-b -t -z -l= --binary --text --tag --zero --length=")})
	add("shasum", cmdSpec{kind: KindRead, flags: flags("-a= -b -t -U -0 -p --algorithm= --binary --text --UNIVERSAL --01 --portable --tag")})
	add("md5 sha1 sha256 sha512", cmdSpec{kind: KindRead, flags: flags("-q -r -n")}) // BSD/macOS; -s STRING hashes a string
	add("cksum sum", cmdSpec{kind: KindRead, flags: flags("-a= -l= -r -s --algorithm= --length= --tag --untagged --base64 --raw -z --zero --sysv")})
	add("realpath", cmdSpec{kind: KindRead, flags: flags("-e -m -L -P -q -s -z --canonicalize-existing --canonicalize-missing " +
		"--logical --physical --quiet --strip --no-symlinks --zero --relative-to@ --relative-base@")})
	add("readlink", cmdSpec{kind: KindRead, flags: flags("-f -e -m -n -q -s -v -z --canonicalize --canonicalize-existing " +
		"--canonicalize-missing --no-newline --quiet --silent --verbose --zero")})
	add("cut", cmdSpec{kind: KindRead, flags: flags("-b= -c= -d= -f= -n -s -z --bytes= --characters= --delimiter= --fields= " +
		"--complement --only-delimited --output-delimiter= --zero-terminated")})
	// sort spills a large input into temporary files of $TMPDIR, which it
	// removes (-S makes that sooner): private files of the run, not a
	// change (docs/DECISIONS.md); -T, -o and --compress-program are not here.
	add("sort", cmdSpec{kind: KindRead, flags: flags("-b -c -C -d -f -g -h -i -k= -m -M -n -r -R -s -t= -u -V -z -S= " +
		"--ignore-leading-blanks --check? --dictionary-order --ignore-case --general-numeric-sort --human-numeric-sort " +
		"--ignore-nonprinting --key= --merge --month-sort --numeric-sort --reverse --random-sort --random-source@ --stable " +
		"--field-separator= --unique --version-sort --zero-terminated --buffer-size= --parallel= --sort= --debug")})
	add("uniq", cmdSpec{kind: KindRead, maxPos: 1, flags: flags("-c -d -D -f= -i -s= -u -w= -z --count --repeated " +
		"--all-repeated? --skip-fields= --ignore-case --skip-chars= --unique --zero-terminated --check-chars= --group?")})
	add("column", cmdSpec{kind: KindRead, flags: flags("-t -s= -o= -c= -x -n -e -N= -R= -T= -l= -J -r= -W= -H= -O= -E= -d -L -i= -p= " +
		"--table --separator= --output-separator= --output-width= --fillrows --table-columns= --table-right= --table-truncate= " +
		"--table-columns-limit= --json --tree= --table-wrap= --table-hide= --table-order= --table-noextreme= --table-noheadings " +
		"--keep-empty-lines --tree-id= --tree-parent=")})
	add("paste", cmdSpec{kind: KindRead, flags: flags("-d= -s -z --delimiters= --serial --zero-terminated")})
	add("join", cmdSpec{kind: KindRead, maxPos: 2, flags: flags("-a= -e= -i -j= -o= -t= -v= -1= -2= -z --check-order " +
		"--nocheck-order --header --ignore-case --zero-terminated")})
	add("comm", cmdSpec{kind: KindRead, maxPos: 2, flags: flags("-1 -2 -3 -z --check-order --nocheck-order --output-delimiter= --total --zero-terminated")})
	add("fold", cmdSpec{kind: KindRead, flags: flags("-b -s -w= --bytes --spaces --width=")})
	add("fmt", cmdSpec{kind: KindRead, opts: flagOpts{numeric: true}, flags: flags("-c -p= -s -t -u -w= -g= --crown-margin --prefix= " +
		"--split-only --tagged-paragraph --uniform-spacing --width= --goal=")})
	add("expand unexpand", cmdSpec{kind: KindRead, flags: flags("-i -t= -a --initial --tabs= --all --first-only")})
	add("rev", cmdSpec{kind: KindRead, flags: flags("-0 --zero")})
	add("tac", cmdSpec{kind: KindRead, flags: flags("-b -r -s= --before --regex --separator=")})
	add("base64 base32 basenc", cmdSpec{kind: KindRead, maxPos: 1, flags: flags("-d -i -w= --decode --ignore-garbage --wrap= " +
		"--base64 --base64url --base32 --base32hex --base16 --base2msbf --base2lsbf --z85")})
	add("diff", cmdSpec{kind: KindRead, flags: flags("-q -s -c -C= -u -U= -e -n -y -W= -t -T -r -N -x= -X@ -S= -i -E -Z -b -w -B -I= " +
		"-a -p -F= -d -H --brief --report-identical-files --context? --unified? --ed --normal --rcs --side-by-side --width= " +
		"--left-column --suppress-common-lines --show-c-function --show-function-line= --label= --expand-tabs --initial-tab " +
		"--suppress-blank-empty --new-file --unidirectional-new-file --ignore-case --ignore-file-name-case " +
		"--no-ignore-file-name-case --ignore-tab-expansion --ignore-trailing-space --ignore-space-change " +
		"--ignore-all-space --ignore-blank-lines --ignore-matching-lines= --text --strip-trailing-cr --recursive " +
		"--no-dereference --exclude= --exclude-from@ --starting-file= --from-file@ --to-file@ --minimal --horizon-lines= " +
		"--speed-large-files --color? --palette= --tabsize= --line-format= --old-line-format= --new-line-format= " +
		"--unchanged-line-format= --old-group-format= --new-group-format= --changed-group-format= --unchanged-group-format=")})
	add("cmp", cmdSpec{kind: KindRead, maxPos: 4, flags: flags("-b -i= -l -n= -s --print-bytes --ignore-initial= --verbose --bytes= --quiet --silent")})

	// list
	add("ls", cmdSpec{kind: KindList, implied: true, flags: flags("-a -A -b -B -c -C -d -D -f -F -g -G -h -H -i -I= -k -l -L -m -n -N " +
		"-o -p -q -Q -r -R -s -S -t -T= -u -U -v -w= -x -X -Z -1 --all --almost-all --author --escape --block-size= " +
		"--ignore-backups --color? --directory --dired --classify? --file-type --format= --full-time --group-directories-first " +
		"--no-group --human-readable --si --dereference-command-line --dereference-command-line-symlink-to-dir --hide= " +
		"--hyperlink? --indicator-style= --inode --ignore= --kibibytes --dereference --literal --hide-control-chars " +
		"--show-control-chars --quote-name --quoting-style= --reverse --recursive --size --sort= --time= --time-style= " +
		"--tabsize= --width= --context --zero --numeric-uid-gid")})
	// tree gives each value flag of a bundle the next word in turn.
	add("tree", cmdSpec{kind: KindList, implied: true, opts: flagOpts{valuesFollow: true}, flags: flags("-a -d -l -f -x -L= -P= -I= -q -N -Q -p -u -g -s -h -D -F -v -t -c " +
		"-U -r -i -A -S -n -C -J -X --ignore-case --matchdirs --metafirst --prune --info --noreport --charset= --filelimit= " +
		"--timefmt= --si --du --inodes --device --dirsfirst --filesfirst --sort= --nolinks --gitignore --gitfile@ " +
		"--fflinks --hyperlink? --noindent? --version --help")})
	add("du", cmdSpec{kind: KindList, implied: true, flags: flags("-0 -a -b -B= -c -D -d= -H -h -k -L -l -m -P -S -s -t= -x -X@ " +
		"--all --apparent-size --block-size= --bytes --total --dereference-args --max-depth= --human-readable --inodes " +
		"--si --summarize --threshold= --time? --time-style= --exclude= --exclude-from@ --one-file-system --count-links " +
		"--dereference --no-dereference --separate-dirs --null")})
	add("df", cmdSpec{kind: kindNeutral, pos: posNone, flags: flags("-a -B= -h -H -i -k -l -P -t= -T -x= --all --block-size= " +
		"--human-readable --si --inodes --local --output? --portability --print-type --total --type= --exclude-type= --no-sync")})

	// search
	grepFlags := flags("-E -F -G -P -e= -f@ -i -y -v -w -x -c -L -l -m= -o -q -s -b -H -h -n -T -Z -z -a -I -r -R -U " +
		"-A= -B= -C= -D= -d= --extended-regexp --fixed-strings --basic-regexp --perl-regexp --regexp= --file@ --ignore-case " +
		"--no-ignore-case --invert-match --word-regexp --line-regexp --count --color? --colour? --files-without-match " +
		"--files-with-matches --max-count= --only-matching --quiet --silent --no-messages --byte-offset --with-filename " +
		"--no-filename --label= --line-number --initial-tab --null --null-data --text --binary-files= --devices= " +
		"--directories= --exclude= --exclude-from@ --exclude-dir= --include= --recursive --dereference-recursive " +
		"--line-buffered --after-context= --before-context= --context= --binary --no-group-separator --group-separator=")
	add("grep egrep fgrep", cmdSpec{kind: KindSearch, flags: grepFlags, opts: flagOpts{numeric: true}, pos: posPattern,
		patternFlags: []string{"-e", "-f", "--regexp", "--file"},
		check: func(a *analysis, args []string, pa *parsedArgs) {
			if pa.has("-r", "-R", "--recursive", "--dereference-recursive") && len(a.reads) == 0 {
				a.reads = append(a.reads, ".")
			}
		}})
	add("rg", cmdSpec{kind: KindSearch, pos: posPattern, implied: true, opts: flagOpts{numeric: false},
		patternFlags: []string{"-e", "-f", "--regexp", "--file", "--files", "--type-list"},
		flags: flags("-A= -B= -C= -a -b -c -d= -E= -e= -f@ -F -g= -H -h -I -i -j= -L -l -M= -m= -N -n -o -p -q -r= -S -s -t= -T= " +
			"-U -u -uu -uuu -v -V -w -x -0 --after-context= --before-context= --context= --binary --block-buffered --byte-offset " +
			"--case-sensitive --color= --colors= --column --context-separator= --count --count-matches --crlf --debug " +
			"--dfa-size-limit= --encoding= --engine= --field-context-separator= --field-match-separator= --file@ --files " +
			"--files-with-matches --files-without-match --fixed-strings --follow --glob= --glob-case-insensitive --heading " +
			"--hidden --iglob= --ignore-case --ignore-file@ --ignore-file-case-insensitive --include-zero --invert-match " +
			"--json --line-buffered --line-number --line-regexp --max-columns= --max-columns-preview --max-count= " +
			"--max-depth= --max-filesize= --mmap --multiline --multiline-dotall --no-config --no-filename --no-heading " +
			"--no-ignore --no-ignore-dot --no-ignore-exclude --no-ignore-files --no-ignore-global --no-ignore-messages " +
			"--no-ignore-parent --no-ignore-vcs --no-line-number --no-messages --no-mmap --no-pcre2-unicode --no-unicode " +
			"--null --null-data --one-file-system --only-matching --passthru --path-separator= --pcre2 --pcre2-version " +
			"--quiet --regex-size-limit= --regexp= --replace= --search-zip-disabled --smart-case --sort= --sortr= --stats " +
			"--stop-on-nonmatch --text --threads= --trim --type= --type-not= --type-list --unrestricted --vimgrep " +
			"--with-filename --word-regexp --no-require-git --no-hidden --no-follow --no-binary --no-text " +
			"--no-crlf --no-multiline --no-column --no-heading --no-byte-offset --no-ignore-case --no-invert-match " +
			"--no-json --no-stats --no-trim --no-context-separator --no-max-columns-preview --no-sort-files --sort-files " +
			"--hyperlink-format= --line-buffered --version --help")})
	add("fd fdfind", cmdSpec{kind: KindSearch, pos: posPattern, implied: true,
		flags: flags("-H -I -u -s -i -g -F -a -L -p -0 -h -V -d= -t= -e= -E= -S= -c= -j= -o= -1 -q --hidden --no-ignore " +
			"--no-ignore-vcs --no-ignore-parent --unrestricted --case-sensitive --ignore-case --glob --regex --fixed-strings " +
			"--absolute-path --relative-path --follow --full-path --print0 --max-depth= --min-depth= --exact-depth= --prune " +
			"--type= --extension= --exclude= --size= --changed-within= --changed-before= --change-newer-than= " +
			"--change-older-than= --newer= --older= --owner= --color= --threads= --max-results= --quiet --show-errors " +
			"--base-directory@ --path-separator= --search-path@ --strip-cwd-prefix? --one-file-system --format= " +
			"--ignore-file@ --no-require-git --no-follow --no-hidden --help --version")})

	// programs whose first operand is a program text checked by its own code
	add("jq", cmdSpec{kind: KindRead, pos: posPattern,
		flags: flags("-r -j -a -c -n -e -s -S -C -M -R -0 --raw-output --raw-output0 --join-output --ascii-output " +
			"--compact-output --null-input --exit-status --slurp --sort-keys --color-output --monochrome-output --raw-input " +
			"--tab --indent= --arg% --argjson% --seq --stream --stream-errors --unbuffered --version --help"),
		check: checkJq})
	add("awk gawk mawk nawk", cmdSpec{kind: KindRead, pos: posPattern, flags: flags("-F= -v= --field-separator= --assign="),
		check: checkAwk})
	return m
}}

// globOK are the read-only commands none of whose flags, known or not, can
// write a file or run a program: a glob such as "*" that expands to a file
// named like an option ("-rf", "--pre=sh") cannot change what they do
// beyond reading. Other commands ask for such globs.
var globOK = lazy[map[string]bool]{make: func() map[string]bool {
	return map[string]bool{
		"ls": true, "cat": true, "head": true, "tail": true, "wc": true, "grep": true, "egrep": true,
		"fgrep": true, "stat": true, "du": true, "nl": true, "strings": true, "echo": true,
	}
}}

// checkJq refuses jq programs that read the environment or load modules.
func checkJq(a *analysis, args []string, pa *parsedArgs) {
	if len(pa.pos) == 0 {
		return
	}
	prog := args[pa.pos[0]]
	for _, bad := range []string{"env", "$ENV", "input_filename", "import", "include", "modulemeta"} {
		if containsIdent(prog, bad) {
			a.notReadOnly("jq program uses " + bad)
			return
		}
	}
	if bad := validators.JqProgramRisk(prog); bad != "" { // "$ ENV", a comment hiding a '"'
		a.notReadOnly("jq program uses " + bad)
	}
}

// checkAwk refuses awk programs that could run commands, write files or
// read files other than their operands: system(), pipes, output
// redirection, getline, ARGV, the gawk directives and indirect calls
// (@f(): f may name system).
// Comparisons with '>' are refused too: the cost is a prompt.
func checkAwk(a *analysis, args []string, pa *parsedArgs) {
	if len(pa.pos) == 0 {
		a.notReadOnly("awk without a program")
		return
	}
	prog := args[pa.pos[0]]
	if strings.ContainsAny(prog, "|>") {
		a.notReadOnly("awk program may pipe or redirect output")
		return
	}
	// ARGV: the files awk reads are ARGV's elements when the main rules
	// start, so a program that stores into it (ARGV[1]="../secret",
	// split(s, ARGV), f(ARGV)) reads files the path checks never saw;
	// gawk's SYMTAB reaches ARGV and ENVIRON by a computed name.
	for _, bad := range []string{"system", "getline", "close", "fflush", "ENVIRON", "PROCINFO", "ARGV", "SYMTAB",
		"@load", "@include", "@namespace"} {
		if containsIdent(prog, bad) {
			a.notReadOnly("awk program uses " + bad)
			return
		}
	}
	if awkIndirectCall(prog) {
		// gawk's @f() calls the function f names, system among them.
		a.notReadOnly("awk program uses a gawk directive or indirect call (@name)")
	}
}

// containsIdent reports whether s holds word as an identifier (not as part
// of a longer one).
func containsIdent(s, word string) bool { return identIndex(s, word) >= 0 }

// identIndex is the index of the first occurrence of word in s as an
// identifier (not as part of a longer one), or -1.
func identIndex(s, word string) int {
	isID := func(c byte) bool {
		return c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
	}
	for i := 0; ; {
		j := strings.Index(s[i:], word)
		if j < 0 {
			return -1
		}
		j += i
		end := j + len(word)
		before := j == 0 || !isID(s[j-1]) || !isID(word[0])
		after := end == len(s) || !isID(s[end]) || !isID(word[len(word)-1])
		if before && after {
			return j
		}
		i = j + 1
	}
}
