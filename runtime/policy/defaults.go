package policy

import (
	"path/filepath"
	"strings"
)

// SecretPaths are the credential stores that are unreadable by default,
// relative to the home directory. An allowRead entry of the user's own
// settings re-allows one (a project's may not: runtime/settings).
var SecretPaths = []string{
	".ssh",
	".gnupg",
	".aws",
	".azure",
	".config/gcloud",
	".config/gh",
	".config/glab-cli", // GitLab's CLI keeps its tokens in its config (attack pass 96)
	".config/hub",
	".config/op",
	".kube",
	".docker/config.json",
	// podman, buildah and skopeo keep registry logins here when the
	// runtime directory's auth.json (RuntimeSecretPaths) is not there, and
	// helm keeps its OCI registry logins beside it (attack pass 96)
	".config/containers/auth.json",
	".config/helm/registry/config.json",
	".netrc",
	".git-credentials",
	// git's credential store reads this one too, beside ~/.git-credentials
	// ($XDG_CONFIG_HOME/git/credentials; attack pass 96)
	".config/git/credentials",
	".npmrc",
	".yarnrc",
	".pypirc",
	".gem/credentials",
	".cargo/credentials",
	".cargo/credentials.toml",
	".terraform.d/credentials.tfrc.json",
	".vault-token",
	".password-store",
	".local/share/keyrings",
	".pgpass",
	".my.cnf",
	".claude/.credentials.json",
	".config/anthropic",
	".config/openai",
	// further stores of keys and tokens a command read by default
	// (attack pass 96): Composer's registry logins, sops' age private
	// keys, rclone's remotes (cloud keys and tokens), and the browsers'
	// profiles, whose cookies are the user's logged-in sessions and whose
	// saved passwords open offline when no primary password is set
	".config/composer/auth.json",
	".composer/auth.json",
	".config/sops/age",
	".config/rclone/rclone.conf",
	".mozilla",
	".config/google-chrome",
	".config/chromium",
	".thunderbird", // its mail accounts' passwords, as Firefox's
	// the NSS database Chromium and other programs keep client
	// certificates' private keys in; KDE's wallets (as GNOME's keyrings);
	// the X server's cookie ($XAUTHORITY is removed from the environment)
	".pki/nssdb",
	".local/share/kwalletd",
	".Xauthority",
	// histories that are written in place (a token typed on a command
	// line stays in them: node's REPL, redis-cli's AUTH, irb), and fish's,
	// a directory of its own hidden whole (fish saves by rename inside it,
	// which a directory's mask survives); a command read each (attack pass
	// 101). A shell or REPL inside the sandbox finds an empty, read-only
	// one. Not hidden by default: the histories saved by a new file renamed
	// over the old one, bash's (at every exit once the file is full, or
	// always without histappend), zsh's (when it trims), readline's
	// (python, psql, sqlite3, mysql: at every exit) and less's (at every
	// quit): the kernel drops the mask of a file renamed over, so moat ends
	// a running command or session when that happens (latesecrets.go), and
	// closing a terminal or quitting less on the host would end every
	// sandbox the user runs. A user who prefers them hidden adds them to
	// denyRead and accepts that (docs/SECURITY.md).
	".local/share/fish",
	// fish's universal variables (~/.config/fish/fish_variables, where
	// `set -Ux OPENAI_API_KEY ...` keeps a key for every later shell) and
	// its config.fish: the directory whole, as fish saves the variables by
	// rename inside it
	".config/fish",
	".node_repl_history",
	".rediscli_history",
	".irb_history",
	// atuin's history database, and the key its sync encrypts it with
	".local/share/atuin",
	// build tools' files that hold only credentials (attack pass 101):
	// Maven's master password, which decrypts the server passwords of
	// settings.xml, and sbt's and Ivy's repository logins. The settings
	// files beside them (~/.m2/settings.xml, ~/.gradle/gradle.properties,
	// ~/.bundle/config, pip.conf, NuGet.Config) are not hidden: offline
	// builds read their mirrors, local repositories, proxies and JVM
	// options (an empty NuGet.Config is invalid XML, and dotnet restore
	// fails), so a password among them stays readable (docs/SECURITY.md)
	".m2/settings-security.xml",
	".sbt/.credentials",
	".sbt/credentials",
	".ivy2/.credentials",
	// desktop applications' stores (Electron's cookies, local storage and
	// databases): Slack's session cookie and token, Discord's token,
	// Signal's database and the key that opens it (config.json), Element's
	// Matrix session, and the editors' global storage, where Cursor keeps
	// its access token and extensions keep theirs (state.vscdb); a command
	// read each (attack pass 101). No command an agent runs needs them.
	".config/Slack",
	".config/discord",
	".config/Signal",
	".config/Element",
	".config/Code/User/globalStorage",
	".config/Cursor/User/globalStorage",
	// the same editor's other builds, whose stores are the same files
	// under their own names, and Microsoft Teams' clients
	".config/Code - Insiders/User/globalStorage",
	".config/Code - OSS/User/globalStorage",
	".config/VSCodium/User/globalStorage",
	".config/Windsurf/User/globalStorage",
	".config/Microsoft/Microsoft Teams",
	".config/teams-for-linux",
	// further tools' token files a command read (attack pass 101): GitHub
	// Copilot's OAuth token (what editors' plugins and language servers
	// sign in with), Hugging Face's token (the current place and the old
	// one), Kaggle's API key, DigitalOcean's, Fly.io's and Databricks'
	// tokens, s3cmd's keys. Each is the tool's file of credentials alone.
	".config/github-copilot",
	".cache/huggingface/token",
	".huggingface/token",
	".kaggle/kaggle.json",
	".config/doctl/config.yaml",
	".fly/config.yml",
	".databrickscfg",
	".s3cfg",
}

