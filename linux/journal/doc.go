// Package journal records the mount points moat had to create on the host
// (placeholders: a name must exist before something can be mounted over it)
// and removes them when no live run uses them any more.
//
// # Protocol
//
// The journal is a directory (in moat's state directory, which is never
// writable from a sandbox). Each live run owns one record file and holds an
// exclusive flock on it for as long as it, or its sandbox's init, lives: a
// record whose lock can be taken belongs to a dead run. A global lock file
// serialises creation and removal, so that a placeholder two concurrent runs
// share is removed by the last one only (removing a mount point that another
// sandbox still uses would lazily detach that sandbox's protection).
//
// A record lists lines "I <path>" (intent, written before the placeholder is
// created) and "P <dev> <ino> <size> <type> <path>" (created or adopted). A
// placeholder is removed only if it is still the same inode, still empty (or
// still holds exactly the content moat wrote) and no live run lists it.
//
// # What it must not import
//
// linux/nsinit or anything that launches processes.
package journal
