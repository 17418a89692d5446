package policy

import (
	"strings"
	"testing"
)

// Credentials a variable's name does not show: a URL's password and
// Bundler's per-server logins (attack pass 96: both reached the command).
func TestFilterEnvCredentialValues(t *testing.T) {
	env := []string{
		"PIP_INDEX_URL=https://__token__:pypi-AgEIcHlwaS5vcmc@pypi.example/simple",
		"PIP_EXTRA_INDEX_URL=https://pypi.org/simple https://u:p4ss@extra.example/simple",
		"POSTGRES_URL=postgres://app:hunter2@db:5432/app",
		"BUNDLE_GEMS__CONTRIBSYS__COM=user:s3cret",
		"BUNDLE_RUBYGEMS__PKG__GITHUB__COM=x-access-token:ghp_abc",
		// not credentials
		"GIT_REMOTE=ssh://git@github.com/o/r.git",
		"HOMEPAGE=https://example.com/a:b@c",
		"MAILTO=mailto:user@example.com",
		"BUNDLE_PATH=vendor/bundle",
		"BUNDLE_BUILD__NOKOGIRI=--use-system-libraries",
		"BUNDLE_MIRROR__HTTPS://RUBYGEMS__ORG/=https://mirror.example",
		"BUNDLE_GEM__TEST=rspec",
		"GOPROXY=file:///home/u/go/pkg/mod/cache/download,https://proxy.golang.org,direct",
	}
	out, removed := FilterEnv(env, []string{"POSTGRES_URL"}, nil)
	want := "BUNDLE_GEMS__CONTRIBSYS__COM,BUNDLE_RUBYGEMS__PKG__GITHUB__COM,PIP_EXTRA_INDEX_URL,PIP_INDEX_URL"
	if got := strings.Join(removed, ","); got != want {
		t.Errorf("removed %s, want %s", got, want)
	}
	if n := len(out); n != len(env)-4 {
		t.Errorf("kept %d variables, want %d: %q", n, len(env)-4, out)
	}
}

// Credentials in forms the URL check missed (attack pass 98: each reached
// the command through moat run), and ordinary values that must stay.
func TestFilterEnvCredentialForms(t *testing.T) {
	secret := []string{
		"MYSQL_DSN=app:Sup3rS3cret@tcp(db:3306)/app",
		"REDIS_ADDR=default:Sup3rS3cret@redis:6379",
		"ConnectionStrings__Default=Server=db;Database=app;User Id=sa;Password=Sup3rS3cret;",
		"AZURE_STORAGE_CONNECTION_STRING=DefaultEndpointsProtocol=https;AccountName=a;AccountKey=U3VwM3I=;",
		"SERVICEBUS=Endpoint=sb://x.servicebus.windows.net/;SharedAccessKeyName=root;SharedAccessKey=U3Vw",
		"JDBC_URL=jdbc:postgresql://db:5432/app?user=app&password=Sup3rS3cret",
		"MSSQL_JDBC=jdbc:sqlserver://db:1433;databaseName=app;user=sa;password=Sup3rS3cret",
		"WEBHOOK_URL=https://hooks.example.com/x?token=Sup3rS3cret",
		"BLOB_URL=https://a.blob.core.windows.net/c/f?sv=2022-11-02&sig=U3VwM3I%3D",
		"PG_URL_SEMI=postgres://u:pa;ss@h/db",
		"CI_JOB_JWT=eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJl",
		"CONSUL_HTTP_AUTH=admin:Sup3rS3cret",
		"GIT_CONFIG_VALUE_1=AUTHORIZATION: basic eC1hY2Nlc3M=",
		"REMOTE=https://ghp_0123456789abcdefghijABCDEFGHIJ012345@github.com/o/r.git",
		"DEPLOY=-----BEGIN OPENSSH PRIVATE KEY-----\nb3Blbg==\n-----END OPENSSH PRIVATE KEY-----",
		"AWS_ID=AKIAIOSFODNN7EXAMPLE",
	}
	plain := []string{
		"GIT_CONFIG_COUNT=2", "GIT_CONFIG_KEY_0=user.name", "GIT_CONFIG_VALUE_0=bob",
		"GIT_CONFIG_KEY_1=http.extraHeader",
		"GIT_AUTHOR_NAME=bob", "GIT_AUTHOR_EMAIL=bob@example.com",
		"LANGUAGE=de_DE:de:sr@latin", "LC_ALL=de_DE@euro",
		"PATH=/usr/bin:/home/me@corp/bin", "MAILTO=mailto:user@example.com",
		"GIT_REMOTE=git@github.com:o/r.git", "HOMEPAGE=https://example.com/a:b@c",
		"LS_COLORS=rs=0:di=01;34:ln=01;36:*.tar=01;31", "SEARCH=https://example.com/?q=token&page=2",
		"PS1=\\u@\\h:\\w\\$ ", "SSH_CONNECTION=10.0.0.1 5555 10.0.0.2 22",
		"DOCS=https://example.com/?password=", "NODE_OPTIONS=--max-old-space-size=4096",
	}
	checkFilterEnv(t, secret, plain)
}

