# moat: build, test and benchmark. `make help` lists the targets.
SHELL := /bin/bash
GO ?= go
BIN := bin
# make install puts bin/moat in $(PREFIX)/bin ($(DESTDIR) for packaging).
PREFIX ?= /usr/local
STATIC_TAGS := netgo osusergo
STATIC_LDFLAGS := -linkmode external -extldflags "-static" -s -w
# System packages the build and the tests need (Debian names). strace: the
# behavioural oracle of the permission decisions (permissions/oracle_linux_test.go);
# btrfs-progs and e2fsprogs: the btrfs and fscrypt attacks make a filesystem
# of each kind on a loop image (privileged-tests/btrfs_test.go); mercurial,
# fossil, subversion and darcs: the attacks on each run the user's next command
# of that tool (privileged-tests/hg_test.go, vcs_test.go).
DEB_PACKAGES := gcc libc6-dev pkg-config libseccomp-dev git mercurial fossil subversion darcs python3 util-linux iproute2 curl openssh-client strace btrfs-progs e2fsprogs zsh
# What the benchmarks add (bench/): the peer they are measured against and
# the timers. make bench installs them; so does make bench-deps alone (for
# bench/coldstart.sh and the other scripts run by hand).
BENCH_PACKAGES := hyperfine bubblewrap socat time
# What the cgroup v2 machine of make test-vm needs (privileged-tests/vm).
VM_PACKAGES := qemu-system-x86 cpio busybox-static

.PHONY: help deps bench-deps build install test vet test-go test-sessions test-serve test-vm darwin ci bench clean mcp-clients install-daemon

help:
	@echo "make build   install what the build needs, build bin/moat (static)"
	@echo "make install copy bin/moat to $(PREFIX)/bin (as root, or sudo make install; PREFIX=~/.local for your own)"
	@echo "make test    install what the tests need, run vet and the whole test suite as this user, build for macOS"
	@echo "             (its parts, each on its own: make vet, make test-go, make test-sessions, make darwin, make test-vm)"
	@echo "make test-serve  the attack suite handed to moat serve (MOAT_SERVER; spare stage 2s), not part of make test"
	@echo "make bench   benchmarks side by side with bubblewrap and the npm sandbox runtime (installs hyperfine, bwrap: make bench-deps)"
	@echo "make mcp-clients  moat mcp against real MCP clients: the MCP inspector CLI (stdio) and the conformance suite (--http)"
	@echo "make install-daemon  moatd for a laptop's users (as root): bin/moat to /usr/local/bin, group moat, the systemd units (docs/DAEMON.md)"

# deps installs missing Debian packages (as root, or through sudo).
deps:
	@$(MAKE) --no-print-directory install-packages PACKAGES='$(DEB_PACKAGES)'

bench-deps: deps
	@$(MAKE) --no-print-directory install-packages PACKAGES='$(BENCH_PACKAGES)'

