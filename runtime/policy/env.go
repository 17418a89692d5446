package policy

import (
	"regexp"
	"sort"
	"strings"
	"sync"
)

// credentialWords mark a variable as a credential when its upper-cased name
// contains one of them.
var credentialWords = []string{"KEY", "SECRET", "TOKEN", "PASSWORD", "PASSWD", "CREDENTIAL", "PASSPHRASE", "PRIVATE", "JWT"}

// CredentialVars are further variables that carry credentials without one
// of those words in their name.
var CredentialVars = []string{
	"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN",
	"GITHUB_TOKEN", "GH_TOKEN", "GITLAB_TOKEN", "GL_TOKEN", "NPM_TOKEN", "NODE_AUTH_TOKEN",
	"DATABASE_URL", "REDIS_URL", "MONGODB_URI", "MONGO_URL", "AMQP_URL", "SENTRY_DSN",
	"DOCKER_AUTH_CONFIG", "NPM_CONFIG__AUTH", "PGPASS", "PGPASSFILE", "MYSQL_PWD",
	"VAULT_ADDR", "KUBECONFIG", "GOOGLE_APPLICATION_CREDENTIALS", "AZURE_CLIENT_SECRET",
	"SSH_AUTH_SOCK", "GPG_AGENT_INFO", "DBUS_SESSION_BUS_ADDRESS", "XAUTHORITY",
	"CONSUL_HTTP_AUTH",
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
	if notCredentials[u] || isGitConfigKey(u) {
		return false
	}
	// A name ending in _AUTH holds a login (CONSUL_HTTP_AUTH=user:pass,
	// NPM_CONFIG__AUTH); AUTH alone is no credential word, as
	// GIT_AUTHOR_NAME shows.
	if strings.HasSuffix(u, "_AUTH") {
		return true
	}
	// Short forms of "password" and "credentials" no credential word
	// covers (attack pass 103: DB_PASS, RABBITMQ_DEFAULT_PASS, DB_PWD,
	// LDAP_BIND_PW, DOCKER_CREDS, GOOGLE_CREDS_JSON and sshpass's SSHPASS reached the
	// command). Only as the name's last part: PWD and OLDPWD, the working
	// directories, have no "_", and PASS inside a word (PASSTHROUGH,
	// BYPASS_CACHE) is no password.
	// A personal access token under _PAT (GITHUB_PAT, which R's usethis
	// and remotes read; AZURE_DEVOPS_EXT_PAT, the az devops CLI's) reached
	// the command too when its value had no known form.
	for _, s := range []string{"_PASS", "_PWD", "_PW", "_PAT"} {
		if strings.HasSuffix(u, s) {
			return true
		}
	}
	if u == "SSHPASS" || strings.Contains(u, "CREDS") {
		return true
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
// token), a login without a scheme (Go's MySQL DSN,
// user:password@tcp(host)/db), a password or token given as a key=value
// pair (a URL's ?token=, JDBC's password=, an ADO.NET or Azure connection
// string's Password=, AccountKey=, SharedAccessKey=), an HTTP
// Authorization header, a JSON Web Token, or a token of a well-known form
// (ghp_..., glpat-..., AKIA..., a PEM private key) wherever it stands, a
// URL's user name among them. A user name alone (ssh://git@host) is not
// one. Attack pass 96: PIP_INDEX_URL=https://__token__:pypi-...@host/simple
// reached the command; attack pass 98: MYSQL_DSN, JDBC_URL,
// ConnectionStrings__Default, a webhook's ?token= and CI_JOB_JWT did.
func IsCredentialValue(v string) bool {
	return urlPassword(v) || schemelessLogin(v) || credentialPair(v) ||
		jsonCredential(v) || credentialForm().MatchString(v)
}

// urlPassword reports a scheme://user:password@host anywhere in v. The
// user information ends at the first /, ? or # (RFC 3986): ; and , may
// stand in a password (postgres://u:pa;ss@h was missed when they ended it).
func urlPassword(v string) bool {
	for {
		i := strings.Index(v, "://")
		if i < 0 {
			return false
		}
		v = v[i+3:]
		auth := v
		if j := strings.IndexAny(auth, "/?# \t\n\"'"); j >= 0 {
			auth = auth[:j]
		}
		if at := strings.LastIndexByte(auth, '@'); at > 0 {
			if _, pass, ok := strings.Cut(auth[:at], ":"); ok && pass != "" {
				return true
			}
		}
	}
}

// schemelessLogin reports a value that starts user:password@host with no
// scheme, as Go's MySQL driver takes its DSN (user:password@tcp(h:3306)/db)
// and redis-cli, rsync or a *_DSN often do. The user and the password
// have no / (a PATH-like list, a URL's path is not one); a password may
// hold : (user:pa:ss@host, attack pass 103: it reached the command when a
// : in the password meant "a colon list"). The colon list that does carry
// an @ is gettext's LANGUAGE of locale names (de:sr@latin, which was
// removed as a login): a value made only of locale names is not one.
// mailto:, sip: and the other URIs without // are addresses, not logins.
func schemelessLogin(v string) bool {
	at := strings.IndexByte(v, '@')
	if at <= 0 || strings.ContainsAny(v[:at], "/ \t\n") {
		return false
	}
	user, pass, ok := strings.Cut(v[:at], ":")
	if !ok || user == "" || pass == "" {
		return false
	}
	switch strings.ToLower(user) {
	case "mailto", "sip", "sips", "xmpp", "tel", "im", "news", "urn":
		return false
	}
	host := v[at+1:]
	if host == "" {
		return false
	}
	if p := strings.IndexByte(host, '('); p > 0 && !strings.ContainsAny(host[:p], ".:/") {
		return true // MySQL: protocol(address)
	}
	return !localeList(v)
}

// localeName matches one locale name of a LANGUAGE list: language,
// territory, codeset and one of glibc's modifiers (sr@latin, de_DE@euro,
// en@quot), or C and POSIX. The modifiers are listed so that a login's
// host (bob:pw@db) is not taken for one.
var localeName = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^([a-z]{2,3}(_[A-Z]{2})?(\.[A-Za-z0-9-]+)?` +
		`(@(latin|cyrillic|euro|valencia|quot|boldquot|devanagari|saaho|iqtelif|abegede|hebrew|latn|cyrl|traditional))?|C|POSIX)(\.[A-Za-z0-9-]+)?$`)
})

// localeList reports whether v is a colon list of locale names only.
func localeList(v string) bool {
	for _, f := range strings.Split(v, ":") {
		if !localeName().MatchString(f) {
			return false
		}
	}
	return true
}

// credentialKeys are the keys (lower-cased, without spaces, - and _) that
// name a secret in a URL's query, a JDBC URL's properties or a connection
// string: ?token=, password=, PWD=, AccountKey=, SharedAccessKey=, sig= (an
// Azure shared access signature), X-Amz-Signature=.
var credentialKeys = map[string]bool{
	"password": true, "passwd": true, "pwd": true, "token": true, "accesstoken": true,
	"authtoken": true, "refreshtoken": true, "idtoken": true, "apikey": true,
	"secret": true, "clientsecret": true, "accountkey": true, "sharedaccesskey": true,
	"sig": true, "xamzsignature": true, "xamzsecuritytoken": true, "privatekey": true,
	"passphrase": true,
}

// credentialPair reports a key=value pair in v, separated by ?, & or ;,
// whose key names a secret and whose value is not empty. A key's spaces
// are dropped (ADO.NET's "User Id=sa;Password=x"). A pair standing after
// a space counts too, its value in quotes or not: Kafka's JAAS
// configuration (sasl.jaas.config, KAFKA_SASL_JAAS_CONFIG="...LoginModule
// required username=\"u\" password=\"p\";") reached the command, attack
// pass 103.
func credentialPair(v string) bool {
	for _, part := range strings.FieldsFunc(v, func(r rune) bool {
		return r == '?' || r == '&' || r == ';' || r == '\n'
	}) {
		if pairNamesSecret(part) {
			return true
		}
		for _, word := range strings.Fields(part) {
			if pairNamesSecret(word) {
				return true
			}
		}
	}
	return false
}

// pairNamesSecret reports a key=value whose key names a secret and whose
// value, without its quotes, is not empty.
func pairNamesSecret(part string) bool {
	key, val, ok := strings.Cut(part, "=")
	if !ok || strings.Trim(val, `"' `) == "" {
		return false
	}
	// npm's per-registry keys (//registry.npmjs.org/:_authToken=...)
	// name the secret after the last ':'.
	if i := strings.LastIndexByte(key, ':'); i >= 0 {
		key = key[i+1:]
	}
	key = strings.NewReplacer("-", "", "_", "", " ", "").Replace(strings.ToLower(key))
	return credentialKeys[key]
}

