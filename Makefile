# PeopleKeeper: one entry point for a fresh machine of this kind (Debian 12, Swift 6.3 at /opt/swift).
#   make deps    install missing system packages (as root, idempotent, quiet)
#   make build   debug build of every target, tests included
#   make test    Swift tests, then the web client's JS tests when there are any
#   make bench   the core benchmark, release build
#   make run     the hub (not built yet: says so and exits 2)
#   make clean   remove build products

export PATH := /opt/swift/usr/bin:$(PATH)

# Debian packages the project needs beyond the preinstalled toolchain. Later issues add theirs here
# (libwebsockets-dev for the transport, ...); `deps` installs whichever are missing.
APT_PACKAGES :=

# `node` runs the web client's tests; Debian's package for it is nodejs.
NODE_PACKAGE := nodejs

JS_TESTS_DIR := Tests/js
# Files node's test runner picks up in a directory (its default name patterns), node_modules excluded.
JS_TEST_FILES = $(shell [ -d $(JS_TESTS_DIR) ] && find $(JS_TESTS_DIR) -type f -not -path '*/node_modules/*' \
	\( -name '*.test.js' -o -name '*.test.mjs' -o -name '*.test.cjs' \
	-o -name '*-test.js' -o -name '*-test.mjs' -o -name '*-test.cjs' \
	-o -name '*_test.js' -o -name '*_test.mjs' -o -name '*_test.cjs' \
	-o -name 'test-*.js' -o -name 'test-*.mjs' -o -name 'test-*.cjs' \
	-o -name 'test.js' -o -name 'test.mjs' -o -name 'test.cjs' \) 2>/dev/null)

.DEFAULT_GOAL := build
.PHONY: deps build test bench run clean

deps:
	@command -v swift >/dev/null 2>&1 || { \
	  echo "deps: swift not found on PATH; this machine should have the Swift 6.3 toolchain at /opt/swift/usr/bin" >&2; \
	  exit 1; }
	@missing=""; \
	for pkg in $(APT_PACKAGES); do \
	  dpkg -s "$$pkg" >/dev/null 2>&1 || missing="$$missing $$pkg"; \
	done; \
	command -v node >/dev/null 2>&1 || missing="$$missing $(NODE_PACKAGE)"; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" -ne 0 ]; then \
	    echo "deps: missing:$$missing; run 'make deps' as root" >&2; exit 1; \
	  fi; \
	  echo "deps: installing$$missing"; \
	  export DEBIAN_FRONTEND=noninteractive; \
	  apt-get update -qq >/dev/null && \
	  apt-get install -y -qq --no-install-recommends $$missing >/dev/null || exit 1; \
	fi

build: deps
	swift build --build-tests

test: deps
	@if [ -z "$(firstword $(JS_TEST_FILES))" ]; then \
	  echo "test: no JS tests under $(JS_TESTS_DIR)/ yet; node --test is skipped"; \
	fi
	swift test --parallel 2>&1
	@if [ -n "$(firstword $(JS_TEST_FILES))" ]; then \
	  echo "node --test $(JS_TESTS_DIR)/"; \
	  node --test $(JS_TESTS_DIR)/; \
	fi

bench: deps
	swift run -c release peoplekeeper-bench core

run: deps build
	@echo 'peoplekeeper-hub arrives with issue 3; `make bench` runs the core benchmark' >&2
	@exit 2

clean:
	rm -rf .build
