// Package term relays a caller's terminal to a sandbox's pty, as docker
// run -t does: the caller's terminal goes raw, bytes flow both ways, the
// window size follows, and the sandboxed command never holds a descriptor
// of the caller's terminal. The runtime relays for a command it runs
// itself; a moatd client relays the pty master moatd hands back, so the
// daemon never writes to a client's terminal.
package term
