package shell

// snapshotInput names the process's standard input, which holds the
// snapshot (Proc.Stdin): /proc/self is the kernel's, whatever a command
// did to the sandbox's files.
const snapshotInput = "/proc/self/fd/0"
