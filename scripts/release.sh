#!/usr/bin/env bash
# A release of `wicket` and `wicket-launch` that starts in any Linux task
# image (Alpine, Debian 11, Ubuntu 20.04): static musl binaries, stripped,
# in one tar.gz with both at its root, its sha256 beside it, and the ACP
# registry entry (integrations/acp-registry/agent.json) with the archive's
# address and checksum filled in, for Harbor's `acp` agent.
#
#   scripts/release.sh [URL_BASE]
#
# URL_BASE is where the archive will be published (https://…/v0.1.0);
# without it the entry keeps its placeholder address. Output: dist/.
set -euo pipefail
cd "$(dirname "$0")/.."

target=x86_64-unknown-linux-musl
need() { echo "release.sh: $1" >&2; exit 1; }
rustup target list --installed 2>/dev/null | grep -qx "$target" \
  || rustup target add "$target" >/dev/null 2>&1 \
  || need "the $target target is missing: run 'rustup target add $target'"

# ring builds a little C and assembly: musl's gcc wrapper.
if ! command -v musl-gcc >/dev/null; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq musl-tools >/dev/null
  else
    need "musl-gcc is missing: run 'sudo apt-get install musl-tools'"
  fi
fi
export CC_x86_64_unknown_linux_musl=musl-gcc

version="$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n 1)"
name="wicket-$version-$target"
# Static by default on musl; strip leaves no symbols, panic messages stay.
RUSTFLAGS="${RUSTFLAGS:-} -C strip=symbols" \
  cargo build --locked --release --target "$target" -p wicket-cli --bins
target_dir="$(cargo metadata --format-version 1 --no-deps --locked | sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')"
built="$target_dir/$target/release"
for bin in wicket wicket-launch; do
  if file "$built/$bin" 2>/dev/null | grep -q "dynamically linked"; then
    need "$built/$bin is dynamically linked; a release must be static"
  fi
done

rm -rf dist && mkdir -p dist/stage
cp "$built/wicket" "$built/wicket-launch" dist/stage/
# Both at the archive's root (Harbor unpacks it into its agent folder).
tar -C dist/stage --owner=0 --group=0 --numeric-owner -czf "dist/$name.tar.gz" wicket wicket-launch
rm -rf dist/stage
sum="$(sha256sum "dist/$name.tar.gz" | cut -d' ' -f1)"
echo "$sum  $name.tar.gz" > "dist/$name.tar.gz.sha256"

url_base="${1:-}"
python3 - "$sum" "$name" "$url_base" <<'PY' > dist/agent.json
import json, sys
sum_, name, base = sys.argv[1:]
entry = json.load(open("integrations/acp-registry/agent.json"))
target = entry["distribution"]["binary"]["linux-x86_64"]
if base:
    target["archive"] = f"{base.rstrip('/')}/{name}.tar.gz"
target["checksum"] = f"sha256:{sum_}"
print(json.dumps(entry, indent=2))
PY
ls -l dist
