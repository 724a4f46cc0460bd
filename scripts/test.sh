#!/usr/bin/env bash
# The whole test suite: the Rust tests, then the page in headless Chromium.
# Needs Debian's chromium (apt-get install chromium) and Node.js with npm.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo test --workspace --locked
chromium="${CHROMIUM:-/usr/bin/chromium}"
if [ ! -x "$chromium" ]; then
  echo "test.sh: the browser tests need Chromium at $chromium: apt-get install chromium (or set CHROMIUM=/path)" >&2
  exit 1
fi
cargo build --locked -p wicket-cli
# The binary is wherever cargo puts it (CARGO_TARGET_DIR may point elsewhere).
target="$(cargo metadata --format-version 1 --no-deps --locked | sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')"
(cd tests/browser && npm ci --no-audit --no-fund --silent &&
  WICKET_BIN="${WICKET_BIN:-$target/debug/wicket}" CHROMIUM="$chromium" node page.test.mjs)
