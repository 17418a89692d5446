package darwin

// What a command needs from macOS besides files and the network, kept to
// what git, node, python and Go programs use. Each entry says who needs it;
// anything else is refused by (deny default) and reported.

// machServices are the Mach (XPC) services a command may look up.
// Deliberately absent: com.apple.SecurityServer and com.apple.securityd.xpc
// (the keychain: git-credential-osxkeychain would hand a sandboxed command
// the user's tokens, and Linux denies ~/.git-credentials by default too),
// com.apple.dnssd.service (DNS: names are resolved by moat's proxy),
// LaunchServices (open(1) would start programs outside the sandbox),
// com.apple.cfprefsd.* and the window server.
var machServices = []struct{ name, why string }{
	{"com.apple.system.opendirectoryd.libinfo", "getpwuid, getgrgid: user and group names (git, ssh, python's pwd)"},
	{"com.apple.system.opendirectoryd.membership", "group membership checks"},
	{"com.apple.system.notification_center", "notify(3): libc caches (time zone, directory services)"},
	{"com.apple.system.logger", "syslog(3) and os_log from libSystem"},
	{"com.apple.logd", "os_log from libSystem"},
	{"com.apple.bsd.dirhelper", "confstr(_CS_DARWIN_USER_TEMP_DIR): per-user temporary and cache directories"},
	{"com.apple.trustd.agent", "certificate trust for Security.framework: Go's crypto/x509, Apple's curl and git verify TLS through it"},
	{"com.apple.trustd", "certificate trust, the system daemon (commands run as root)"},
	{"com.apple.FSEvents", "file watching: node's fs.watch, watchdog, dev servers"},
}

// sysctlNames are the sysctl values a command may read by exact name.
// Deliberately absent: kern.proc.all (every process of the host),
// kern.procargs2 (other processes' arguments and environment).
var sysctlNames = []string{
	// CPU and memory shape: runtimes size thread pools and buffers
	"hw.activecpu", "hw.byteorder", "hw.cachelinesize", "hw.cpufamily", "hw.cpufrequency",
	"hw.cpusubtype", "hw.cputype", "hw.l1dcachesize", "hw.l1icachesize", "hw.l2cachesize",
	"hw.l3cachesize", "hw.logicalcpu", "hw.logicalcpu_max", "hw.machine", "hw.memsize",
	"hw.model", "hw.ncpu", "hw.nperflevels", "hw.pagesize", "hw.physicalcpu",
	"hw.physicalcpu_max", "hw.tbfrequency", "hw.vectorunit",
	// the system: uname(3), limits, uptime, host name
	"kern.argmax", "kern.boottime", "kern.hostname", "kern.maxfiles", "kern.maxfilesperproc",
	"kern.maxproc", "kern.ngroups", "kern.osproductversion", "kern.osrelease", "kern.ostype",
	"kern.osvariant_status", "kern.osversion", "kern.secure_kernel", "kern.usrstack64", "kern.version",
	"kern.tcsm_available", "kern.tcsm_enable",
	// code generation and Rosetta checks (V8, Go, OpenSSL)
	"machdep.ptrauth_enabled", "sysctl.proc_cputype", "sysctl.proc_translated",
	"security.mac.lockdown_mode_state",
	// os.loadavg()
	"vm.loadavg",
}

// sysctlPrefixes are read by prefix.
var sysctlPrefixes = []string{
	"hw.optional.",   // CPU features (Go, OpenSSL, V8)
	"hw.perflevel",   // performance and efficiency cores
	"machdep.cpu.",   // CPU brand and features
	"kern.proc.pid.", // one process by pid (ps -p, a shell's own job table)
	"kern.proc.pgrp.",
	"net.routetable.", // getifaddrs(3): node's os.networkInterfaces(), dev servers printing their URL
}

// sysctlWrites may be written: V8 sets it when it starts on Apple silicon.
var sysctlWrites = []string{"kern.tcsm_enable"}

// Devices. /dev is hidden but for these (the host's terminals among the
// rest: reading another terminal of the user would take their keystrokes).
var (
	devRead  = []string{"/dev/null", "/dev/zero", "/dev/random", "/dev/urandom", "/dev/stdin", "/dev/stdout", "/dev/stderr", "/dev/dtracehelper", "/dev/autofs_nowait"}
	devWrite = []string{"/dev/null", "/dev/zero", "/dev/stdout", "/dev/stderr", "/dev/dtracehelper", "/dev/autofs_nowait"}
	devIoctl = []string{"/dev/null", "/dev/zero", "/dev/random", "/dev/urandom", "/dev/dtracehelper"}
	// devFD is the descriptor file system: opening /dev/fd/N duplicates a
	// descriptor the command already holds.
	devFD = "/dev/fd"
)
