#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# A real Slurm cluster on this one machine, for the tests and for anyone who wants to try
# reducectl's Slurm backend without a cluster: munged, slurmctld and N slurmd (nodes n1..nN,
# all on 127.0.0.1) run as root from a private state directory. The system's Slurm and munge
# (/etc/slurm, /etc/munge, ports 6817/6818) are never touched: clients find this cluster only
# through SLURM_CONF.
#
#   scripts/local_slurm.sh start [--nodes N]   bring it up (default 4 nodes) and wait until idle
#   scripts/local_slurm.sh stop                cancel jobs, stop every daemon, remove the state dir
#   scripts/local_slurm.sh status              daemons and sinfo; exit 0 when up, 3 when down
#   scripts/local_slurm.sh env                 eval "$(scripts/local_slurm.sh env)"
#
# State directory: $LIBREDUCE_SLURM_DIR, default /tmp/libreduce-slurm. Ports: the controller
# listens on $LIBREDUCE_SLURM_PORT (default 16817), node nI on that + 183 + I (17001.. by
# default); a second cluster beside the first needs both its own directory and its own port.
set -euo pipefail

state_dir=${LIBREDUCE_SLURM_DIR:-/tmp/libreduce-slurm}
state_dir=${state_dir%/}
[[ $state_dir == /?* ]] || { echo "local_slurm: LIBREDUCE_SLURM_DIR must be an absolute path" >&2; exit 2; }
conf=$state_dir/slurm.conf
munge_socket=$state_dir/munge/munge.socket
ctld_port=${LIBREDUCE_SLURM_PORT:-16817} # not 6817, so a system Slurm here is left alone
slurmd_port_base=$((ctld_port + 183))    # node nI listens on this + I
start_timeout_s=60
host=$(hostname -s)
export SLURM_CONF=$conf # every Slurm command below talks to this cluster only

say() { echo "local_slurm: $*"; }
warn() { echo "local_slurm: $*" >&2; }

# --- processes ------------------------------------------------------------------------------

# is_ours PID: the process belongs to this cluster. Daemons name the state dir on their command
# line; slurmstepd (forked by slurmd, renamed "slurmstepd: [job.step]") inherits SLURM_CONF.
# Also keeps a recycled pid in a stale pid file from being taken for one of ours.
is_ours() {
  tr '\0' '\n' </proc/"$1"/cmdline 2>/dev/null | grep -qF "$state_dir/" ||
    tr '\0' '\n' </proc/"$1"/environ 2>/dev/null | grep -qxF "SLURM_CONF=$conf"
}

# pid_of NAME: the pid recorded by start for NAME (munged, slurmctld, slurmd.nI), if it runs.
pid_of() {
  local file=$state_dir/pids/$1 pid
  [[ -r $file ]] || return 1
  pid=$(<"$file")
  [[ -n $pid ]] && is_ours "$pid" && echo "$pid"
}

# Every process of this cluster, recorded or not: what an interrupted start or a lost pid file
# would leave behind is found too.
our_pids() {
  local pid name
  # One name at a time: pgrep -x compares at most 15 characters of the pattern.
  for pid in $(for name in munged slurmctld slurmd slurmstepd; do pgrep -x "$name"; done); do
    is_ours "$pid" && echo "$pid"
  done
  return 0
}

# remove_state: deletes the state dir, but only one this script made (its marker file or its
# slurm.conf says so), so a mistaken LIBREDUCE_SLURM_DIR=/tmp or =$HOME is refused, not wiped.
remove_state() {
  [[ -e $state_dir ]] || return 0
  if [[ ! -e $state_dir/.local_slurm && -n $(ls -A "$state_dir") ]] &&
    ! head -n1 "$conf" 2>/dev/null | grep -q 'Written by scripts/local_slurm.sh'; then
    warn "$state_dir is not a local_slurm state directory; not removing it (set LIBREDUCE_SLURM_DIR)"
    exit 1
  fi
  rm -rf "$state_dir"
}

# wait_gone TIMEOUT_S PID...: polls until none of PIDs is alive; fails on timeout.
wait_gone() {
  local deadline=$((SECONDS + $1)) pid alive
  shift
  while :; do
    alive=0
    for pid in "$@"; do kill -0 "$pid" 2>/dev/null && alive=1; done
    ((alive)) || return 0
    ((SECONDS < deadline)) || return 1
    sleep 0.2
  done
}

