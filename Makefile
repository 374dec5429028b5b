# The two commands a fresh machine needs (see README.md):
#   make demo   build everything and show the host working on the bundled plugins
#   make test   build everything and run the whole test suite
# Both install what they need themselves, once: the wasm32-wasip2 Rust target,
# and for the Python, JavaScript and C plugins componentize-py (pip),
# componentize-js (npm), clang + lld + wasi-libc (apt-get) and wit-bindgen-cli
# (cargo install). See plugins/build.sh.

CARGO ?= cargo
TOOLHOST := $(or $(CARGO_TARGET_DIR),target)/debug/toolhost

.PHONY: toolchain demo demo-rust demo-others test plugins plugins-rust plugins-others host bench dist

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
	-$(TOOLHOST) --plugins plugins/dist-test call spin_forever --fuel 200000000
	-$(TOOLHOST) --plugins plugins/dist-test call spin_forever --fuel 100000000000 --timeout 500ms
	-$(TOOLHOST) --plugins plugins/dist-test call grow_memory --memory 32MiB
	-$(TOOLHOST) --plugins plugins/dist-test call panics
	$(TOOLHOST) --plugins plugins/dist-test call echo '{"text":"still here"}'
	@echo; echo "== any component is a plugin: a Rust component of plain typed functions (no toolhost SDK)"
	$(TOOLHOST) --plugins plugins/dist-test call get-item '{"sku":"A-1"}'
	-$(TOOLHOST) --plugins plugins/dist-test call get-item '{"sku":"Z-9"}'
	@echo; echo "== a plugin that breaks the contract is refused at load, with the reason"
	-$(TOOLHOST) inspect plugins/dist-broken/list_traps.wasm
	@echo; echo "== grants: a plugin reaches only what plugins/demo.toml grants it"
	$(TOOLHOST) --config plugins/demo.toml call list_dir '{"path":"/data"}'
	$(TOOLHOST) --config plugins/demo.toml call read_file '{"path":"/data/v0.1.0/plugin.wit","max_bytes":120}'
	-$(TOOLHOST) --config plugins/demo.toml call read_file '{"path":"/data/../Cargo.toml"}'
	-$(TOOLHOST) --config plugins/demo.toml call fetch '{"url":"https://example.com/"}'

demo-others: demo-rust plugins-others
	@echo; echo "== tools written in Python, JavaScript and C"
	$(TOOLHOST) call convert_units '{"value":72,"from":"°F","to":"celsius"}'
	$(TOOLHOST) call markdown_table '{"rows":[{"book":"Dune","price":9},{"book":"Emma","price":5.5}]}'
	$(TOOLHOST) call describe_numbers '{"numbers":[2,4,4,4,5,5,7,9],"percentiles":[90]}'
	-$(TOOLHOST) call convert_units '{"value":1,"from":"km","to":"kg"}'
	@echo; echo "== a runaway Python plugin is stopped too"
	-$(TOOLHOST) --plugins plugins/dist-test call py_spin_forever --fuel 200000000
	@echo; echo "== a model uses the tools"
	@bash plugins/demo-model.sh $(TOOLHOST)

# `host` first: the wheel test (tests/all/wheel.rs) packs that build of the
# binary (the tests' own build of it unifies the dev-dependencies' features).
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

# Release artifacts in dist/: a plain tarball (the binary and the README) and
# a Python wheel carrying the same binary (pyproject.toml), for one-line MCP
# installs (`uvx toolhost serve`). maturin is installed pinned, the first time,
# by tests/wheel/setup.sh. Publishing is a separate, manual step: docs/release.md.
VERSION = $(shell sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n 1)
TRIPLE = $(shell rustc -vV | sed -n 's/^host: //p')
MATURIN := tests/wheel/.tools/venv/bin/maturin

dist:
	bash tests/wheel/setup.sh
	$(MATURIN) build --release --locked --out dist
	rm -rf dist/toolhost-$(VERSION)-$(TRIPLE)
	mkdir -p dist/toolhost-$(VERSION)-$(TRIPLE)
	cp $(or $(CARGO_TARGET_DIR),target)/release/toolhost README.md dist/toolhost-$(VERSION)-$(TRIPLE)/
	tar -czf dist/toolhost-$(VERSION)-$(TRIPLE).tar.gz -C dist toolhost-$(VERSION)-$(TRIPLE)
	rm -rf dist/toolhost-$(VERSION)-$(TRIPLE)
	@ls -l dist
