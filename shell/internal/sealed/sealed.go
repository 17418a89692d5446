// Package sealed makes the descriptor a session hands a process its shell
// snapshot on: a file holding given bytes that no process can write, not
// even one that reopens it through /proc/PID/fd (a pipe reopened there is
// writable, and a command of the session appended to a snapshot it could
// reach: found by an attack pass).
package sealed
