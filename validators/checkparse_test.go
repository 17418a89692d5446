package validators

import (
	"reflect"
	"testing"
)

// TestCheckParse: CheckParse is Analyze's parse and decision, on the
// corpus and on commands with nested shells (whose analysis skips the
// views too).
func TestCheckParse(t *testing.T) {
	cmds := append(loadCorpus(t, "testdata/agent_commands.txt"),
		`bash -c 'echo "a b" > /tmp/x'`, `sh -c "ls 'x y'"`, `eval 'git status; ls'`,
		`bash -c 'bash -c "bash -c ls"'`, `echo 'a' "b" $'c' # d`)
	for _, c := range cmds {
		r := Analyze(c)
		pr, d := CheckParse(c)
		if !reflect.DeepEqual(pr, r.Parse) || d != r.Decision {
			t.Errorf("%q: CheckParse = %+v, %+v; Analyze = %+v, %+v", c, pr, d, r.Parse, r.Decision)
		}
	}
}
