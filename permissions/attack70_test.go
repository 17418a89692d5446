package permissions

import "testing"

// TestRunnerSpellingsSeenByDenyRules: npm takes an unambiguous
// abbreviation of a command (npm exe is npm exec), pnpm exec -c
// (--shell-mode) and mise exec -c (--command) run a shell string: under
// Bash(npm:*) with Bash(rm:*) denied, npm exe -- rm -f victim.txt was
// allowed by moat check and removed the file (attack pass 70). tmux -C
// (control mode) runs the tmux commands of its input: yes 'run-shell "rm
// -f victim.txt"' | tmux -C new was allowed under Bash(tmux:*) and
// Bash(yes:*) and removed the file.
func TestRunnerSpellingsSeenByDenyRules(t *testing.T) {
	d := "deny: Bash(rm:*)"
	var rows []arow
	for _, c := range [][2]string{
		{"Bash(npm:*)", "npm exe -- rm -f victim.txt"},
		{"Bash(npm:*)", "npm exe rm x"},
		{"Bash(pnpm:*)", "pnpm exec --shell-mode 'rm x'"},
		{"Bash(pnpm:*)", "pnpm exec -c 'rm x'"},
		{"Bash(mise:*)", "mise exec -c 'rm x'"},
		{"Bash(mise:*)", "mise exec --command='rm x'"},
	} {
		rows = append(rows, arow{[]string{d, c[0]}, "", c[1], deny})
	}
	rows = append(rows,
		arow{[]string{d, "Bash(npm:*)"}, "", "npm exe -- ls", allow},
		arow{[]string{d, "Bash(tmux:*)", "Bash(yes:*)"}, "", "yes 'run-shell \"rm -f victim.txt\"' | tmux -C new", askV},
		arow{[]string{d, "Bash(tmux:*)", "Bash(echo:*)"}, "", "echo 'run-shell \"rm x\"' | tmux -uCC attach", askV},
		arow{[]string{d, "Bash(tmux:*)"}, "", "tmux -L s -C new <<< 'run rm'", askV},
		arow{[]string{d, "Bash(tmux:*)"}, "", "tmux -L C new -d ls", allow},
		arow{[]string{d, "Bash(pnpm:*)"}, "", "pnpm exec -c 'ls'", allow},
	)
	runRows(t, testCwd, Options{}, rows)
}
