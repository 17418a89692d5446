package permissions

import "testing"

// Regression tests for attack pass 71 on the decision pipeline. Each row
// failed (was allowed) before the fix named by the test.

// TestLocalePathNotStripped: a locale or time-zone variable whose value
// is a path makes the C library load the file it names: under
// Bash(ls:*), and with no rule at all as a read-only command,
// LANG=C.UTF-8 LANGUAGE=../../../../var/tmp/x ls nonexist was allowed and
// printed ls's messages from a catalogue the agent wrote
// (x/LC_MESSAGES/coreutils.mo) in moat run. Such an assignment is kept, as
// LOCPATH's is, so the line asks.
func TestLocalePathNotStripped(t *testing.T) {
	var rows []arow
	for _, c := range []string{
		"LANG=C.UTF-8 LANGUAGE=../../../../var/tmp/x ls nonexist",
		"LANGUAGE=fr:../../x git status",
		"LC_ALL=/var/tmp/x ls",
		"LC_MESSAGES=/var/tmp/x ls",
		"LANG=/var/tmp/x cat f",
		"TZ=/var/tmp/z ls -l",
		"TZ=:/var/tmp/z ls -l",
		"TZ=../../../var/tmp/z ls -l",
	} {
		rows = append(rows, arow{[]string{"Bash(ls:*)", "Bash(git:*)", "Bash(cat:*)"}, "", c, askV}, arow{nil, "", c, askV})
	}
	for _, c := range []string{
		"LANG=C.UTF-8 LANGUAGE=fr:de ls",
		"LC_ALL=en_US.UTF-8 ls",
		"TZ=Europe/Paris ls -l",
		"TZ=UTC0 ls -l",
	} {
		rows = append(rows, arow{nil, "", c, allow})
	}
	runRows(t, testCwd, Options{}, rows)
}

