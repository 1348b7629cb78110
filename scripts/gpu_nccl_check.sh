#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# GPU check of the NCCL plugin, for a machine with an NVIDIA GPU, CUDA and NCCL (CI has none).
# Builds libnccl-net-libreduce.so and reduce-server, starts four reducers, and runs real NCCL with
# 2 and 4 ranks on the one GPU as separate "nodes" (a distinct NCCL_HOSTID each), so that NCCL
# crosses "nodes" through the plugin: NCCL_NET_PLUGIN=libreduce, NCCL_COLLNET_ENABLE=1. Every
# all-reduce result is checked, and the NCCL_DEBUG=INFO logs must show the plugin loaded and
# CollNet all-reduces going through the reducers. If the plugin's tuner does not pick CollNet
# (at 2 nodes it leaves all-reduces to NCCL: ring moves as little there), the run is repeated
# with NCCL_ALGO forcing it (and the summary says so). Then the same
# with torch.distributed (backend "nccl"), and the libreduce c10d backend with CUDA tensors
# ("cpu:gloo,cuda:libreduce", built for python3's torch), when python3 can import torch with
# CUDA. NCCL is NCCL_HOME's, else the one python3's torch loads (PyPI's nvidia-nccl-cu13), else
# the CUDA toolkit's.
#
#   scripts/gpu_nccl_check.sh        logs go to $OUT when set, else build-gpu-nccl/logs
#
# Budget: GPU_CHECK_BUDGET_S (default 540 s). Only processes this script started are stopped.
# Exit status 0 only when every step that could run passed and CollNet was seen in use.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1

budget=${GPU_CHECK_BUDGET_S:-540}
build="build-gpu-nccl"
logs=${OUT:-$build/logs}
mkdir -p "$logs"
export PATH="$PATH:/usr/local/cuda/bin"
torch_nccl=$(python3 -c 'import nvidia.nccl; print(list(nvidia.nccl.__path__)[0])' 2>/dev/null)
nccl_home=${NCCL_HOME:-${torch_nccl:-/usr/local/cuda}}
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done' EXIT

allow() {  # seconds for a step: at most $1, never past the budget
  local left=$((budget - SECONDS - 10))
  ((left < $1)) && echo $((left > 5 ? left : 5)) || echo "$1"
}
have() { command -v "$1" >/dev/null 2>&1; }
have_cuda_torch() { python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; }

check_tools() {
  echo "== machine"
  have nvidia-smi && nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv |
    tee "$logs/nvidia-smi.csv"
  local ok=1
  for tool in cmake g++; do have $tool || { echo "missing: $tool"; ok=0; }; done
  [[ -f $nccl_home/include/nccl.h ]] || { echo "missing: nccl.h under $nccl_home (set NCCL_HOME)"; ok=0; }
  # PyPI's wheel ships libnccl.so.2 only: link the file itself.
  nccl_lib=$(ls "$nccl_home"/lib*/libnccl.so* 2>/dev/null | head -1)
  [[ -n $nccl_lib ]] || { echo "missing: libnccl under $nccl_home"; ok=0; }
  echo "NCCL: $nccl_home ($(basename "${nccl_lib:-none}"))"
  ((ok))
}

build_all() {
  local generator=Ninja
  have ninja || generator="Unix Makefiles"
  echo "== build ($build): nccl_net_libreduce reduce-server, nccl_allreduce_check"
  local targets=(nccl_net_libreduce reduce-server) torch=AUTO
  if have_cuda_torch; then targets+=(rd_python_core rd_python_torch); else torch=OFF; fi
  timeout "$(allow 120)" cmake -S . -B "$build" -G "$generator" -DLIBREDUCE_WITH_NCCL_PLUGIN=ON \
    -DLIBREDUCE_WITH_CUDA=OFF -DLIBREDUCE_BUILD_TESTS=OFF -DLIBREDUCE_BUILD_BENCH=OFF \
    -DLIBREDUCE_WITH_TORCH=$torch -DLIBREDUCE_PYTHON="$(command -v python3)" \
    -DLIBREDUCE_WITH_BASELINES=OFF >"$logs/configure.log" 2>&1 &&
    timeout "$(allow 240)" cmake --build "$build" -j "$(nproc)" --target "${targets[@]}" \
      >"$logs/build.log" 2>&1 &&
    g++ -std=c++17 -O2 -I"$nccl_home/include" -I/usr/local/cuda/include \
      tests/nccl_plugin/gpu/nccl_allreduce_check.cc "$nccl_lib" -Wl,-rpath,"$(dirname "$nccl_lib")" \
      -L/usr/local/cuda/lib64 -lcudart -o "$build/nccl_allreduce_check" \
      >>"$logs/build.log" 2>&1 || { tail -30 "$logs/build.log" "$logs/configure.log"; return 1; }
}

start_reducers() {  # sets $reducers to "host:port,host:port"
  local list=()
  # Four: the plugin's tuner gives the reducers an all-reduce only where the model says they win,
  # which at 4 nodes needs as many reducers as nodes (at 2 nodes ring moves as little).
  for i in 0 1 2 3; do
    rm -f "$logs/reducer$i.ready"
    "$build/src/reduce-server" --listen 127.0.0.1:0 --ready-file "$logs/reducer$i.ready" \
      >"$logs/reducer$i.log" 2>&1 &
    pids+=($!)
  done
  for i in 0 1 2 3; do
    for _ in $(seq 100); do [[ -s $logs/reducer$i.ready ]] && break; sleep 0.1; done
    list+=("$(sed -n 's/.*address=\([^ ]*\).*/\1/p' "$logs/reducer$i.ready")")
  done
  reducers=$(IFS=,; echo "${list[*]}")
  echo "reducers: $reducers"
  [[ $reducers != *,* || $reducers == ,* || $reducers == *, ]] && return 1
  return 0
}

