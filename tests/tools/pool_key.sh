#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# `reducectl pool key` prints the documented job key (checked against an independent computation:
# HMAC-SHA256(pool secret, "libreduce-job-key-v1" | FNV-1a(COMM_ID) as 8 little-endian bytes)),
# writes it to a new private file with --out, and refuses a pool secret others can read.
# usage: pool_key.sh REDUCECTL
set -euo pipefail
reducectl=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(umask 077 && echo "pool-secret-for-the-test" >"$work/pool.secret")

got=$("$reducectl" pool key job42 --secret-file "$work/pool.secret")
want=$(python3 - <<'PY'
import hashlib, hmac, struct
h = 1469598103934665603
for c in b"job42":
    h = ((h ^ c) * 1099511628211) % (1 << 64)
msg = b"libreduce-job-key-v1" + struct.pack("<Q", h or 1)
print(hmac.new(b"pool-secret-for-the-test", msg, hashlib.sha256).hexdigest())
PY
)
[[ $got == "$want" ]] || { echo "key $got, expected $want"; exit 1; }

"$reducectl" pool key job42 --secret-file "$work/pool.secret" --out "$work/job.key"
[[ $(cat "$work/job.key") == "$want" ]] || { echo "--out wrote another key"; exit 1; }
[[ $(stat -c %a "$work/job.key") == 600 ]] || { echo "--out file not private"; exit 1; }
if "$reducectl" pool key job42 --secret-file "$work/pool.secret" --out "$work/job.key" 2>"$work/err"; then
  echo "--out overwrote an existing file"; exit 1
fi
grep -q "must not exist yet" "$work/err" || { cat "$work/err"; exit 1; }

chmod 644 "$work/pool.secret"
if "$reducectl" pool key job42 --secret-file "$work/pool.secret" 2>"$work/err"; then
  echo "a pool secret others can read was used"; exit 1
fi
grep -q "accessible by group or others" "$work/err" || { cat "$work/err"; exit 1; }
echo "pool key: the documented derivation, a private --out file, an open secret refused"
