//go:build !darwin

package darwin

// volumeCaseSensitive is the default Options.CaseSensitive elsewhere: a
// profile made on another system (moat policy --seatbelt, the tests) is
// for a Mac, whose volumes are case-insensitive by default.
func volumeCaseSensitive(string) bool { return false }