# run_ranks NAME N FORCE CMD...: N ranks of CMD, each its own "node"; logs in $logs/NAME.rankR.
run_ranks() {
  local name=$1 n=$2 force=$3
  shift 3
  local dir="$logs/$name.exchange" rank_pids=() rc=0
  rm -rf "$dir" && mkdir -p "$dir"
  for ((r = 0; r < n; r++)); do
    env RANK="$r" WORLD_SIZE="$n" LOCAL_RANK=0 MASTER_ADDR=127.0.0.1 MASTER_PORT=$((29500 + n)) \
      CUDA_VISIBLE_DEVICES=0 NCCL_HOSTID="libreduce-node-$r" \
      NCCL_NET_PLUGIN=libreduce LD_LIBRARY_PATH="$PWD/$build/src/nccl_plugin:${LD_LIBRARY_PATH:-}" \
      NCCL_COLLNET_ENABLE=1 NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET,COLL,TUNING,GRAPH \
      ${force:+NCCL_ALGO=$force} LIBREDUCE_REDUCERS="$reducers" LIBREDUCE_TIMEOUT_MS=30000 \
      timeout "$(allow 150)" "$@" "$dir" >"$logs/$name.rank$r.log" 2>&1 &
    rank_pids+=($!)
  done
  for p in "${rank_pids[@]}"; do wait "$p" || rc=1; done
  local passed collnet loaded tuner
  passed=$(grep -l "CHECK PASSED" "$logs/$name".rank*.log 2>/dev/null | wc -l)
  loaded=$(grep -lE "NET/libreduce|Using network libreduce|Loaded net plugin" "$logs/$name".rank*.log | wc -l)
  collnet=$(grep -l "first iallreduce through the reducers" "$logs/$name".rank*.log | wc -l)
  tuner=$(grep -l "TUNER/Plugin: Using libreduce" "$logs/$name".rank*.log | wc -l)
  echo "$name: $passed/$n ranks passed, plugin in $loaded/$n logs, libreduce tuner in $tuner/$n," \
    "CollNet all-reduce in $collnet/$n logs"
  grep -h "tuner:" "$logs/$name".rank0.log | head -3 | sed 's/^/    /'
  grep -hE "CollNet|collNet" "$logs/$name".rank0.log | head -5 | sed 's/^/    /'
  ((rc == 0 && passed == n && loaded == n)) || return 1
  ((collnet == n)) || return 2
}

# nccl_step NAME N CMD...: the default tuner first, then CollNet forced if it was not chosen.
nccl_step() {
  local name=$1 n=$2
  shift 2
  run_ranks "$name" "$n" "" "$@"
  case $? in
    0) results+=("$name: PASSED, CollNet chosen by NCCL's tuner") ;;
    2)
      if run_ranks "$name-forced" "$n" "CollNetChain,CollNetDirect" "$@"; then
        results+=("$name: PASSED, CollNet used with NCCL_ALGO=CollNetChain,CollNetDirect (the tuner chose another algorithm)")
      else
        results+=("$name: FAILED (CollNet not used, or wrong results, even when forced)"); status=1
      fi ;;
    *) results+=("$name: FAILED (see $logs/$name.rank*.log)"); status=1 ;;
  esac
}

main() {
  status=0
  results=()
  check_tools || { echo "RESULT: cannot run (missing tools)"; return 1; }
  build_all || { echo "RESULT: build failed"; return 1; }
  start_reducers || { echo "RESULT: reducers did not start"; return 1; }
  for n in 2 4; do nccl_step "nccl-$n" "$n" "$build/nccl_allreduce_check"; done
  if have_cuda_torch; then
    echo "torch: $(python3 -c 'import torch; print(torch.__version__, torch.cuda.nccl.version())')"
    for n in 2 4; do
      nccl_step "torch-$n" "$n" python3 tests/nccl_plugin/gpu/torch_allreduce_check.py
    done
    # No NCCL in this step: run_ranks' plugin and CollNet counts do not apply, its results do.
    run_ranks torch-backend-cuda 2 "" env PYTHONPATH="$PWD/$build/python" python3 \
      tests/nccl_plugin/gpu/torch_backend_cuda_check.py
    if (($(grep -l "TORCH BACKEND CUDA CHECK PASSED" "$logs"/torch-backend-cuda.rank*.log | wc -l) == 2)); then
      results+=("torch-backend-cuda: PASSED (cpu:gloo,cuda:libreduce, CUDA tensors)")
    else
      results+=("torch-backend-cuda: FAILED (see $logs/torch-backend-cuda.rank*.log)"); status=1
    fi
  else
    results+=("torch: SKIPPED (python3 cannot import torch with CUDA)")
  fi
  echo "== summary (${SECONDS}s of ${budget}s)"
  printf '%s\n' "${results[@]}"
  return $status
}

main 2>&1 | tee "$logs/summary.log"
exit "${PIPESTATUS[0]}"