// Attack pass 103: each of these reached a sandboxed env with the default
// policy; the ordinary values after them (LANGUAGE=de:sr@latin was removed
// as a login) must stay.
func TestFilterEnvCredentialShapes(t *testing.T) {
	secret := []string{
		"LOGIN=user:pa:ss@db.example.com",
		"REDIS_LOGIN=default:a:b:c@redis:6379",
		"DB_PASS=hunter2", "RABBITMQ_DEFAULT_PASS=hunter2", "DB_PWD=hunter2",
		"LDAP_BIND_PW=hunter2", "DOCKER_CREDS=u:hunter2", "SSHPASS=hunter2",
		`KAFKA_SASL_JAAS_CONFIG=org.apache.kafka.common.security.plain.PlainLoginModule required username="alice" password="hunter2";`,
		`SPRING_KAFKA_PROPERTIES_SASL_JAAS_CONFIG=org.apache.kafka.common.security.scram.ScramLoginModule required username=alice password=hunter2;`,
		"SLACK_WEBHOOK_URL=https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX",
		"ALERTS=https://discord.com/api/webhooks/123456789012345678/abcdefghijklmnopqrstuvwxyz0123",
		"AZURE_DEVOPS_EXT_PAT=abcdefghijklmnopqrstuvwxyz234567abcdefghijklmnopqrst",
		"GITHUB_PAT=0123456789abcdef0123456789abcdef01234567",
		`VSS_NUGET_EXTERNAL_FEED_ENDPOINTS={"endpointCredentials":[{"endpoint":"https://pkgs.dev.azure.com/o/_packaging/f/nuget/v3/index.json","username":"u","password":"hunter2"}]}`,
		`GOOGLE_CREDS_JSON={"type":"authorized_user","client_id":"x","client_secret":"hunter2"}`,
		`REGISTRY_JSON={"auths":{"r.example":{"auth":"dTpodW50ZXIy"}}}`,
		"NPM_RC=//registry.npmjs.org/:_authToken=hunter2",
		"LLM_OPTS=--key sk-proj-abcdefghijklmnopqrstuvwxyz0123456789",
		"MAPS=AIzaSyA-abcdefghijklmnopqrstuvwxyz012345",
		"BILLING=sk_live_abcdefghijklmnopqrstuvwx",
	}
	plain := []string{
		"LANGUAGE=de:sr@latin:en", "LANGUAGE_2=sr@latin", "LANG_LIST=en_US.UTF-8:en@quot:C",
		"PWD=/home/u", "OLDPWD=/home/u/src", "BYPASS_CACHE=1", "PASSTHROUGH=1",
		"GIT_REMOTE=git@github.com:o/r.git", "PS1=\\u@\\h:\\w\\$ ",
		"JAVA_TOOL_OPTIONS=-Dhttp.proxyHost=127.0.0.1 -Dhttp.proxyPort=3128",
		"KAFKA_OPTS=-Djava.security.auth.login.config=/etc/kafka/jaas.conf",
		`JAAS_EMPTY=x required username="" password="";`,
		"SLACK_CHANNEL=https://app.slack.com/client/T000/C000",
		"PATH=/usr/local/bin:/usr/bin:/bin", "GIT_CONFIG_KEY_0=user.name",
		`NPM_PKG_JSON={"name":"x","version":"1.0.0","author":"a"}`, `EMPTY_JSON={"token":""}`,
		"KAFKA_BROKERS=SASL_SSL://broker:9092", "PATH_PATTERN=x",
	}
	checkFilterEnv(t, secret, plain)
}

// checkFilterEnv filters secret and plain together: each of secret must be
// removed, each of plain kept.
func checkFilterEnv(t *testing.T, secret, plain []string) {
	t.Helper()
	out, removed := FilterEnv(append(append([]string{}, secret...), plain...), nil, nil)
	gone := map[string]bool{}
	for _, n := range removed {
		gone[n] = true
	}
	for _, kv := range secret {
		if n, _, _ := strings.Cut(kv, "="); !gone[n] {
			t.Errorf("%s reached the command", kv)
		}
	}
	for _, kv := range plain {
		if n, _, _ := strings.Cut(kv, "="); gone[n] {
			t.Errorf("%s was removed", kv)
		}
	}
	if len(out) != len(plain) {
		t.Errorf("kept %d variables, want %d", len(out), len(plain))
	}
}
