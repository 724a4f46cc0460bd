#!/usr/bin/env bash
# The whole test suite: the Rust tests (cargo-nextest: each test in its own
# process, one that hangs is killed after 2 minutes and fails; the MCP and
# ACP tests run real npm peers from tests/mcp and tests/acp), then the page
# in headless Chromium.
# Installs what it needs when it can (Debian's chromium as root, the npm
# packages), and otherwise says the one command to run.
set -euo pipefail
cd "$(dirname "$0")/.."

need() { echo "test.sh: $1" >&2; exit 1; }

if ! cargo nextest --version >/dev/null 2>&1; then
  echo "test.sh: installing cargo-nextest" >&2
  cargo install --locked cargo-nextest >/dev/null 2>&1 \
    || need "the tests run under cargo-nextest: cargo install --locked cargo-nextest"
fi
chromium="${CHROMIUM:-/usr/bin/chromium}"
if [ ! -x "$chromium" ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "test.sh: installing Debian's chromium for the browser tests" >&2
    DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  else
    need "the browser tests need Chromium at $chromium: run 'sudo apt-get install chromium' (or set CHROMIUM=/path)"
  fi
fi
if ! command -v curl >/dev/null; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "test.sh: installing curl, the command whose failure the network note is tested on" >&2
    DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq curl >/dev/null
  else
    need "a test runs curl: run 'sudo apt-get install curl'"
  fi
fi
command -v npm >/dev/null || need "the browser and MCP tests need Node.js with npm: run 'sudo apt-get install nodejs npm'"
# The MCP servers and the ACP client the tests run against, at the versions
# their package-lock.json files pin.
(cd tests/mcp && npm ci --no-audit --no-fund --silent)
(cd tests/acp && npm ci --no-audit --no-fund --silent)
# mcp-server-git (a real git MCP server, for the jail's write_git), in a
# venv of its own, at the versions requirements.txt pins.
command -v python3 >/dev/null || need "the MCP tests need Python 3: run 'sudo apt-get install python3 python3-venv'"
if [ ! -x tests/mcp/.venv/bin/mcp-server-git ]; then
  python3 -m venv tests/mcp/.venv
  tests/mcp/.venv/bin/pip install --quiet --disable-pip-version-check -r tests/mcp/requirements.txt
fi

# The official OTLP messages (opentelemetry-proto), for the receiver the
# telemetry tests decode Wicket's exports with.
if [ ! -x tests/telemetry/.venv/bin/python ]; then
  python3 -m venv tests/telemetry/.venv
  tests/telemetry/.venv/bin/pip install --quiet --disable-pip-version-check -r tests/telemetry/requirements.txt
fi
# Harbor (Terminal-Bench's harness) and its ACP runner, for the test that
# runs Wicket the way Harbor does, in a venv of its own (Harbor needs
# Python >= 3.12: the first one found on PATH or under pyenv).
if [ ! -x tests/harbor/.venv/bin/python ]; then
  py=""
  for candidate in python3.13 python3.12 "$HOME"/.pyenv/versions/3.1[2-9]*/bin/python3; do
    if command -v "$candidate" >/dev/null 2>&1 \
      && "$candidate" -c 'import sys; raise SystemExit(sys.version_info < (3, 12))' 2>/dev/null; then
      py="$candidate"; break
    fi
  done
  [ -n "$py" ] || need "the Harbor test needs Python 3.12 or later: install python3.12 (or pyenv install 3.12)"
  "$py" -m venv tests/harbor/.venv
  tests/harbor/.venv/bin/pip install --quiet --disable-pip-version-check -r tests/harbor/requirements.txt
fi

cargo nextest run --workspace --locked --profile ci
cargo build --locked -p wicket-cli
# The binary is wherever cargo puts it (CARGO_TARGET_DIR may point elsewhere).
target="$(cargo metadata --format-version 1 --no-deps --locked | sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')"
(cd tests/browser && npm ci --no-audit --no-fund --silent &&
  WICKET_BIN="${WICKET_BIN:-$target/debug/wicket}" CHROMIUM="$chromium" node page.test.mjs)
