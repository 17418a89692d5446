package permissions

import "strings"

// docker's and podman's read-only subcommands (as the seed's read-only
// list): they query the local daemon and print. --format takes a Go
// template whose functions (json, join, split, upper, pad, truncate...)
// neither read files nor run programs. Global options (-H/--host, which may
// be ssh://, --context, --config) make the command not read-only, and so
// does any subcommand or flag not listed here.
var (
	ctrListFlags = flags("-a --all -f= --filter= --format= -n= --last= -l --latest --no-trunc -q --quiet -s --size " +
		"--digests --tree --external --noheading --sort=")
	ctrInspectFlags = flags("-f= --format= -s --size --type=")
	ctrFormatFlags  = flags("-f= --format=")
	ctrLogsFlags    = flags("--details -f --follow --since= -n= --tail= -t --timestamps --until= --names --latest -l --color")
	ctrHistoryFlags = flags("-H --human --format= --no-trunc -q --quiet")
	ctrStatsFlags   = flags("-a --all --format= --no-stream --no-trunc --no-reset -i= --interval=")
	ctrSystemDf     = flags("-v --verbose --format=")
)

// containerSub is a subcommand's flags and display kind.
type containerSub struct {
	flags flagTable
	kind  string
}

// containerSubs maps "sub" or "group sub" to its flags and display kind.
var containerSubs = lazy[map[string]containerSub]{make: func() map[string]containerSub {
	return map[string]containerSub{
		"ps": {ctrListFlags, KindList}, "images": {ctrListFlags, KindList},
		"container ls": {ctrListFlags, KindList}, "container ps": {ctrListFlags, KindList}, "container list": {ctrListFlags, KindList},
		"image ls": {ctrListFlags, KindList}, "image list": {ctrListFlags, KindList},
		"network ls": {ctrListFlags, KindList}, "volume ls": {ctrListFlags, KindList},
		"inspect": {ctrInspectFlags, KindRead}, "container inspect": {ctrInspectFlags, KindRead},
		"image inspect": {ctrInspectFlags, KindRead}, "network inspect": {ctrInspectFlags, KindRead},
		"volume inspect": {ctrInspectFlags, KindRead},
		"version":        {ctrFormatFlags, KindRead}, "info": {ctrFormatFlags, KindRead},
		"logs": {ctrLogsFlags, KindRead}, "container logs": {ctrLogsFlags, KindRead},
		"history": {ctrHistoryFlags, KindRead}, "image history": {ctrHistoryFlags, KindRead},
		"port": {flags(""), KindRead}, "container port": {flags(""), KindRead},
		"stats": {ctrStatsFlags, KindRead}, "container stats": {ctrStatsFlags, KindRead},
		"system df": {ctrSystemDf, KindList},
	}
}}

// analyzeContainer handles docker and podman.
func analyzeContainer(a *analysis, name string, args []string) {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		a.notReadOnly(name + " with global options or no subcommand")
		return
	}
	key, rest := args[0], args[1:]
	if len(rest) > 0 {
		if _, ok := containerSubs.get()[key+" "+rest[0]]; ok {
			key, rest = key+" "+rest[0], rest[1:]
		}
	}
	sub, ok := containerSubs.get()[key]
	if !ok {
		a.notReadOnly(name + " " + key + " is not a read-only " + name + " command")
		return
	}
	a.kind = sub.kind
	if _, bad, ok := parseFlags(rest, sub.flags, flagOpts{}); !ok {
		a.notReadOnly(name + " " + key + ": flag " + quoteWord(bad) + " is not known to be read-only")
	}
}