// RuntimeSecretPaths are credential stores relative to the user's runtime
// directory ($XDG_RUNTIME_DIR, /run/user/UID). podman, buildah and skopeo
// write registry logins to containers/auth.json there by default (podman
// login); a command read them (attack pass 96). The runtime directory's
// sockets need no entry: unix sockets are refused unless listed.
var RuntimeSecretPaths = []string{
	"containers/auth.json",
}

// MacSecretPaths are credential stores of macOS, relative to the home
// directory: the macOS enforcer (darwin) denies them too wherever a policy
// denies the default secrets (SecretPaths, by DefaultSecretsSource), so
// that a profile made on any system holds them. A settings allowRead entry
// re-allows one. The keychains' files: with the user's password, which the
// keychain is locked with, a copy opens offline.
var MacSecretPaths = []string{
	"Library/Keychains",
}

// SystemSecretPaths are host files that hold secrets. They are unreadable
// by default too; this matters when moat runs as root, because uid 0 inside
// the sandbox still owns them.
var SystemSecretPaths = []string{
	"/etc/shadow",
	"/etc/gshadow",
	"/etc/shadow-",
	"/etc/gshadow-",
	"/etc/sudoers",
	"/etc/sudoers.d",
	"/etc/ssh/ssh_host_rsa_key",
	"/etc/ssh/ssh_host_ecdsa_key",
	"/etc/ssh/ssh_host_ed25519_key",
	"/etc/ssh/ssh_host_dsa_key",
	"/root/.ssh",
	// the host's service keys and logins, each root's to read: as root a
	// command read the machine's TLS private key (attack pass 96), and the
	// others are the same kind (a cluster's admin credentials, a Kerberos
	// host key, VPN and Wi-Fi keys, a database's maintenance login)
	"/etc/ssl/private",
	"/etc/pki/tls/private",
	"/etc/letsencrypt/archive",
	"/etc/letsencrypt/keys",
	"/etc/krb5.keytab",
	"/etc/wireguard",
	"/etc/NetworkManager/system-connections",
	"/etc/ipsec.secrets",
	"/etc/ppp/chap-secrets",
	"/etc/ppp/pap-secrets",
	"/etc/security/opasswd",
	"/etc/mysql/debian.cnf",
	"/etc/kubernetes/admin.conf",
	"/etc/kubernetes/super-admin.conf",
	"/etc/kubernetes/pki",
	"/etc/rancher/k3s/k3s.yaml",
}

