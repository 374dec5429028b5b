# The two commands a fresh machine needs (see README.md):
#   make demo   build everything and show the host working on the bundled plugins
#   make test   build everything and run the whole test suite
# Both install what they need themselves, once: the wasm32-wasip2 Rust target,
# and for the Python, JavaScript and C plugins componentize-py (pip),
# componentize-js (npm), clang + lld + wasi-libc (apt-get) and wit-bindgen-cli
# (cargo install). See plugins/build.sh.

CARGO ?= cargo
TOOLHOST := $(or $(CARGO_TARGET_DIR),target)/debug/toolhost
# The demo's calls that fail on purpose: shown with their error and said to
# be the demonstration, without make's `Error 1 (ignored)` (plugins/demo-fails.sh).
FAILS := bash plugins/demo-fails.sh

.PHONY: toolchain demo demo-rust demo-others test plugins plugins-rust plugins-others host bench dist wheel tarball

plugins:
	bash plugins/build.sh

plugins-rust:
	bash plugins/build.sh rust

plugins-others: plugins-rust
	bash plugins/build.sh others

# The dev profile builds wasmtime and cranelift optimized and the rest of the
# dependencies unoptimized (see Cargo.toml), so the demo and the tests share
# one build of the host that is quick to make.
host: toolchain
	$(CARGO) build -p toolhost

# The Rust toolchain rust-toolchain.toml pins (wasmtime needs a recent one),
# installed once by rustup; a no-op after that.
toolchain:
	@rustup toolchain install >/dev/null

# The demo answers as early as it can: the host and the Rust plugins first
# (one Rust toolchain, already here), then the Python, JavaScript and C
# plugins, whose toolchains are installed the first time.
demo: demo-rust demo-others

demo-rust: host plugins-rust
	@echo; echo "== the Rust plugins' tools (Python, JavaScript and C ones are built next)"
	$(TOOLHOST) tools
	@echo; echo "== calling tools, each in a fresh sandbox"
	$(TOOLHOST) call sha256 '{"text":"hello"}'
	$(TOOLHOST) call calculate '{"expression":"2^10 + sqrt(16) * 3"}'
	$(TOOLHOST) call json_query '{"document":{"books":[{"title":"Dune","price":9},{"title":"Emma","price":5}]},"path":".books[*].title"}'
	$(TOOLHOST) call regex_replace '{"text":"2024-01-31","pattern":"(\\d+)-(\\d+)-(\\d+)","replacement":"$$3/$$2/$$1"}'
	@echo; echo "== a runaway plugin is stopped, and the host carries on"
	@$(FAILS) $(TOOLHOST) --plugins plugins/dist-test call spin_forever --fuel 200000000
	@$(FAILS) $(TOOLHOST) --plugins plugins/dist-test call spin_forever --fuel 100000000000 --timeout 500ms
	@$(FAILS) $(TOOLHOST) --plugins plugins/dist-test call grow_memory --memory 32MiB
	@$(FAILS) $(TOOLHOST) --plugins plugins/dist-test call panics
	$(TOOLHOST) --plugins plugins/dist-test call echo '{"text":"still here"}'
	@echo; echo "== any component is a plugin: a Rust component of plain typed functions (no toolhost SDK)"
	$(TOOLHOST) --plugins plugins/dist-test call get-item '{"sku":"A-1"}'
	@$(FAILS) $(TOOLHOST) --plugins plugins/dist-test call get-item '{"sku":"Z-9"}'
	@echo; echo "== a plugin that breaks the contract is refused at load, with the reason"
	@$(FAILS) $(TOOLHOST) inspect plugins/dist-broken/list_traps.wasm
	@echo; echo "== grants: a plugin reaches only what plugins/demo.toml grants it"
	$(TOOLHOST) --config plugins/demo.toml call list_dir '{"path":"/data"}'
	$(TOOLHOST) --config plugins/demo.toml call read_file '{"path":"/data/v0.1.0/plugin.wit","max_bytes":120}'
	@$(FAILS) $(TOOLHOST) --config plugins/demo.toml call read_file '{"path":"/data/../Cargo.toml"}'
	@$(FAILS) $(TOOLHOST) --config plugins/demo.toml call fetch '{"url":"https://example.com/"}'

demo-others: demo-rust plugins-others
	@echo; echo "== tools written in Python, JavaScript and C"
	$(TOOLHOST) call convert_units '{"value":72,"from":"°F","to":"celsius"}'
	$(TOOLHOST) call markdown_table '{"rows":[{"book":"Dune","price":9},{"book":"Emma","price":5.5}]}'
	$(TOOLHOST) call describe_numbers '{"numbers":[2,4,4,4,5,5,7,9],"percentiles":[90]}'
	@$(FAILS) $(TOOLHOST) call convert_units '{"value":1,"from":"km","to":"kg"}'
	@echo; echo "== a runaway Python plugin is stopped too"
	@$(FAILS) $(TOOLHOST) --plugins plugins/dist-test call py_spin_forever --fuel 200000000
	@echo; echo "== a model uses the tools"
	@bash plugins/demo-model.sh $(TOOLHOST)

