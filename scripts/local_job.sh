#!/usr/bin/env bash
# Runs a libreduce job on this machine: M reducers (reduce-server) and N workers (PROGRAM), wired
# together through the environment rdCommInitFromEnv reads, with a fresh job secret.
#
#   scripts/local_job.sh [--workers N] [--reducers M] [--algo rs|ring] [--build-dir DIR]
#                        [--timeout SEC] [--] PROGRAM [ARGS...]
#
# Defaults: 4 workers, 2 reducers, rs, build/ of this checkout, 300 s. Rank 0's standard output
# is shown as it comes; every rank's standard error is shown with a "[rank R]" prefix. Each
# process's full output goes to a log in a temporary directory, which is kept (and named) when
# something fails. Exit status 0 only when every worker exited 0.
set -euo pipefail

script_dir=$(cd "$(dirname "$0")" && pwd)

workers=4
reducers=2
algo=rs
build_dir="$script_dir/../build"
timeout_s=300
readonly ready_timeout_s=20  # a reducer that is not listening by then will not be
readonly grace_s=15          # after a worker fails, how long the others get to report
readonly stop_timeout_s=10   # how long a process gets to exit after SIGTERM

workdir=""
keep_workdir=0
reducer_pids=()
worker_pids=()
filter_pids=()
declare -A exit_code=()  # pid -> exit status of every child reaped
events_fd=""

usage() {
  cat >&2 <<'EOF'
usage: scripts/local_job.sh [--workers N] [--reducers M] [--algo rs|ring] [--build-dir DIR]
                            [--timeout SEC] [--] PROGRAM [ARGS...]
EOF
  exit 2
}

die() {
  echo "local_job: $*" >&2
  exit 2
}

is_count() {  # is_count VALUE MIN MAX: a whole number in [MIN, MAX]
  [[ $1 =~ ^[0-9]+$ ]] && (($1 >= $2 && $1 <= $3))
}