// TestMoreRunnersSeenByDenyRules: runners the tables lacked, npm's
// abbreviation of explore, pnpm's -c before exec, npm's -c=CMD, entr -s,
// and getopt_long's abbreviation of su's and script's --command hid the
// command from deny rules: under Bash(npm:*) with Bash(rm:*) denied, npm
// explore foo -- rm -f ../../victim.txt was allowed and removed the file
// in moat run, and so did npm exec -c='rm -f victim.txt', script -q
// --comm 'rm -f victim.txt' /dev/null, setarch x86_64 rm -f victim.txt
// and (python-dotenv) dotenv run rm -f victim.txt under their own rules.
// tox's --override sets the commands it runs and makes the line unseen.
func TestMoreRunnersSeenByDenyRules(t *testing.T) {
	d := "deny: Bash(rm:*)"
	var rows []arow
	for _, c := range [][2]string{
		{"Bash(npm:*)", "npm explore foo -- rm -f ../../victim.txt"},
		{"Bash(npm:*)", "npm explor foo -- 'rm x'"},
		{"Bash(npm:*)", "npm exec -c='rm x'"},
		{"Bash(pnpm:*)", "pnpm -c exec 'rm x'"},
		{"Bash(pnpm:*)", "pnpm --shell-mode exec 'rm x'"},
		{"Bash(pnpm:*)", "pnpm exec -c 'rm x'"},
		{"Bash(script:*)", "script -q --comm 'rm x' /dev/null"},
		{"Bash(su:*)", "su --comm 'rm x'"},
		{"Bash(su:*)", "su --c='rm x'"},
		{"Bash(runuser:*)", "runuser -u u --comm 'rm x'"},
		{"Bash(su:*)", "su --session-command 'rm x'"},
		{"Bash(su:*)", "su --session-command='rm x'"},
		{"Bash(runuser:*)", "runuser --session-command 'rm x' u"},
		{"Bash(pnpm:*)", "pnpm --shell-mode=true exec 'rm x'"},
		{"Bash(sops:*)", "sops exec-file f 'rm {}'"},
		{"Bash(nix:*)", "nix develop --command=rm x"},
		{"Bash(entr:*)", "entr -s 'rm x'"},
		{"Bash(entr:*)", "entr -sr 'rm x'"},
		{"Bash(setarch:*)", "setarch x86_64 rm -f victim.txt"},
		{"Bash(setarch:*)", "setarch x86_64 -R rm x"},
		{"Bash(setarch:*)", "setarch -R x86_64 rm x"},
		{"Bash(linux64:*)", "linux64 rm x"},
		{"Bash(dotenv:*)", "dotenv run rm -f victim.txt"},
		{"Bash(dotenv:*)", "dotenv -e .env -- rm x"},
		{"Bash(dotenvx:*)", "dotenvx run -- rm x"},
		{"Bash(pipx:*)", "pipx run rm x"},
		{"Bash(cross-env:*)", "cross-env NODE_ENV=1 rm x"},
		{"Bash(cross-env-shell:*)", "cross-env-shell 'rm x'"},
		{"Bash(env-cmd:*)", "env-cmd -f .env rm x"},
		{"Bash(env-cmd:*)", "env-cmd --use-shell 'rm x'"},
		{"Bash(doppler:*)", "doppler run -- rm x"},
		{"Bash(op:*)", "op run -- rm x"},
		{"Bash(infisical:*)", "infisical run -- rm x"},
		{"Bash(aws-vault:*)", "aws-vault exec prof rm x"},
		{"Bash(chamber:*)", "chamber exec svc -- rm x"},
		{"Bash(sops:*)", "sops exec-env f 'rm x'"},
		{"Bash(scl:*)", "scl enable dts 'rm x'"},
		{"Bash(pyenv:*)", "pyenv exec rm x"},
		{"Bash(rbenv:*)", "rbenv exec rm x"},
		{"Bash(bundle:*)", "bundle exec rm x"},
		{"Bash(volta:*)", "volta run rm x"},
		{"Bash(fnm:*)", "fnm exec --using=20 rm x"},
		{"Bash(stack:*)", "stack exec -- rm x"},
		{"Bash(cabal:*)", "cabal exec -- rm x"},
		{"Bash(opam:*)", "opam exec -- rm x"},
		{"Bash(yarn:*)", "yarn run rm x"},
		{"Bash(bun:*)", "bun run rm x"},
		{"Bash(corepack:*)", "corepack pnpm exec rm x"},
		{"Bash(corepack:*)", "corepack pnpm@9.1.0 exec rm x"},
		{"Bash(just:*)", "just --shell rm build"},
		{"Bash(just:*)", "just -c rm x"},
		{"Bash(just:*)", "just --shell-command --command 'rm x'"},
		{"Bash(just:*)", "just --set v 'rm x' build"},
		{"Bash(tox:*)", "tox exec -e py -- rm x"},
		{"Bash(tox:*)", "tox -e py -- rm x"},
		{"Bash(nox:*)", "nox -s tests -- rm x"},
		{"Bash(gdb:*)", "gdb -batch -ex run --args rm x"},
		{"Bash(faketime:*)", "faketime '2020-01-01' rm x"},
		{"Bash(envdir:*)", "envdir d rm x"},
		{"Bash(chpst:*)", "chpst -u nobody rm x"},
		{"Bash(trickle:*)", "trickle -d 10 rm x"},
		{"Bash(ccache:*)", "ccache rm x"},
		{"Bash(pueue:*)", "pueue add -- 'rm x'"},
		{"Bash(vagrant:*)", "vagrant ssh -c 'rm x'"},
		{"Bash(lxc:*)", "lxc exec c -- rm x"},
		{"Bash(incus:*)", "incus exec c rm x"},
		{"Bash(multipass:*)", "multipass exec vm -- rm x"},
		{"Bash(toolbox:*)", "toolbox run rm x"},
		{"Bash(distrobox:*)", "distrobox enter box -- rm x"},
		{"Bash(systemd-nspawn:*)", "systemd-nspawn -D r rm x"},
		{"Bash(machinectl:*)", "machinectl shell h /bin/rm x"},
	} {
		rows = append(rows, arow{[]string{d, c[0]}, "", c[1], deny})
	}
	rows = append(rows,
		arow{[]string{d, "Bash(tox:*)"}, "", "tox -x 'testenv.commands=rm x'", askV},
		arow{[]string{d, "Bash(tox:*)"}, "", "tox --override=testenv.commands_pre=ls", askV},
		// still allowed: what they run is not denied
		arow{[]string{d, "Bash(npm:*)"}, "", "npm explore foo -- ls", allow},
		arow{[]string{d, "Bash(pnpm:*)"}, "", "pnpm exec -c 'ls'", allow},
		arow{[]string{d, "Bash(pnpm:*)"}, "", "pnpm exec vitest", allow},
		arow{[]string{d, "Bash(entr:*)"}, "", "entr -s 'make test'", allow},
		arow{[]string{d, "Bash(just:*)"}, "", "just build", allow},
		arow{[]string{d, "Bash(tox:*)"}, "", "tox -e py -- -k foo", allow},
		arow{[]string{d, "Bash(corepack:*)"}, "", "corepack enable", allow},
		arow{[]string{d, "Bash(bundle:*)"}, "", "bundle exec rspec", allow},
		arow{[]string{d, "Bash(script:*)"}, "", "script -q out.log", allow},
		arow{[]string{d, "Bash(cross-env:*)"}, "", "cross-env NODE_ENV=1 jest", allow},
		arow{[]string{d, "Bash(pipx:*)"}, "", "pipx run black .", allow},
	)
	runRows(t, testCwd, Options{}, rows)
}