# terminate PID...: TERM, a bounded wait (Slurm daemons save state on TERM), then KILL.
terminate() {
  (($#)) || return 0
  kill -TERM "$@" 2>/dev/null || true
  wait_gone 10 "$@" && return 0
  kill -KILL "$@" 2>/dev/null || true
  wait_gone 5 "$@"
}

# --- configuration ----------------------------------------------------------------------------

# The nodes declare 8 CPUs and 8000 MB each whatever this host has (config_overrides), so
# multi-node, multi-task jobs fit on a small machine; DefMemPerCPU keeps a job from claiming a
# node's whole memory. Each node also has two stand-in GPUs, so jobs that ask for --gres=gpu:N
# schedule as on a GPU cluster: gres/gpu drops GPUs without a File=, and File= must be a
# character or block device, so the "GPUs" are links to /dev/null (task/none confines nothing;
# Slurm only sets CUDA_VISIBLE_DEVICES from the index in the name, gpu0 and gpu1).
write_config() {
  local nodes=$1 i
  {
    cat <<EOF
# Written by scripts/local_slurm.sh; removed by "local_slurm.sh stop".
ClusterName=libreduce
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$munge_socket
StateSaveLocation=$state_dir/ctld
SlurmdSpoolDir=$state_dir/spool/%n
SlurmctldPidFile=$state_dir/run/slurmctld.pid
SlurmdPidFile=$state_dir/run/slurmd.%n.pid
SlurmctldLogFile=$state_dir/log/slurmctld.log
SlurmdLogFile=$state_dir/log/slurmd.%n.log
SlurmdParameters=config_overrides
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
MailProg=/bin/true
ReturnToService=2
KillWait=5
MinJobAge=600
# Heterogeneous jobs are started only by the backfill scheduler: run it every second.
SchedulerType=sched/backfill
SchedulerParameters=bf_interval=1
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU_Memory
DefMemPerCPU=100
# A job that can never fit (more nodes, CPUs or GPUs than the partition has) is refused by
# sbatch/srun ("Node count specification invalid") instead of pending for ever. Not caught: a
# heterogeneous job whose components together need more nodes than exist (components never
# share a node); it pends with Reason=Resources.
EnforcePartLimits=ALL
GresTypes=gpu
EOF
    for ((i = 1; i <= nodes; i++)); do
      echo "NodeName=n$i NodeHostname=$host NodeAddr=127.0.0.1 Port=$((slurmd_port_base + i))" \
        "CPUs=8 RealMemory=8000 Gres=gpu:2 State=UNKNOWN"
    done
    echo "PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP"
  } >"$conf"
  mkdir -p "$state_dir/gpu"
  ln -sf /dev/null "$state_dir/gpu/gpu0"
  ln -sf /dev/null "$state_dir/gpu/gpu1"
  echo "NodeName=n[1-$nodes] Name=gpu File=$state_dir/gpu/gpu[0-1]" >"$state_dir/gres.conf"
}

# --- start ------------------------------------------------------------------------------------

ensure_packages() {
  local bin missing=0
  for bin in munged mungekey slurmctld slurmd srun sinfo; do
    command -v "$bin" >/dev/null || [[ -x /usr/sbin/$bin ]] || missing=1
  done
  ((missing)) || return 0
  say "installing slurm-wlm and munge"
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -q slurm-wlm munge >/dev/null ||
    { apt-get update -q >/dev/null && apt-get install -y -q slurm-wlm munge >/dev/null; }
}

# fail MESSAGE LOG...: prints the tail of each log, stops what start began (the state dir stays
# for a closer look at the logs) and exits non-zero.
fail() {
  local msg=$1 log
  shift
  warn "$msg"
  for log in "$@"; do
    [[ -s $log ]] || continue
    echo "---- tail of $log" >&2
    tail -n 20 "$log" >&2
  done
  stop_processes >/dev/null 2>&1 || true
  warn "stopped; logs kept in $state_dir/log"
  exit 1
}

# Our own munged: its own key, socket, pid, log and seed file. --force lets it run as root.
# It daemonizes only once its socket accepts credentials.
start_munge() {
  mkdir -p "$state_dir/munge"
  chmod 0700 "$state_dir/munge"
  mungekey --create --keyfile="$state_dir/munge/munge.key" >/dev/null 2>&1 ||
    dd if=/dev/urandom of="$state_dir/munge/munge.key" bs=1024 count=1 status=none
  chown root:root "$state_dir/munge/munge.key"
  chmod 0400 "$state_dir/munge/munge.key"
  local log=$state_dir/log/munged.log
  munged --force --socket="$munge_socket" --key-file="$state_dir/munge/munge.key" \
    --pid-file="$state_dir/munge/munged.pid" --log-file="$log" \
    --seed-file="$state_dir/munge/munged.seed" </dev/null >>"$state_dir/log/munged.out" 2>&1 ||
    fail "munged did not start" "$(log_of munged)"
  cp "$state_dir/munge/munged.pid" "$state_dir/pids/munged"
  munge -n --socket="$munge_socket" | unmunge --socket="$munge_socket" >/dev/null 2>&1 ||
    fail "munged does not encode and decode credentials" "$log"
}

# launch NAME COMMAND...: runs a daemon in the foreground of its own session, in the
# background of this script, and records its pid. setsid: no terminal signals reach it later.
launch() {
  local name=$1
  shift
  setsid "$@" </dev/null >>"$state_dir/log/$name.out" 2>&1 &
  echo $! >"$state_dir/pids/$name"
}

start_slurm() {
  local nodes=$1 i
  launch slurmctld slurmctld -D -i -f "$conf"
  for ((i = 1; i <= nodes; i++)); do
    launch "slurmd.n$i" slurmd -D -N "n$i" -f "$conf"
  done
}

# log_of NAME: the daemon's log file, or what it printed when it died before opening that.
log_of() {
  local log=$state_dir/log/$1.log
  [[ -s $log ]] && echo "$log" || echo "$state_dir/log/$1.out"
}

# Every daemon start launched must still run; on a dead one, fail with its exit status and log.
# The pids were recorded moments ago, so a process that exists and is not a zombie is the
# daemon, or the fork about to become it: not pid_of, whose command-line check fails in the
# instant between fork and exec (the fork still shows this script's command line).
check_alive() {
  local nodes=$1 name pid state rc
  for name in munged slurmctld $(seq -f 'slurmd.n%g' "$nodes"); do
    pid=$(cat "$state_dir/pids/$name" 2>/dev/null || true)
    state=$(sed 's/.*) //' /proc/"$pid"/stat 2>/dev/null | cut -d' ' -f1 || true)
    [[ -n $state && $state != Z ]] && continue
    wait "$pid" 2>/dev/null && rc=0 || rc=$?
    # 127: not a child of this script (munged daemonizes), so no status to tell.
    fail "$name exited$( ((rc == 127)) || echo " with status $rc")" "$(log_of "$name")"
  done
}

# Fails before starting anything when a port is taken (another cluster, or a stale daemon
# of ours that lost its pid file): the daemons would only die with "Address already in use".
check_ports() {
  local nodes=$1 port
  for port in "$ctld_port" $(seq $((slurmd_port_base + 1)) $((slurmd_port_base + nodes))); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
      warn "port $port is in use; set LIBREDUCE_SLURM_PORT (and LIBREDUCE_SLURM_DIR) for a" \
        "second cluster"
      exit 1
    fi
  done
}

# Polls until sinfo lists every node idle; fails at once when a daemon dies or the controller
# rejects a node (inval, drain: a config mismatch whose reason sinfo -R names), else on timeout.
wait_idle() {
  local nodes=$1 deadline=$((SECONDS + start_timeout_s)) states
  while :; do
    check_alive "$nodes"
    states=$(sinfo -h -N -o %t 2>/dev/null || true)
    [[ $(grep -cx idle <<<"$states") -eq $nodes ]] && return 0
    if grep -qE '^(inval|drain|drng|fail)' <<<"$states"; then
      fail "nodes rejected: $(sinfo -h -R -o '%N: %E' | tr '\n' ' ')" "$state_dir/log/slurmctld.log"
    fi
    ((SECONDS < deadline)) || break
    sleep 0.3
  done
  fail "nodes not idle after ${start_timeout_s}s (states: $(tr '\n' ' ' <<<"$states"))" \
    "$(log_of slurmctld)" "$(log_of slurmd.n1)"
}

# Up: the recorded controller and munged run and the controller answers.
cluster_up() {
  pid_of munged >/dev/null && pid_of slurmctld >/dev/null && scontrol ping >/dev/null 2>&1
}

cmd_start() {
  local nodes=4 running i
  while (($#)); do
    case $1 in
      --nodes) nodes=${2:-}; shift 2 || shift ;;
      --nodes=*) nodes=${1#--nodes=}; shift ;;
      *) warn "unknown option $1"; usage ;;
    esac
  done
  [[ $nodes =~ ^[1-9][0-9]*$ ]] || { warn "--nodes needs a positive number"; usage; }
  ((nodes <= 999)) || { warn "--nodes: at most 999 (one slurmd port each)"; exit 2; }

  if cluster_up; then
    running=$(sinfo -h -N -o %N | wc -l)
    say "already running ($running nodes) in $state_dir"
    ((running == nodes)) || warn "not $nodes nodes: stop it first to change the node count"
    echo "export SLURM_CONF=$conf"
    return 0
  fi
  # Leftovers of a crashed or interrupted run would hold ports and pid files.
  stop_processes >/dev/null
  remove_state
  ensure_packages
  check_ports "$nodes"
  mkdir -p "$state_dir"/{ctld,log,pids,run}
  touch "$state_dir/.local_slurm"
  for ((i = 1; i <= nodes; i++)); do mkdir -p "$state_dir/spool/n$i"; done
  # An interrupted start leaves nothing running.
  trap 'fail "interrupted"' INT TERM HUP
  write_config "$nodes"
  start_munge
  start_slurm "$nodes"
  wait_idle "$nodes"
  trap - INT TERM HUP
  say "up: $nodes nodes (n1..n$nodes, 8 CPUs, 8000 MB, gpu:2 each), partition debug," \
    "controller on 127.0.0.1:$ctld_port, state in $state_dir"
  echo "export SLURM_CONF=$conf"
}

# --- stop -------------------------------------------------------------------------------------

# Jobs first, while the controller still answers, so no slurmstepd or task is orphaned.
# Bounded: a job that does not end in time is left to the TERM/KILL of the daemons below.
# (Slurm commands without a slurm.conf spend a minute looking for a controller: ask only a
# controller that runs.)
cancel_jobs() {
  pid_of slurmctld >/dev/null && scontrol ping >/dev/null 2>&1 || return 0
  [[ -n $(squeue -h -o %i 2>/dev/null) ]] || return 0
  scancel --quiet --user=root || true
  local deadline=$((SECONDS + 15))
  while [[ -n $(squeue -h -o %i 2>/dev/null) ]] && ((SECONDS < deadline)); do
    sleep 0.3
  done
}

# Stops every process of this cluster: the Slurm daemons together (each takes a second or two
# to save its state), then munged, which they need until they are gone; then whatever else
# names our state dir.
stop_processes() {
  local pids=() name pid
  cancel_jobs
  for name in "$state_dir"/pids/slurm*; do
    pid=$(pid_of "${name##*/}" 2>/dev/null) && pids+=("$pid")
  done
  terminate "${pids[@]}" || true
  mapfile -t pids < <(our_pids | grep -vx "$(pid_of munged || echo none)" || true)
  terminate "${pids[@]}" || true
  pid=$(pid_of munged) && { terminate "$pid" || true; }
  mapfile -t pids < <(our_pids)
  terminate "${pids[@]}" || true
  mapfile -t pids < <(our_pids)
  ((${#pids[@]} == 0)) || { warn "still running: ${pids[*]}"; return 1; }
}

cmd_stop() {
  if [[ ! -d $state_dir && -z $(our_pids) ]]; then
    say "not running"
    return 0
  fi
  stop_processes || exit 1
  remove_state
  say "stopped; $state_dir removed"
}

# --- status -----------------------------------------------------------------------------------

cmd_status() {
  local name pid
  if [[ ! -d $state_dir/pids ]]; then
    say "down (no $state_dir)"
    exit 3
  fi
  for name in munged slurmctld $(cd "$state_dir/pids" && ls -v slurmd.* 2>/dev/null); do
    if pid=$(pid_of "$name"); then
      printf '  %-12s running (pid %s)\n' "$name" "$pid"
    else
      printf '  %-12s not running\n' "$name"
    fi
  done
  if cluster_up; then
    sinfo
    say "up; export SLURM_CONF=$conf"
    return 0
  fi
  say "down"
  exit 3
}

usage() {
  sed -n '8,11s/^#   //p' "$0" >&2
  exit 2
}

main() {
  local cmd=${1:-}
  shift || true
  if [[ $cmd == start || $cmd == stop ]] && [[ $(id -u) -ne 0 ]]; then
    warn "$cmd must run as root (the daemons run as root)"
    exit 2
  fi
  case $cmd in
    start) cmd_start "$@" ;;
    stop) cmd_stop ;;
    status) cmd_status ;;
    env) echo "export SLURM_CONF=$conf" ;;
    *) usage ;;
  esac
}

main "$@"