// DefaultSecretsSource is the Source of the default secrets' rules.
const DefaultSecretsSource = "default: secrets"

// DefaultDenyRead returns the default denyRead rules for the home
// directories given (the secrets below each) and the system's.
func DefaultDenyRead(homes ...string) []PathRule {
	return DefaultDenyReadWith(homes, nil)
}

// DefaultDenyReadWith is DefaultDenyRead with the user's runtime
// directories too (RuntimeSecretPaths below each).
func DefaultDenyReadWith(homes, runtimeDirs []string) []PathRule {
	var out []PathRule
	seen := map[string]bool{}
	add := func(p string) {
		if !seen[p] { // (/root/.ssh is both when home is /root)
			seen[p] = true
			out = append(out, PathRule{Path: p, Source: DefaultSecretsSource})
		}
	}
	for _, home := range homes {
		if home == "" || !filepath.IsAbs(home) {
			continue
		}
		for _, p := range SecretPaths {
			add(filepath.Join(home, p))
		}
	}
	for _, dir := range runtimeDirs {
		if dir == "" || !filepath.IsAbs(dir) || filepath.Clean(dir) == "/" {
			continue
		}
		for _, p := range RuntimeSecretPaths {
			add(filepath.Join(dir, p))
		}
	}
	for _, p := range SystemSecretPaths {
		add(p)
	}
	return out
}

// MandatoryFiles are names that are never writable where they exist: at
// the top of every writable root, the working directory, the home directory
// and every git working tree found under the writable paths, and anywhere
// within the search depth. They let a sandboxed command run code outside the
// sandbox later (a shell start-up file, an editor's or agent's settings).
var MandatoryFiles = []string{
	// shell start-up files
	".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".profile",
	".zshrc", ".zshenv", ".zprofile", ".zlogin", ".zlogout",
	".kshrc", ".mkshrc", ".cshrc", ".tcshrc", ".inputrc",
	// git configuration outside .git
	".gitconfig", ".gitmodules",
	// Mercurial's user configuration: its [hooks], [extensions] and
	// [alias] run a program at the user's every hg (attack pass 89)
	".hgrc",
	// a Fossil checkout's database: it names the repository database,
	// whose hooks run at the user's next fossil commit; and fossil's user
	// configuration, whose editor and diff-command it runs (attack pass
	// 93; any name ending in FossilRepoSuffix is protected too)
	".fslckout", "_FOSSIL_", ".fossil",
	// tools that run code or change behaviour from a file in the directory
	".ripgreprc", ".mcp.json", ".envrc", ".exrc", ".nvimrc", ".nvim.lua", ".vimrc",
	// a dev container's file at the top of the project: the spec reads it
	// as it reads .devcontainer/devcontainer.json, initializeCommand
	// running on the host (attack pass 64)
	".devcontainer.json",
	// opencode starts the project's MCP servers (and loads .opencode's
	// plugins) when it starts, with no prompt (attack pass 64)
	"opencode.json", "opencode.jsonc",
	// mise: a .tool-versions needs no trust, and its "path:" versions go
	// first on the PATH of the user's shell at the next prompt (mise
	// activate), so a planted ./bin/git is the user's next git status; a
	// directory the user trusted (mise trust, by path, not by content)
	// runs an edited mise.toml's [env] _.source and hooks at the next
	// prompt, and a mise.local.toml beside it (attack pass 64)
	".tool-versions", "mise.toml", ".mise.toml", "mise.local.toml", ".mise.local.toml",
	// Crush starts the "mcp" and "lsp" commands of a project's crush.json
	// or .crush.json when it starts, and asks no trust (its documentation;
	// its package could not be installed in attack pass 66)
	"crush.json", ".crush.json",
}

