#!/bin/sh
# A client for the @modelcontextprotocol/conformance harness, which runs it
# with the mock server's URL as the last argument. It drives `wicket mcp`
# as a person would: a home config naming the URL, `wicket mcp list`, then
# one `wicket mcp call` through the gate (allow_once) for each listed tool,
# with {"a": 1, "b": 2} (what the harness's add_numbers takes).
#   node conformance/dist/index.js client --command "sh tests/mcp/conformance-client.sh" --scenario tools_call
set -eu
for url in "$@"; do :; done
home="$(mktemp -d)"
trap 'rm -rf "$home"' EXIT
printf '[mcp_servers.conformance]\nurl = "%s"\n' "$url" > "$home/config.toml"
export WICKET_HOME="$home"
wicket="${WICKET_BIN:-wicket}"
"$wicket" mcp list --json --workspace "$home" > "$home/list.json" || true
cat "$home/list.json" >&2
node -e '
  const fs = require("fs");
  for (const line of fs.readFileSync(process.argv[1], "utf8").split("\n").filter(Boolean)) {
    for (const tool of JSON.parse(line).tools || []) console.log(tool.tool);
  }' "$home/list.json" | while read -r tool; do
  "$wicket" mcp call conformance "$tool" '{"a": 1, "b": 2}' --answers allow_once --workspace "$home" >&2 || true
done
