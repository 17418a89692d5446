// Package term relays a caller's terminal to a sandbox's pty, as docker
// run -t does: the caller's terminal goes raw, bytes flow both ways, the
// window size follows, and the sandboxed command never holds a descriptor
// of the caller's terminal. Whichever of descriptors 0-2 are terminals get
// the pty; when stdin is not one, only the command's output is relayed
// (nothing typed reaches it, and the caller's terminal keeps its modes).
// The runtime relays for a command it runs itself; a moatd client relays
// the pty master moatd hands back, so the daemon never writes to a
// client's terminal.
package term
