# Skeleton Crew: `make demo` shows the whole story, `make test` proves it.
CARGO ?= cargo
BIN   := $(or $(CARGO_TARGET_DIR),target)/debug
AUDIT ?= logs/audit.jsonl

.PHONY: all build test test-deps demo demo-interactive report lint fmt clean dist

all: build

build:
	$(CARGO) build --locked --bins

test: test-deps
	$(CARGO) test --locked

# What the tests need besides crates: a browser (below), the published MCP server that sc-mcp's
# tests put the gate in front of, pinned in testdata/mcp/package-lock.json, installed when
# node_modules is missing or older than the lock, a real redis-server and bubblewrap (below).
MCP_DEPS := testdata/mcp/node_modules/.package-lock.json
# The Python SDK's venv (below); defined before test-deps, whose prerequisites are read at once.
PY_MCP := testdata/mcp/venv/.installed

# The real coding agents (Claude Code, Codex, Gemini CLI, Copilot CLI) that tests/real_agents.rs
# drives against a scripted model endpoint on loopback, pinned in testdata/agents/package-lock.json,
# installed when node_modules is missing or older than the lock.
AGENT_DEPS := testdata/agents/node_modules/.package-lock.json

test-deps: $(MCP_DEPS) $(PY_MCP) $(AGENT_DEPS) browser-deps redis-server bubblewrap

# The browser the web approval card is tested in (tests/web.rs): Debian's headless Chromium and
# its WebDriver, chromedriver. Installed when chromedriver is missing (CI runs as root).
.PHONY: browser-deps
browser-deps:
	@command -v chromedriver >/dev/null && command -v chromium >/dev/null || \
	  (apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y chromium chromium-driver)

# The shared-state tests (tests/store.rs) run against a real Redis: Debian's redis-server,
# installed when missing. The tests start their own on a free loopback port and stop it; the
# rediss:// test makes its certificates with openssl (Debian's openssl, installed when missing).
.PHONY: redis-server
redis-server:
	@command -v redis-server >/dev/null && command -v openssl >/dev/null || \
	  (apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y redis-server openssl)

# sc-sandbox's tests (tests/sandbox.rs) run programs under the real kernel's sandbox: Debian's
# bubblewrap (bwrap), installed when missing. python3 and bash run inside; curl is used when there.
.PHONY: bubblewrap
bubblewrap:
	@command -v bwrap >/dev/null || \
	  (apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y bubblewrap)

# The Python SDK (the `mcp` package, pinned in testdata/mcp/python-requirements.txt), whose
# client and server tests/mcp_revisions.rs drives in its 2026-07-28 and legacy modes: installed
# into a venv under testdata/mcp when missing or older than the pin (needs python3 >= 3.10).
$(PY_MCP): testdata/mcp/python-requirements.txt
	python3 -m venv testdata/mcp/venv
	testdata/mcp/venv/bin/pip install --quiet --disable-pip-version-check -r testdata/mcp/python-requirements.txt
	touch $@

$(MCP_DEPS): testdata/mcp/package.json testdata/mcp/package-lock.json
	npm ci --prefix testdata/mcp --no-audit --no-fund

$(AGENT_DEPS): testdata/agents/package.json testdata/agents/package-lock.json
	npm ci --prefix testdata/agents --no-audit --no-fund

# The scripted crew: Scout searches (allow), Buyer pays $750 (hold, approved by the scripted
# human in testdata/answers.txt), Helper was injected to pay attacker-wallet (deny). Each call's
# story is told on stderr by sc-exec; the final records go to logs/demo-out.jsonl.
demo: build
	@mkdir -p logs
	@echo "== The crew's calls (testdata/crew.jsonl) ==" >&2
	@cat testdata/crew.jsonl >&2
	@echo "" >&2
	@echo "== sc-gate | sc-approve --answers testdata/answers.txt | sc-exec ==" >&2
	@$(BIN)/sc-gate --quiet --audit $(AUDIT) testdata/crew.jsonl \
	  | $(BIN)/sc-approve --quiet --audit $(AUDIT) --answers testdata/answers.txt \
	  | $(BIN)/sc-exec --audit $(AUDIT) > logs/demo-out.jsonl
	@echo "" >&2
	@echo "== sc-report $(AUDIT) ==" >&2
	@$(BIN)/sc-report $(AUDIT)

# The same crew, but the Buyer's payment is put to you on this terminal: type yes to approve.
demo-interactive: build
	@mkdir -p logs
	@$(BIN)/sc-gate --quiet --audit $(AUDIT) testdata/crew.jsonl \
	  | $(BIN)/sc-approve --quiet --audit $(AUDIT) \
	  | $(BIN)/sc-exec --audit $(AUDIT) > logs/demo-out.jsonl
	@$(BIN)/sc-report $(AUDIT)

