# The two commands a fresh machine needs (see README.md):
#   make demo   build everything and show the host working on the bundled plugins
#   make test   build everything and run the whole test suite
# Both install what they need themselves, once: the wasm32-wasip2 Rust target,
# and for the Python, JavaScript and C plugins componentize-py (pip),
# componentize-js (npm), clang + lld + wasi-libc (apt-get) and wit-bindgen-cli
# (cargo install). See plugins/build.sh.

CARGO ?= cargo
TOOLHOST := $(or $(CARGO_TARGET_DIR),target)/debug/toolhost

.PHONY: demo test plugins host bench

plugins:
	bash plugins/build.sh

# The dev profile builds wasmtime optimized (see Cargo.toml), so the demo and
# the tests share one build of the host.
host:
	$(CARGO) build -p toolhost

demo: plugins host
	@echo; echo "== the bundled plugins' tools"
	$(TOOLHOST) tools
	@echo; echo "== calling tools, each in a fresh sandbox"
	$(TOOLHOST) call sha256 '{"text":"hello"}'
	$(TOOLHOST) call calculate '{"expression":"2^10 + sqrt(16) * 3"}'
	$(TOOLHOST) call json_query '{"document":{"books":[{"title":"Dune","price":9},{"title":"Emma","price":5}]},"path":".books[*].title"}'
	$(TOOLHOST) call regex_replace '{"text":"2024-01-31","pattern":"(\\d+)-(\\d+)-(\\d+)","replacement":"$$3/$$2/$$1"}'
	@echo; echo "== tools written in Python, JavaScript and C"
	$(TOOLHOST) call convert_units '{"value":72,"from":"°F","to":"celsius"}'
	$(TOOLHOST) call markdown_table '{"rows":[{"book":"Dune","price":9},{"book":"Emma","price":5.5}]}'
	$(TOOLHOST) call describe_numbers '{"numbers":[2,4,4,4,5,5,7,9],"percentiles":[90]}'
	-$(TOOLHOST) call convert_units '{"value":1,"from":"km","to":"kg"}'
	@echo; echo "== a runaway plugin is stopped, and the host carries on"
	-$(TOOLHOST) --plugins plugins/dist-test call spin_forever --fuel 200000000
	-$(TOOLHOST) --plugins plugins/dist-test call spin_forever --fuel 100000000000 --timeout 500ms
	-$(TOOLHOST) --plugins plugins/dist-test call grow_memory --memory 32MiB
	-$(TOOLHOST) --plugins plugins/dist-test call panics
	-$(TOOLHOST) --plugins plugins/dist-test call py_spin_forever --fuel 200000000
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
	@echo; echo "== a model uses the tools"
	@bash plugins/demo-model.sh $(TOOLHOST)

test: plugins
	$(CARGO) test --workspace
	$(CARGO) test --manifest-path plugins/Cargo.toml --workspace --exclude not_a_plugin

bench: plugins
	$(CARGO) bench -p toolhost --bench per_call
	$(CARGO) bench -p toolhost --bench languages
	$(CARGO) bench -p toolhost --bench mcp
	$(CARGO) bench -p toolhost --bench state
	$(CARGO) bench -p toolhost --bench soak
	$(CARGO) bench -p toolhost --bench peer
