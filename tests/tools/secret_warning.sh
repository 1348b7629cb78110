#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# reduce-server says on stderr when it runs without a job secret, and only then.
# usage: secret_warning.sh REDUCE_SERVER
set -euo pipefail
server=$1
work=$(mktemp -d)
pid=""
trap '[[ -n $pid ]] && kill "$pid" 2>/dev/null; rm -rf "$work"' EXIT

# Starts the server with the given flags, waits for its ready file, stops it; its stderr is in
# $work/err.
serve() {
  rm -f "$work/ready"
  env -u LIBREDUCE_SECRET_FILE "$server" --listen 127.0.0.1:0 --ready-file "$work/ready" "$@" \
    >/dev/null 2>"$work/err" &
  pid=$!
  for _ in $(seq 300); do
    [[ -s $work/ready ]] && break
    kill -0 "$pid" 2>/dev/null || { cat "$work/err"; echo "reduce-server exited"; exit 1; }
    sleep 0.1
  done
  [[ -s $work/ready ]] || { echo "reduce-server not ready within 30 s"; exit 1; }
  kill "$pid"
  wait "$pid" || true
  pid=""
}

serve
grep -q "reduce-server: warning: no job secret" "$work/err" ||
  { cat "$work/err"; echo "no warning without a secret"; exit 1; }
head -c 32 /dev/urandom | base64 >"$work/job.secret"
serve --secret-file "$work/job.secret"
if grep -q "no job secret" "$work/err"; then
  cat "$work/err"
  echo "a warning with a secret"
  exit 1
fi
echo "secret warning: shown without a secret, not with one"
