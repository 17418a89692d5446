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

// FilterEnv returns the command's environment: env minus credential
// variables (unless named in allow), minus moat's internal variables, with
// set applied last. removed lists the names it dropped, sorted.
func FilterEnv(env []string, allow []string, set map[string]string) (out, removed []string) {
	ok := map[string]bool{}
	for _, a := range allow {
		ok[a] = true
	}
	seen := map[string]int{}
	for _, kv := range env {
		name, _, found := strings.Cut(kv, "=")
		if !found || name == "" || strings.HasPrefix(name, "_MOAT_") {
			continue
		}
		if IsCredentialVar(name) && !ok[name] {
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