// jsonSecret matches a JSON member whose key names a secret and whose
// string value is not empty: VSS_NUGET_EXTERNAL_FEED_ENDPOINTS's
// "password", an OAuth client's "client_secret" and "refresh_token", a
// Docker config's "auth" (attack pass 103: each reached the command).
var jsonSecret = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`"([A-Za-z_ -]+)"\s*:\s*"[^"]`)
})

// jsonCredential reports a JSON member of jsonSecret's form in v.
func jsonCredential(v string) bool {
	if !strings.Contains(v, "\":") && !strings.Contains(v, "\" :") {
		return false
	}
	for _, m := range jsonSecret().FindAllStringSubmatch(v, -1) {
		key := strings.NewReplacer("-", "", "_", "", " ", "").Replace(strings.ToLower(m[1]))
		if credentialKeys[key] || key == "auth" {
			return true
		}
	}
	return false
}

// credentialForm matches secrets by their own form: an HTTP Authorization
// header (a git http.extraHeader in GIT_CONFIG_VALUE_0), a JSON Web Token,
// GitHub's, GitLab's, Slack's, AWS's, PyPI's, npm's and Anthropic's tokens
// (a URL's user name too: https://ghp_...@github.com) and a PEM private key.
var credentialForm = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i:authorization:\s*\S)|` +
		`(?i:^(bearer|basic)\s+[A-Za-z0-9._~+/=-]{8,}$)|` +
		`(^|[^A-Za-z0-9_-])(` +
		`eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]*\.[A-Za-z0-9_-]*|` +
		`gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,}|glpat-[A-Za-z0-9_-]{20,}|` +
		`xox[abposr]-[A-Za-z0-9-]{10,}|(AKIA|ASIA)[0-9A-Z]{16}|pypi-AgE[A-Za-z0-9_-]{20,}|` +
		`npm_[A-Za-z0-9]{36}|sk-ant-[A-Za-z0-9_-]{20,}|` +
		// OpenAI's project keys, Google's API keys, Stripe's live keys.
		`sk-proj-[A-Za-z0-9_-]{20,}|AIza[0-9A-Za-z_-]{35}|[sr]k_live_[0-9A-Za-z]{20,}|` +
		// A Slack or Discord webhook's URL is its own credential: whoever
		// holds it posts to the channel (SLACK_WEBHOOK_URL reached the
		// command, attack pass 103).
		`hooks\.slack\.com/(services|workflows|triggers)/[A-Za-z0-9/_-]{10,}|` +
		`discord(app)?\.com/api/webhooks/[0-9]+/[A-Za-z0-9_-]{20,})|` +
		`-----BEGIN [A-Z ]*PRIVATE KEY-----`)
})

// isGitConfigKey reports git's GIT_CONFIG_KEY_<n>: its value is the name
// of a setting (user.name), not a credential; removing it while
// GIT_CONFIG_COUNT and GIT_CONFIG_VALUE_<n> stay made every git command
// fail ("missing config key GIT_CONFIG_KEY_0", attack pass 98). The value
// it sets is judged by value like any other.
func isGitConfigKey(u string) bool {
	n, ok := strings.CutPrefix(u, "GIT_CONFIG_KEY_")
	if !ok || n == "" {
		return false
	}
	for _, c := range n {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
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