// MandatoryDirs are directory names protected the same way: editor and
// agent settings folders.
var MandatoryDirs = []string{
	".vscode", ".idea", ".zed", ".fleet",
	".claude", ".cursor", ".codex", ".gemini", ".windsurf", ".continue", ".clinerules",
	".devcontainer",
	".opencode", // opencode's plugins, tools and config (attack pass 64)
	".mise",     // mise's .mise/config.toml in a trusted directory (attack pass 64)
	// Qwen Code starts .qwen/settings.json's mcpServers with no prompt
	// (qwen -p ran the planted command, no auth set: attack pass 66);
	// Amazon Q's .amazonq/mcp.json, Kiro's .kiro/ (settings/mcp.json,
	// hooks) and Roo's .roo/mcp.json start commands the same way by their
	// documentation (not installable there)
	".qwen", ".amazonq", ".kiro", ".roo",
}

// ReservedNames are the mandatory names moat also protects where they do
// NOT exist yet, at the top of every writable root: a mount needs a mount
// point, so moat creates an empty directory there for the run (a
// placeholder, removed afterwards; git status does not show empty
// directories). Each costs a directory creation on the host, so the list is
// kept to the names that give code execution most directly. HEAD keeps the
// directory from becoming a bare git repository during the run (git takes a
// directory with HEAD, objects/ and refs/ for one).
var ReservedNames = []string{".claude", ".mcp.json", ".vscode", "HEAD"}

// CwdReservedNames are reserved in the working directory, where the seeds'
// tool reserves them too (and HEAD, as for every writable root). The seeds
// also reserve objects, refs, hooks and config there; moat reserves HEAD
// alone, which is enough to keep the directory from being a repository, and
// leaves config/, hooks/, objects/ and refs/ free: they are common project
// folder names.
var CwdReservedNames = []string{
	".gitconfig", ".gitmodules", ".bashrc", ".bash_profile", ".zshrc", ".zprofile",
	".profile", ".ripgreprc", ".mcp.json", ".vscode", ".idea", ".claude", "HEAD",
}

// HomeReservedNames are reserved in the home directory when it is writable.
// .srt-settings.json is the settings file moat reads by default.
var HomeReservedNames = []string{
	".bashrc", ".bash_profile", ".bash_login", ".profile",
	".zshrc", ".zshenv", ".zprofile", ".zlogin", ".gitconfig", ".vimrc",
	".claude", ".mcp.json", ".srt-settings.json",
	// Claude Code's own state: its "mcpServers" (and each project's) are
	// started by every later claude, in any directory, with no prompt; a
	// working directory that is the home (Claude Code's settings make it
	// writable) wrote it (attack pass 64)
	".claude.json",
}

// HomeReservedPaths are deeper paths reserved in the home directory when
// their parent exists and is writable: git's second global config file
// (with attributes and ignore rules) lives in ~/.config/git.
var HomeReservedPaths = []string{".config/git"}

// HomeProtectedPaths are deeper paths below the home that are read-only
// where they exist when the home is writable, and never reserved (a
// placeholder per run would be the plan's cost, issue #12; the audit takes
// out one the run made): version control tools' user configuration, whose
// settings run programs at the user's next ordinary command. Subversion's
// config ([helpers] diff-cmd ran at the user's next svn diff; its servers
// names the proxy and the certificate authorities the user's svn sends
// its passwords through and trusts), Fossil's
// fossil.db (used where there is no ~/.fossil; a global diff-command ran at
// the user's next fossil diff: attack pass 94) and Mercurial's hgrc (hooks,
// extensions: attack pass 89). macOS denies them where they do not exist
// too (its rules need no mount point).
var HomeProtectedPaths = []string{".subversion/config", ".subversion/servers", ".config/fossil.db", ".config/hg/hgrc"}

// XDGProtectedPaths are the same files below an absolute $XDG_CONFIG_HOME,
// where fossil and hg look instead of ~/.config.
var XDGProtectedPaths = []string{"fossil.db", "hg/hgrc"}