# The wheel tests (tests/all/wheel.rs, old_linux.rs) build the wheel's binary
# once more, for glibc 2.17 with zig, as `make dist` does (`make wheel`, in the
# dev profile).
test: plugins host
	$(CARGO) test --workspace
	$(CARGO) test --manifest-path plugins/Cargo.toml --workspace --exclude not_a_plugin

# hot_path first: the floors (a native MCP server, bare wasmtime, Wassette)
# and toolhost interleaved, each ratio beside its target (BENCHMARKS.md).
bench: plugins
	$(CARGO) bench -p toolhost --bench hot_path
	$(CARGO) bench -p toolhost --bench per_call
	$(CARGO) bench -p toolhost --bench languages
	$(CARGO) bench -p toolhost --bench mcp
	$(CARGO) bench -p toolhost --bench state
	$(CARGO) bench -p toolhost --bench soak
	$(CARGO) bench -p toolhost --bench peer

# Release artifacts in dist/, for one Linux architecture (TRIPLE, this
# machine's by default; TRIPLE=aarch64-unknown-linux-gnu cross-builds): a
# Python wheel carrying the `toolhost` binary (pyproject.toml; the distribution
# `toolhost-wasm`, for one-line MCP installs: `uvx --from toolhost-wasm
# toolhost serve`) and a plain tarball of the same binary and the README, each
# twice:
# - for glibc: the binary linked by zig against glibc 2.17 (maturin's `--zig
#   --compatibility manylinux2014`) whatever machine builds it, for any Linux
#   with glibc 2.17 or later (RHEL 7+, Amazon Linux 2, Debian 8+, Ubuntu
#   14.04+); maturin refuses to tag a binary that needs a newer glibc symbol;
# - for musl: a static binary (the `-musl` triple, `--compatibility
#   musllinux_1_2`), which needs no C library at all: Alpine, distroless.
# The wheel test (tests/all/old_linux.rs) builds the glibc wheel through
# `make wheel` too, and runs its binary on Debian 11's glibc. On macOS: one
# wheel for this machine and its tarball. The Rust standard library of each
# target is installed with rustup; maturin and zig are installed pinned, the
# first time, by tests/wheel/setup.sh. Publishing is a separate, manual step:
# docs/release.md.
VERSION = $(shell sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n 1)
TRIPLE ?= $(shell rustc -vV | sed -n 's/^host: //p')
PROFILE ?= release
OUT ?= dist
WHEEL_TOOLS := $(CURDIR)/tests/wheel/.tools/venv/bin
MATURIN := $(WHEEL_TOOLS)/maturin
TARGET_DIR := $(or $(CARGO_TARGET_DIR),target)
PROFILE_DIR = $(if $(filter dev,$(PROFILE)),debug,$(PROFILE))
# maturin's flags for a target triple: the oldest C library it may need.
compat = $(if $(findstring -linux-gnu,$(1)),--zig --compatibility manylinux2014,$(if $(findstring -linux-musl,$(1)),--zig --compatibility musllinux_1_2))
MUSL_TRIPLE = $(if $(findstring -linux-gnu,$(TRIPLE)),$(subst -linux-gnu,-linux-musl,$(TRIPLE)))

dist:
	$(MAKE) --no-print-directory wheel tarball TRIPLE=$(TRIPLE)
ifneq ($(MUSL_TRIPLE),)
	$(MAKE) --no-print-directory wheel tarball TRIPLE=$(MUSL_TRIPLE)
endif
	@ls -l dist

# One wheel of TRIPLE into OUT, in PROFILE (the wheel test: `make wheel
# PROFILE=dev OUT=... MATURIN_ARGS=--offline`).
wheel:
	bash tests/wheel/setup.sh
	rustup -q target add $(TRIPLE)
	PATH="$(WHEEL_TOOLS):$$PATH" $(MATURIN) build --profile $(PROFILE) --locked $(MATURIN_ARGS) $(call compat,$(TRIPLE)) --target $(TRIPLE) --out $(OUT)

# The tarball of the binary `make wheel` built, and what it is (`file`).
tarball:
	rm -rf dist/toolhost-$(VERSION)-$(TRIPLE)
	mkdir -p dist/toolhost-$(VERSION)-$(TRIPLE)
	cp $(TARGET_DIR)/$(TRIPLE)/$(PROFILE_DIR)/toolhost README.md dist/toolhost-$(VERSION)-$(TRIPLE)/
	tar -czf dist/toolhost-$(VERSION)-$(TRIPLE).tar.gz -C dist toolhost-$(VERSION)-$(TRIPLE)
	@file -b dist/toolhost-$(VERSION)-$(TRIPLE)/toolhost 2>/dev/null | sed 's/^/$(TRIPLE): /' || true
	rm -rf dist/toolhost-$(VERSION)-$(TRIPLE)
