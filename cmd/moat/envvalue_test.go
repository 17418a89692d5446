//go:build linux

package main

import (
	"strings"
	"testing"
)

// A credential whose variable's name does not show it (a URL's password,
// Bundler's per-server login) does not reach the command either (attack
// pass 96: PIP_INDEX_URL's token and BUNDLE_GITHUB__COM's did).
func TestRunEnvironmentCredentialValues(t *testing.T) {
	tr := newTree(t)
	env := tr.env("PIP_INDEX_URL=https://__token__:pypi-s3cret@pypi.example/simple", "BUNDLE_GITHUB__COM=x-access-token:s3cret", "GIT_URL=ssh://git@github.com/o/r")
	r := tr.moat(t, "", env, "run", "--settings", tr.settings, "--", "env")
	if strings.Contains(r.stdout, "s3cret") {
		t.Errorf("a credential reached the command:\n%s", r.stdout)
	}
	if !strings.Contains(r.stdout, "GIT_URL=ssh://git@github.com/o/r") {
		t.Errorf("a URL with a user name alone was removed:\n%s", r.stdout)
	}
}

// Credentials in a DSN without a scheme, a key=value pair (a JDBC URL's
// password=, a connection string's Password=, a URL's ?token=), a JSON Web
// Token or an Authorization header do not reach the command either, and
// git's GIT_CONFIG_KEY_<n> does (attack pass 98: all of them reached it,
// and removing GIT_CONFIG_KEY_0 made every git command fail).
func TestRunEnvironmentCredentialForms(t *testing.T) {
	tr := newTree(t)
	env := tr.env(
		"MYSQL_DSN=app:s3cret@tcp(db:3306)/app",
		"JDBC_URL=jdbc:postgresql://db/app?user=app&password=s3cret",
		"ConnectionStrings__Default=Server=db;User Id=sa;Password=s3cret;",
		"WEBHOOK_URL=https://hooks.example/x?token=s3cret",
		"CI_JOB_JWT=eyJhbGciOiJzM2NyZXQifQ.eyJzM2NyZXQiOjF9.s3cret",
		"GIT_CONFIG_COUNT=2", "GIT_CONFIG_KEY_0=user.name", "GIT_CONFIG_VALUE_0=bob-a98",
		"GIT_CONFIG_KEY_1=http.extraHeader", "GIT_CONFIG_VALUE_1=Authorization: Bearer s3cret",
	)
	r := tr.moat(t, "", env, "run", "--settings", tr.settings, "--", "sh", "-c", "env; git config user.name")
	if strings.Contains(r.stdout, "s3cret") {
		t.Errorf("a credential reached the command:\n%s", r.stdout)
	}
	if !strings.Contains(r.stdout, "GIT_CONFIG_KEY_0=user.name") {
		t.Errorf("GIT_CONFIG_KEY_0 was removed:\n%s\n%s", r.stdout, r.stderr)
	}
}

// A password holding ':' in a login without a scheme, names that say
// "password" by a short form (DB_PASS, SSHPASS), Kafka's JAAS
// configuration and a Slack webhook do not reach the command, and a
// LANGUAGE list with a modifier does (attack pass 103: the credentials
// reached the command, LANGUAGE=de:sr@latin:en was removed as a login).
func TestRunEnvironmentCredentialShapes(t *testing.T) {
	tr := newTree(t)
	env := tr.env(
		"LOGIN=user:pa:s3cret@db.example.com",
		"DB_PASS=s3cret", "RABBITMQ_DEFAULT_PASS=s3cret", "SSHPASS=s3cret", "DOCKER_CREDS=u:s3cret",
		`KAFKA_SASL_JAAS_CONFIG=org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="s3cret";`,
		"SLACK_WEBHOOK_URL=https://hooks.slack.com/services/T0000/B0000/s3cretXXXXXXXXXXXXXX",
		"GITHUB_PAT=s3cret0123456789abcdef0123456789abcdef",
		`VSS_NUGET_EXTERNAL_FEED_ENDPOINTS={"endpointCredentials":[{"endpoint":"https://f.example/index.json","password":"s3cret"}]}`,
		"NPM_RC=//registry.npmjs.org/:_authToken=s3cret",
		"LANGUAGE=de:sr@latin:en",
	)
	r := tr.moat(t, "", env, "run", "--settings", tr.settings, "--", "env")
	if strings.Contains(r.stdout, "s3cret") {
		t.Errorf("a credential reached the command:\n%s", r.stdout)
	}
	if !strings.Contains(r.stdout, "LANGUAGE=de:sr@latin:en") {
		t.Errorf("LANGUAGE was removed:\n%s\n%s", r.stdout, r.stderr)
	}
}