# The report on the terminal, and as a page to open in a browser (logs/report.html, beside the
# log; its chains verified).
report: build
	@$(BIN)/sc-report $(AUDIT)
	@$(BIN)/sc-report --format html --verify --output $(dir $(AUDIT))report.html $(AUDIT)
	@echo "the page: $(dir $(AUDIT))report.html" >&2

lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --locked --all-targets -- -D warnings

fmt:
	$(CARGO) fmt --all

clean:
	$(CARGO) clean

# The binaries built with the `dist` profile (one codegen unit, fat LTO: several minutes), and
# man pages and shell completions for each, generated from the clap definitions by the binaries'
# hidden --generate flag (never written by hand), all in target/dist/.
DIST_BINS := sc-gate sc-approve sc-exec sc-report sc-state sc-mcp sc-hook sc-sandbox sc-inbox
DIST := $(or $(CARGO_TARGET_DIR),target)/dist
dist:
	$(CARGO) build --locked --profile dist --bins
	@mkdir -p $(DIST)/man $(DIST)/completions/bash $(DIST)/completions/zsh $(DIST)/completions/fish
	@for bin in $(DIST_BINS); do \
	  $(DIST)/$$bin --generate man > $(DIST)/man/$$bin.1 && \
	  $(DIST)/$$bin --generate bash > $(DIST)/completions/bash/$$bin && \
	  $(DIST)/$$bin --generate zsh > $(DIST)/completions/zsh/_$$bin && \
	  $(DIST)/$$bin --generate fish > $(DIST)/completions/fish/$$bin.fish || exit 1; \
	done
	@echo "binaries, man pages and completions in $(DIST)/" >&2

# Fuzzing, not run in CI: each cargo-fuzz target in fuzz/ runs for FUZZ_SECONDS (default 600,
# ten minutes) in turn, from its committed seeds (fuzz/seeds/TARGET) into a corpus that grows
# across runs (fuzz/corpus/TARGET, git-ignored). `make fuzz FUZZ_SECONDS=60` for a short run;
# `make fuzz FUZZ_TARGETS=policy_load` for one target. cargo-fuzz needs nightly features, which
# RUSTC_BOOTSTRAP=1 unlocks on the stable toolchain; it is installed from the crate registry when
# missing.
# A crash stops the run and leaves the input in fuzz/artifacts/TARGET (see fuzz/README.md).
FUZZ_SECONDS ?= 600
FUZZ_TARGETS ?= parse_evaluate policy_load

.PHONY: fuzz
fuzz:
	@command -v cargo-fuzz >/dev/null || $(CARGO) install --locked cargo-fuzz
	@cd fuzz && for target in $(FUZZ_TARGETS); do \
	  mkdir -p corpus/$$target && \
	  echo "== fuzzing $$target for $(FUZZ_SECONDS) s ==" >&2 && \
	  RUSTC_BOOTSTRAP=1 $(CARGO) fuzz run $$target corpus/$$target seeds/$$target -- \
	    -dict=dict/json.dict -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 || exit 1; \
	done

# Throughput, peak memory and latency of every stage against jq, on generated call streams
# (scripts/bench.sh; BENCH_ROUNDS, BENCH_BIG and BENCH_DIR tune it), then issue 34's figures in
# the same run (scripts/bench-goals.sh): the commit and load average, an sc-hook call against a
# spawn of /bin/true, what sc-sandbox adds to a command's start, sc-gate against the equal-work
# floor (../shared/bench/compare.py), what sc-mcp --listen adds, the size of the nine files, and
# a fresh clone's `cargo install` and `make dist` (BENCH_INSTALL=0 skips those two). The tables
# go to stdout and to target/bench/latest.md.
.PHONY: bench
bench: bubblewrap
	@CARGO="$(CARGO)" scripts/bench.sh
	@{ echo; CARGO="$(CARGO)" scripts/bench-goals.sh; } | tee -a $(or $(CARGO_TARGET_DIR),target)/bench/latest.md

# The functions sc-gate's stream and sc-hook's calls run, which build.rs has the linker put side
# by side (link/hot-text.ld): written again from valgrind's callgrind runs (scripts/hot-text.sh).
.PHONY: hot-text
hot-text:
	@CARGO="$(CARGO)" scripts/hot-text.sh

# Issue 34's figures alone (scripts/bench-goals.sh), without the stages' throughput tables.
.PHONY: bench-goals
bench-goals: bubblewrap
	@CARGO="$(CARGO)" scripts/bench-goals.sh

# What sc-sandbox adds to a command's start: the median of `sc-sandbox -- /bin/true` against
# `/bin/true` (scripts/bench-sandbox.sh; BENCH_SANDBOX_RUNS tunes it).
.PHONY: bench-sandbox
bench-sandbox: bubblewrap
	@CARGO="$(CARGO)" scripts/bench-sandbox.sh