install-packages:
	@missing=$$(for p in $(PACKAGES); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q 'install ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
		echo "installing: $$missing"; \
		SUDO=; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing >/dev/null; \
	fi

build: deps
	@mkdir -p $(BIN)
	CGO_ENABLED=1 $(GO) build -trimpath -buildvcs=auto -tags '$(STATIC_TAGS)' -ldflags '$(STATIC_LDFLAGS)' -o $(BIN)/moat ./cmd/moat

# test runs everything this user can run: vet and gofmt, the whole test
# suite, the attack suite through sessions, the macOS and no-cgo builds.
# Each part runs even when an earlier one failed (make -k); make test fails
# at the end if any did. The attack suite through sessions, the macOS and
# no-cgo builds and the VM's suite run side by side, each one's output
# printed whole when it ends (-O): one after the other, the sessions' suite
# and the VM (software emulation, its tests one at a time) each kept about
# one of the two cores busy, for 200 and 250 s. CI (.ci/run) runs the parts one by one as root with
# MOAT_REQUIRE_PRIVILEGED=1, each its own entry in its report, then runs the
# sandbox suites again as an unprivileged user.
test: deps build
	@rc=0; \
	$(MAKE) -k vet test-go || rc=1; \
	$(MAKE) -k -j3 -O test-sessions darwin test-vm || rc=1; \
	exit $$rc

# test-vm: the limit and cgroup attacks on Debian 12's own kernel, in a
# virtual machine whose cgroup2 hierarchy has the controllers (this
# machine kind mounts the v1 ones), as root and as a user with a delegated
# cgroup (privileged-tests/vm/run.sh).
test-vm: build
	@echo "=== make $@: starts $$(date -u +%T)"
	@$(MAKE) --no-print-directory install-packages PACKAGES='$(VM_PACKAGES)'
	bash privileged-tests/vm/run.sh

# vet: go vet and gofmt.
vet:
	@echo "=== make $@: starts $$(date -u +%T)"
	$(GO) vet ./...
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt needed: $$unformatted"; exit 1; fi

# test-go: the whole test suite (needs bin/moat: make build). go test runs
# packages side by side; the tests in ALONE run afterwards, one package at a
# time: each gives a root sandbox a directory every test shares (--write /,
# --write /tmp), and the git audit at the end of that run rightly takes out
# any hook or config another test planted there during it (a test that
# asserts its plant stays then fails). ALONE_N is how many tests it names:
# a renamed test would otherwise drop out of both runs unseen.
ALONE = TestKernelMountsInWritableRoot|TestSessionSnapshotNotWritable
ALONE_PKGS = ./cmd/moat ./privileged-tests
ALONE_N = 2
test-go:
	@echo "=== make $@: starts $$(date -u +%T)"
	@bash privileged-tests/accounts.sh
	@rc=0; set -x; \
	MOAT_BIN=$(CURDIR)/$(BIN)/moat $(GO) test -count=1 -timeout 15m -skip '^($(ALONE))$$' ./... || rc=1; \
	n=$$($(GO) test -list '^($(ALONE))$$' $(ALONE_PKGS) | grep -c '^Test'); \
	if [ "$$n" != "$(ALONE_N)" ]; then echo "make test-go: ALONE names $(ALONE_N) tests, go test -list finds $$n"; rc=1; fi; \
	MOAT_BIN=$(CURDIR)/$(BIN)/moat $(GO) test -count=1 -timeout 10m -p 1 -run '^($(ALONE))$$' $(ALONE_PKGS) || rc=1; \
	exit $$rc

# test-sessions: the attack suite again, each attack a command of a session
# sandbox (needs bin/moat: make build).
test-sessions:
	@echo "=== make $@: starts $$(date -u +%T)"
	MOAT_VIA=session MOAT_BIN=$(CURDIR)/$(BIN)/moat $(GO) test -count=1 -timeout 10m ./privileged-tests

# test-serve: the attack suite again, each attack handed to a moat serve of
# its fixture (MOAT_SERVER), whose runs take a spare stage 2 (needs bin/moat).
# Not part of make test (CI's time): run after a change to moat serve's or
# the spare's path (docs/PERFORMANCE.md says when it last ran).
test-serve:
	@echo "=== make $@: starts $$(date -u +%T)"
	MOAT_VIA=serve MOAT_BIN=$(CURDIR)/$(BIN)/moat $(GO) test -count=1 -timeout 20m ./privileged-tests

# darwin and no-cgo builds must keep compiling (checked by make test and CI).
darwin:
	@echo "=== make $@: starts $$(date -u +%T)"
	GOOS=darwin $(GO) build ./...
	GOOS=darwin $(GO) vet ./...
	GOOS=darwin $(GO) test -c -o /dev/null ./darwin/
	GOOS=darwin $(GO) test -c -o /dev/null ./runtime/
	GOOS=darwin $(GO) test -c -o /dev/null ./cmd/moat/
	CGO_ENABLED=0 $(GO) build ./...
	CGO_ENABLED=0 $(GO) vet ./...

# mcp-clients runs real MCP clients from the npm registry against moat mcp:
# the MCP inspector's CLI over stdio and the official conformance suite's
# server scenarios over --http (expected failures, with their reasons, in
# shell/mcp/testdata/clients/conformance-expected-failures.yml). The pinned
# clients and a Node.js 22 are installed with npm ci into .cache/mcp-clients.
# Not part of make test (it needs the npm registry); CI runs it as a step.
mcp-clients: build
	MOAT_BIN=$(CURDIR)/$(BIN)/moat bash shell/mcp/testdata/clients/run.sh

bench: build bench-deps
	bash bench/run.sh

clean:
	rm -rf $(BIN)

# install copies the built binary; it does not build (sudo's PATH often has
# no go): make build first, as yourself.
install:
	@[ -x $(BIN)/moat ] || { echo "$(BIN)/moat is not built: run make build first"; exit 1; }
	install -d $(DESTDIR)$(PREFIX)/bin
	sh dist/install-binary.sh $(BIN)/moat $(DESTDIR)$(PREFIX)/bin/moat

# moatd (docs/DAEMON.md): the binary, group moat, the systemd units, the
# per-user policy directory. Add users with: usermod -aG moat USER
install-daemon: build
	sh dist/install-binary.sh bin/moat /usr/local/bin/moat
	getent group moat >/dev/null || groupadd --system moat
	install -d -m 0755 /etc/moat /etc/moat/users.d
	install -m 0644 dist/systemd/moatd.service dist/systemd/moatd.socket /etc/systemd/system/
	systemctl daemon-reload
	systemctl enable --now moatd.socket
