//go:build race

package validators

// raceEnabled: the race detector makes every stub start (the test binary
// itself) slow enough that the bash differential tests take minutes.
const raceEnabled = true
