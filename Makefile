# moat: build, test and benchmark. `make help` lists the targets.
SHELL := /bin/bash
GO ?= go
BIN := bin
STATIC_TAGS := netgo osusergo
STATIC_LDFLAGS := -linkmode external -extldflags "-static" -s -w
# System packages the build and the tests need (Debian names). strace: the
# behavioural oracle of the permission decisions (permissions/oracle_linux_test.go).
DEB_PACKAGES := gcc libc6-dev pkg-config libseccomp-dev git python3 util-linux iproute2 curl openssh-client strace

.PHONY: help deps build test test-unit test-privileged darwin ci bench clean

help:
	@echo "make build   install what the build needs, build bin/moat (static)"
	@echo "make test    install what the tests need, run vet and the whole test suite as this user, build for macOS"
	@echo "make bench   benchmarks side by side with bubblewrap and the npm sandbox runtime"

# deps installs missing Debian packages (as root, or through sudo).
deps:
	@missing=$$(for p in $(DEB_PACKAGES); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q 'install ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
		echo "installing: $$missing"; \
		SUDO=; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing >/dev/null; \
	fi

build: deps
	@mkdir -p $(BIN)
	CGO_ENABLED=1 $(GO) build -trimpath -tags '$(STATIC_TAGS)' -ldflags '$(STATIC_LDFLAGS)' -o $(BIN)/moat ./cmd/moat

# test runs everything this user can run. CI (.ci/run) runs it as root with
# MOAT_REQUIRE_PRIVILEGED=1, then runs the sandbox suites again as an
# unprivileged user.
test: deps build
	$(GO) vet ./...
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt needed: $$unformatted"; exit 1; fi
	MOAT_BIN=$(CURDIR)/$(BIN)/moat $(GO) test -count=1 -timeout 15m ./...
	@echo "--- the attack suite again, each attack a command of a session sandbox"
	MOAT_VIA=session MOAT_BIN=$(CURDIR)/$(BIN)/moat $(GO) test -count=1 -timeout 10m ./privileged-tests
	$(MAKE) darwin

# darwin and no-cgo builds must keep compiling (checked by make test and CI).
darwin:
	GOOS=darwin $(GO) build ./...
	GOOS=darwin $(GO) vet ./...
	GOOS=darwin $(GO) test -c -o /dev/null ./darwin/
	CGO_ENABLED=0 $(GO) build ./...
	CGO_ENABLED=0 $(GO) vet ./...

bench: build
	bash bench/run.sh

clean:
	rm -rf $(BIN)
