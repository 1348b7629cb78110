#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# reduce-server says on stderr when it runs without a job secret, and only then; beyond loopback
# it refuses to run without one unless --insecure (then said on its first stderr line), and it
# refuses a secret file that group or others can read.
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
(umask 077 && head -c 32 /dev/urandom | base64 >"$work/job.secret")
serve --secret-file "$work/job.secret"
if grep -q "no job secret" "$work/err"; then
  cat "$work/err"
  echo "a warning with a secret"
  exit 1
fi
echo "secret warning: shown without a secret, not with one"

# Runs the server expecting it to stop at once with status 2; its stderr is in $work/err.
refused() {
  local rc=0
  env -u LIBREDUCE_SECRET_FILE timeout 30 "$server" --ready-file "$work/ready" "$@" \
    >/dev/null 2>"$work/err" || rc=$?
  [[ $rc == 2 ]] || { cat "$work/err"; echo "expected status 2, got $rc: $*"; exit 1; }
}

# Beyond loopback (a benchmark address: refused before anything binds to it).
refused --listen 198.18.0.1:0
grep -q "refusing to listen on 198.18.0.1:0 without a job secret" "$work/err" ||
  { cat "$work/err"; echo "no refusal beyond loopback"; exit 1; }
# --insecure: said first; it then fails only because nothing here owns 198.18.0.1.
refused --listen 198.18.0.1:0 --insecure
head -1 "$work/err" | grep -q "^reduce-server: INSECURE: no job secret (--insecure)" ||
  { cat "$work/err"; echo "--insecure not said on the first line"; exit 1; }
grep -q "refusing" "$work/err" && { cat "$work/err"; echo "refused despite --insecure"; exit 1; }
# A pool secret is a secret: no warning; with a job secret as well it is refused.
serve --pool-secret-file "$work/job.secret"
if grep -q "no job secret" "$work/err"; then cat "$work/err"; echo "a warning with a pool secret"; exit 1; fi
refused --listen 127.0.0.1:0 --pool-secret-file "$work/job.secret" --secret-file "$work/job.secret"
grep -q "exclude each other" "$work/err" || { cat "$work/err"; echo "both secrets accepted"; exit 1; }
# A secret file others can read.
chmod 644 "$work/job.secret"
refused --listen 127.0.0.1:0 --secret-file "$work/job.secret"
grep -q "is accessible by group or others (mode 0644).*chmod 600" "$work/err" ||
  { cat "$work/err"; echo "a group/other-readable secret file was not refused"; exit 1; }
echo "secret policy: warning on loopback, refusal beyond it and for an open secret file," \
  "--insecure said first"