// HomeOwn reports whether p (clean, absolute) is one of the home's own
// protected names: a name in the home itself, or one of HomeReservedPaths
// or below it (a command cannot make either: both are read-only or
// reserved in its sandbox, on Linux and macOS).
func HomeOwn(p, home string) bool {
	if home == "" || p == home {
		return false
	}
	var rel string
	switch {
	case home == "/":
		rel = p[1:]
	case len(p) > len(home) && p[len(home)] == '/' && strings.HasPrefix(p, home):
		rel = p[len(home)+1:]
	default:
		return false
	}
	if !strings.Contains(rel, "/") {
		return true
	}
	for _, r := range HomeReservedPaths {
		// No r+"/": the planner asks this of every path it surveys.
		if rel == r || len(rel) > len(r) && rel[len(r)] == '/' && strings.HasPrefix(rel, r) {
			return true
		}
	}
	return false
}

// GitProtected are the entries of a git directory that are never writable:
// hooks run code; config (and config.worktree) can name programs
// (core.fsmonitor, core.hooksPath, filters); modules holds the git
// directories of submodules; commondir redirects git to another directory's
// config and hooks.
var GitProtected = []string{"hooks", "config", "modules", "commondir", "config.worktree", "remotes", "branches"}

// HgProtected are the entries of a Mercurial repository's .hg that are
// never writable where they exist: hg reads hgrc (and, in a share,
// hgrc-not-shared) as the repository's configuration when the user owns
// it, and its [hooks], [extensions], [alias] !commands and [ui]
// editor/merge/pager run programs at the user's next hg status; sharedpath
// (with shared or share-safe in requires) sends hg to another directory
// whose hgrc it reads (attack pass 89). Where one does not exist no
// placeholder reserves it (a directory per repository per run): the audit
// takes out one the run made (gitguard's hgRepo).
var HgProtected = []string{"hgrc", "hgrc-not-shared", "requires", "sharedpath"}

// DarcsProtected are the files of a darcs repository's _darcs that are
// never writable where they exist: prefs/defaults gives every darcs
// command its options, a prehook or posthook command (with run-prehook)
// among them, which the user's next darcs whatsnew ran; prefs/prefs holds
// the test and predist commands (attack pass 93). Where one does not
// exist no placeholder reserves it: the audit takes out one the run made
// (gitguard's darcsRepo).
var DarcsProtected = []string{"prefs/defaults", "prefs/prefs"}

// SvnProtected are the files of a Subversion working copy's .svn that are
// never writable where they exist: wc.db names the repository, and svn
// relocate to a file:// repository the command made (with the working
// copy's UUID, no access to the real one needed) had the user's next svn
// commit run that repository's start-commit hook (attack pass 93); its
// journal and write-ahead log would be rolled into it by the user's next
// svn. Where wc.db does not exist the audit judges the one the run made
// (gitguard's svnWorkingCopy).
var SvnProtected = []string{"wc.db", "wc.db-journal", "wc.db-wal"}

// SvnRepoProtected are the entries of a Subversion repository (a
// directory holding format, db, hooks and locks, as svnadmin create makes
// it) that are never writable where they exist: a commit over file://
// runs hooks/ in the user's own svn, with conf/hooks-env's environment
// (attack pass 93). A repository made during the run is judged by the
// audit (gitguard's svnRepository).
var SvnRepoProtected = []string{"hooks", "conf"}

// FossilRepoSuffix ends the name of a Fossil repository database by
// custom (fossil init x.fossil, fossil clone URL x.fossil) and of fossil's
// user configuration (~/.fossil): a file so named is never writable where
// it exists, found as the mandatory names are. The repository holds its
// hooks (fossil hook add), which run at the user's next fossil commit in
// any checkout of it (attack pass 93).
const FossilRepoSuffix = ".fossil"

// GitWorktreeProtected are the entries of each linked worktree's
// administrative directory (.git/worktrees/NAME) that are never writable:
// commondir and gitdir redirect git, config.worktree is configuration,
// modules holds the git directories of the worktree's own submodules (git
// shares modules/ with no worktree: a fsmonitor put in
// .git/worktrees/NAME/modules/m/config ran on the user's git status in
// that worktree, attack pass 68).
var GitWorktreeProtected = []string{"commondir", "gitdir", "config.worktree", "modules"}

// GitReserved are the GitProtected entries reserved where they do not exist,
// in the git directory of the working directory's repository (config.worktree
// only matters when config enables it, and config is protected).
var GitReserved = []string{"hooks", "config", "modules", "commondir"}