parse_args() {
  while (($#)); do
    case "$1" in
      --workers) workers=${2:?--workers needs a value}; shift 2 ;;
      --reducers) reducers=${2:?--reducers needs a value}; shift 2 ;;
      --algo) algo=${2:?--algo needs a value}; shift 2 ;;
      --build-dir) build_dir=${2:?--build-dir needs a value}; shift 2 ;;
      --timeout) timeout_s=${2:?--timeout needs a value}; shift 2 ;;
      -h|--help) usage ;;
      --) shift; break ;;
      -*) echo "local_job: unknown option $1" >&2; usage ;;
      *) break ;;
    esac
  done
  (($#)) || usage
  local name=$1
  program=$1
  shift
  program_args=("$@")

  is_count "$workers" 1 1024 || die "--workers must be 1..1024 (got '$workers')"
  is_count "$reducers" 0 64 || die "--reducers must be 0..64 (got '$reducers')"
  is_count "$timeout_s" 1 864000 || die "--timeout must be whole seconds >= 1 (got '$timeout_s')"
  [[ $algo == rs || $algo == ring ]] || die "--algo must be rs or ring (got '$algo')"
  ((reducers > 0)) || [[ $algo == ring ]] || die "--algo rs needs at least one reducer"
  # Empty arrays under set -u and [[ -v array[key] ]] need bash 4.4; Debian 12 has 5.2.
  ((BASH_VERSINFO[0] * 100 + BASH_VERSINFO[1] >= 404)) ||
    die "needs bash 4.4 or newer (this is $BASH_VERSION)"

  server="$build_dir/src/reduce-server"
  ((reducers == 0)) || [[ -x $server ]] ||
    die "no reducer binary at $server: build first, or pass --build-dir"
  if [[ $program != */* ]]; then
    program=$(type -P "$program") || die "program '$name' not found in PATH"
  fi
  [[ -f $program && -x $program ]] || die "program '$program' is not an executable file"
}

# Reducers and workers run in their own process groups (setsid): Ctrl-C reaches only this
# script, whose trap then stops everything, and killing a group also ends whatever the child
# started. The plain pid is the fallback for a child caught before its setsid ran, and for the
# output filters, which stay in our group.
kill_groups() {  # kill_groups SIGNAL PID...
  local sig=$1 pid
  shift
  for pid in "$@"; do
    kill "-$sig" -- "-$pid" 2>/dev/null || kill "-$sig" "$pid" 2>/dev/null || true
  done
}

has_ended() { [[ -v "exit_code[$1]" ]]; }

# Waits for the children PID... (skipping those already reaped), SIGKILLing the groups of those
# still running after SECONDS. Statuses go to exit_code[PID]. Only single-pid waits are used:
# bash 5.2's wait -n loses track of children now and then. The killer has its own group, so that
# stopping it also stops its sleep.
wait_bounded() {  # wait_bounded SECONDS PID...
  local seconds=$1 pid code killer todo=()
  shift
  for pid in "$@"; do has_ended "$pid" || todo+=("$pid"); done
  ((${#todo[@]})) || return 0
  # shellcheck disable=SC2016  # expanded by the killer's own shell
  setsid bash -c 'sleep "$1"; shift; for p; do kill -KILL -- "-$p" || kill -KILL "$p"; done' \
    killer "$seconds" "${todo[@]}" 2>/dev/null &
  killer=$!
  for pid in "${todo[@]}"; do
    code=0
    wait "$pid" 2>/dev/null || code=$?
    exit_code[$pid]=$code
  done
  kill_groups KILL "$killer"  # KILL: in the cleanup it inherits our ignored TERM
  wait "$killer" 2>/dev/null || true
}

# On every exit: stop whatever still runs (TERM, then KILL after stop_timeout_s), and remove the
# temporary directory unless something failed.
cleanup() {
  local status=$?
  trap - EXIT
  trap '' INT TERM  # a second Ctrl-C must not cut the cleanup short and leave processes behind
  # Groups whose leader has ended may still hold processes it started: signal every group.
  local pids=("${worker_pids[@]}" "${reducer_pids[@]}")
  if ((${#pids[@]})); then
    kill_groups TERM "${pids[@]}"
    wait_bounded "$stop_timeout_s" "${pids[@]}"
    kill_groups KILL "${pids[@]}"
  fi
  # The output filters end once their writers are gone; a stuck one is killed.
  wait_bounded 2 "${filter_pids[@]}"
  if [[ -n $workdir ]]; then
    if ((status != 0 || keep_workdir)); then
      echo "local_job: logs kept in $workdir (rank<R>.log, reducer<I>.log)" >&2
    else
      rm -rf -- "$workdir"
    fi
  fi
  exit "$status"
}

on_signal() {  # on_signal NAME STATUS: leave through the EXIT trap, which stops the job
  echo "local_job: interrupted by SIG$1, stopping the job" >&2
  exit "$2"
}

make_workdir() {
  workdir=$(mktemp -d "${TMPDIR:-/tmp}/libreduce-job.XXXXXX")
  # The secret gates who may join the reducers: 32 random bytes as hex, readable by us alone.
  (
    umask 077
    printf '%s\n' "$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')" >"$workdir/secret"
  )
  comm_id="local_job-$$-$(od -An -tx1 -N8 /dev/urandom | tr -d ' \n')"
}

start_reducers() {
  local i
  for ((i = 0; i < reducers; i++)); do
    setsid "$server" --listen 127.0.0.1:0 --ready-file "$workdir/reducer$i.ready" \
      --secret-file "$workdir/secret" >"$workdir/reducer$i.log" 2>&1 </dev/null &
    reducer_pids+=($!)
  done
}

# Polls for the ready files (written atomically by each reducer once it accepts connections)
# and fails at once when a reducer exits instead.
wait_for_reducers() {
  local deadline=$((SECONDS + ready_timeout_s)) i line addresses=()
  for ((i = 0; i < reducers; i++)); do
    while [[ ! -s $workdir/reducer$i.ready ]]; do
      if ! kill -0 "${reducer_pids[i]}" 2>/dev/null; then
        echo "local_job: reducer $i exited before it was ready; its output:" >&2
        sed "s/^/[reducer $i] /" "$workdir/reducer$i.log" >&2
        return 1
      fi
      if ((SECONDS >= deadline)); then
        echo "local_job: reducer $i not ready after ${ready_timeout_s} s" >&2
        return 1
      fi
      sleep 0.1
    done
    line=$(<"$workdir/reducer$i.ready")
    if [[ ! $line =~ address=([^[:space:]]+) ]]; then
      echo "local_job: reducer $i wrote an unexpected ready line: $line" >&2
      return 1
    fi
    addresses+=("${BASH_REMATCH[1]}")
  done
  reducer_list=$(IFS=,; echo "${addresses[*]}")
}

# Two consecutive free TCP ports: without reducers, rank 0 serves the ring rendezvous on
# MASTER_PORT + 1 (MASTER_PORT itself stays free for a launcher's own store, as with torchrun).
free_port_pair() {
  /usr/bin/python3 - <<'EOF'
import socket
for _ in range(100):
    with socket.socket() as a, socket.socket() as b:
        a.bind(("127.0.0.1", 0))
        port = a.getsockname()[1]
        try:
            b.bind(("127.0.0.1", port + 1))
        except (OSError, OverflowError):
            continue
        print(port)
        break
else:
    raise SystemExit("local_job: no two consecutive free TCP ports found")
EOF
}

# Each stream of a worker that is shown goes through a FIFO to one filter process, our own
# child, so that it can be waited for before the summary (and killed by pid if it hangs). Both
# filters pass data on as it comes: tee does not buffer, and read takes a pipe byte by byte
# (awk, for one, holds its input back until a buffer fills).
show_stdout() {  # show_stdout FIFO LOG: rank 0's standard output, as is
  mkfifo "$1"
  tee -a "$2" <"$1" &
  filter_pids+=($!)
}

show_stderr() {  # show_stderr FIFO LOG PREFIX: standard error, each line prefixed, to ours
  mkfifo "$1"
  (
    while IFS= read -r line || [[ -n $line ]]; do
      printf '%s\n' "$line" >>"$2"
      printf '%s%s\n' "$3" "$line" >&2
    done
  ) <"$1" &
  filter_pids+=($!)
}

# Runs in each worker's own session, as the leader of its process group (so one group kill
# stops it and the worker): runs the worker, then reports "rank<R> STATUS" on the events FIFO.
# The main loop reads those lines with read -t, a blocking wait with a deadline. On SIGTERM
# (sent to the whole group) the trap makes the wrapper outlive the worker, so that waiting for
# the wrapper waits for the worker; the worker itself gets the default action back at exec.
# The wrapper's standard error goes to /dev/null so that its "Segmentation fault" notes do not
# duplicate the summary; the worker keeps the real one.
# shellcheck disable=SC2016  # expanded by the wrapper's own shell
readonly worker_wrapper='trap : TERM; exec 3>&2 2>/dev/null; "${@:3}" 2>&3 3>&-; code=$?
echo "$1 $code" >"$2"; exit "$code"'

start_workers() {
  local env_common=(
    -u LIBREDUCE_SECRET -u LIBREDUCE_RANK -u LIBREDUCE_WORLD_SIZE  # would override ours
    WORLD_SIZE="$workers" LIBREDUCE_REDUCERS="$reducer_list" LIBREDUCE_COMM_ID="$comm_id"
    LIBREDUCE_SECRET_FILE="$workdir/secret" LIBREDUCE_ALGO="$algo"
  )
  if [[ $algo == ring ]]; then
    env_common+=(MASTER_ADDR=127.0.0.1 MASTER_PORT="$(free_port_pair)")
  fi
  # Opened read-write: never blocks, and never reads end-of-file while we hold it.
  mkfifo "$workdir/events"
  exec {events_fd}<>"$workdir/events"
  local r log out
  for ((r = 0; r < workers; r++)); do
    log="$workdir/rank$r.log"
    : >"$log"
    show_stderr "$workdir/rank$r.err" "$log" "[rank $r] "
    out=$log  # other ranks' standard output is only logged
    if ((r == 0)); then
      show_stdout "$workdir/rank0.out" "$log"
      out="$workdir/rank0.out"
    fi
    setsid bash -c "$worker_wrapper" local_job "rank$r" "$workdir/events" \
      env "${env_common[@]}" RANK="$r" "$program" "${program_args[@]}" \
      >>"$out" 2>"$workdir/rank$r.err" </dev/null &
    worker_pids+=($!)
  done
}

describe_status() {  # describe_status CODE -> "exit 1" or "killed by SIGSEGV"
  local code=$1
  if ((code > 128 && code < 160)); then
    echo "killed by SIG$(kill -l "$((code - 128))" 2>/dev/null || echo "$((code - 128))")"
  else
    echo "exit $code"
  fi
}

# Waits for every worker, bounded by --timeout. After the first failure the job cannot succeed:
# the others get grace_s to finish (typically to report which peer is gone), then are stopped.
wait_for_workers() {
  local r code name left=$workers failed=() stuck=() limit="after ${timeout_s} s"
  local deadline=$((SECONDS + timeout_s))
  while ((left > 0 && deadline > SECONDS)); do
    # Times out (status > 128) at the deadline; a signal runs its trap, which exits.
    read -r -t "$((deadline - SECONDS))" -u "$events_fd" name code || break
    [[ $code =~ ^[0-9]+$ && $name =~ ^rank([0-9]+)$ ]] || continue  # BASH_REMATCH: rank
    r=${BASH_REMATCH[1]}
    wait "${worker_pids[r]}" 2>/dev/null || true  # the wrapper, which exits right after
    exit_code[${worker_pids[r]}]=$code
    left=$((left - 1))
    ((code != 0)) || continue
    failed+=("$r")
    if ((${#failed[@]} == 1 && SECONDS + grace_s < deadline)); then
      deadline=$((SECONDS + grace_s))
      limit="${grace_s} s after rank $r failed"
    fi
  done

  if ((left > 0)); then
    for ((r = 0; r < workers; r++)); do
      has_ended "${worker_pids[r]}" || stuck+=("$r")
    done
    echo "local_job: rank(s) ${stuck[*]} still running ${limit}; stopping them" >&2
    local stuck_pids=()
    for r in "${stuck[@]}"; do stuck_pids+=("${worker_pids[r]}"); done
    kill_groups TERM "${stuck_pids[@]}"
    wait_bounded "$stop_timeout_s" "${stuck_pids[@]}"
  fi
  # Let the filters print the last lines before the summary below.
  wait_bounded 5 "${filter_pids[@]}"

  ((${#failed[@]} + ${#stuck[@]})) || return 0
  # One line, ranks grouped by what happened to them: "2 (killed by SIGSEGV); 0 1 3 (exit 1)".
  local -A ranks_by=()
  local order=() what
  for r in $(printf '%s\n' "${failed[@]}" "${stuck[@]}" | sort -n); do
    if [[ " ${stuck[*]} " == *" $r "* ]]; then
      what="still running ${limit}, stopped"
    else
      what=$(describe_status "${exit_code[${worker_pids[r]}]}")
    fi
    [[ -v "ranks_by[$what]" ]] || order+=("$what")
    ranks_by[$what]+="${ranks_by[$what]:+ }$r"
  done
  local summary=""
  for what in "${order[@]}"; do summary+="${summary:+; }${ranks_by[$what]} ($what)"; done
  echo "local_job: FAILED: $((${#failed[@]} + ${#stuck[@]})) of $workers ranks failed:" \
    "$summary" >&2
  return 1
}

# SIGTERM makes a reducer exit 0. One that died during the job, or exits otherwise, is
# reported and its log kept; the job's status stays the workers' own.
stop_reducers() {
  local i pid ok=0 early=()
  for ((i = 0; i < reducers; i++)); do
    kill -0 "${reducer_pids[i]}" 2>/dev/null || early[i]=1
  done
  kill_groups TERM "${reducer_pids[@]}"
  wait_bounded "$stop_timeout_s" "${reducer_pids[@]}"
  for ((i = 0; i < reducers; i++)); do
    pid=${reducer_pids[i]}
    if [[ -n ${early[i]:-} ]]; then
      echo "local_job: reducer $i exited during the job" \
        "($(describe_status "${exit_code[$pid]:-0}")); log: $workdir/reducer$i.log" >&2
      ok=1
    elif ((${exit_code[$pid]:-0} != 0)); then
      echo "local_job: reducer $i did not stop cleanly on SIGTERM" \
        "($(describe_status "${exit_code[$pid]}")); log: $workdir/reducer$i.log" >&2
      ok=1
    fi
  done
  return "$ok"
}

main() {
  parse_args "$@"
  trap cleanup EXIT
  trap 'on_signal INT 130' INT
  trap 'on_signal TERM 143' TERM
  make_workdir
  reducer_list=""
  if ((reducers > 0)); then
    start_reducers
    wait_for_reducers
  fi
  start_workers
  local status=0
  wait_for_workers || status=1
  stop_reducers || keep_workdir=1
  return "$status"
}

main "$@"
