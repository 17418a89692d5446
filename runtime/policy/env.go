package policy

import (
	"sort"
	"strings"
)

// credentialWords mark a variable as a credential when its upper-cased name
// contains one of them.
var credentialWords = []string{"KEY", "SECRET", "TOKEN", "PASSWORD", "PASSWD", "CREDENTIAL", "PASSPHRASE", "PRIVATE"}

// CredentialVars are further variables that carry credentials without one
// of those words in their name.
var CredentialVars = []string{
	"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN",
	"GITHUB_TOKEN", "GH_TOKEN", "GITLAB_TOKEN", "GL_TOKEN", "NPM_TOKEN", "NODE_AUTH_TOKEN",
	"DATABASE_URL", "REDIS_URL", "MONGODB_URI", "MONGO_URL", "AMQP_URL", "SENTRY_DSN",
	"DOCKER_AUTH_CONFIG", "NPM_CONFIG__AUTH", "PGPASS", "PGPASSFILE", "MYSQL_PWD",
	"VAULT_ADDR", "KUBECONFIG", "GOOGLE_APPLICATION_CREDENTIALS", "AZURE_CLIENT_SECRET",
	"SSH_AUTH_SOCK", "GPG_AGENT_INFO", "DBUS_SESSION_BUS_ADDRESS", "XAUTHORITY",
}

// notCredentials are names that contain a credential word but are not one.
var notCredentials = map[string]bool{
	"KEYTIMEOUT": true, "XKB_DEFAULT_KEYMAP": true, "KEYMAP": true, "KEYBOARD": true,
	"TOKENIZERS_PARALLELISM": true,
}

// IsCredentialVar reports whether a variable name looks like it carries a
// credential (or a route to one, such as an agent socket).
func IsCredentialVar(name string) bool {
	u := strings.ToUpper(name)
	if notCredentials[u] {
		return false
	}
	for _, c := range CredentialVars {
		if u == c {
			return true
		}
	}
	for _, w := range credentialWords {
		if strings.Contains(u, w) {
			return true
		}
	}
	return strings.HasPrefix(u, "AWS_") && (strings.Contains(u, "ACCESS") || strings.Contains(u, "SESSION"))
}

// IsCredentialValue reports whether a variable's value carries a
// credential whatever its name: a URL with a password in it
// (scheme://user:password@host, as PIP_INDEX_URL, UV_INDEX_URL,
// POSTGRES_URL or a git remote's URL hold a registry's or a database's
// token). A user name alone (ssh://git@host) is not one. Attack pass 96:
// PIP_INDEX_URL=https://__token__:pypi-...@host/simple reached the command.
func IsCredentialValue(v string) bool {
	for {
		i := strings.Index(v, "://")
		if i < 0 {
			return false
		}
		v = v[i+3:]
		auth := v
		if j := strings.IndexAny(auth, "/?# \t\n,;\"'"); j >= 0 {
			auth = auth[:j]
		}
		if at := strings.LastIndexByte(auth, '@'); at > 0 {
			if _, pass, ok := strings.Cut(auth[:at], ":"); ok && pass != "" {
				return true
			}
		}
	}
}

// isBundlerCredential reports whether name is Bundler's credential for a
// gem server (BUNDLE_GEMS__EXAMPLE__COM=user:password: its host with dots
// as "__"), rather than one of its settings that take a "__" too (build,
// local, mirror and gem options).
func isBundlerCredential(name string) bool {
	u := strings.ToUpper(name)
	rest, ok := strings.CutPrefix(u, "BUNDLE_")
	if !ok || !strings.Contains(rest, "__") {
		return false
	}
	for _, p := range []string{"BUILD__", "LOCAL__", "MIRROR__", "GEM__"} {
		if strings.HasPrefix(rest, p) {
			return false
		}
	}
	return true
}

// FilterEnv returns the command's environment: env minus credential
// variables (unless named in allow), by name (IsCredentialVar, Bundler's
// per-server credentials) or by value (IsCredentialValue), minus moat's
// internal variables, with set applied last. removed lists the names it
// dropped, sorted.
func FilterEnv(env []string, allow []string, set map[string]string) (out, removed []string) {
	ok := map[string]bool{}
	for _, a := range allow {
		ok[a] = true
	}
	seen := map[string]int{}
	for _, kv := range env {
		name, value, found := strings.Cut(kv, "=")
		if !found || name == "" || strings.HasPrefix(name, "_MOAT_") {
			continue
		}
		if (IsCredentialVar(name) || isBundlerCredential(name) || IsCredentialValue(value)) && !ok[name] {
			removed = append(removed, name)
			continue
		}
		if i, dup := seen[name]; dup {
			out[i] = kv // the last one wins, as getenv would see
			continue
		}
		seen[name] = len(out)
		out = append(out, kv)
	}
	keys := make([]string, 0, len(set))
	for k := range set {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		kv := k + "=" + set[k]
		if i, dup := seen[k]; dup {
			out[i] = kv
			continue
		}
		seen[k] = len(out)
		out = append(out, kv)
	}
	sort.Strings(removed)
	return out, removed
}
