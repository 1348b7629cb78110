// SPDX-License-Identifier: BSD-3-Clause
#include "orchestrator/plan_command.h"

#include <cstdint>
#include <cstdio>
#include <string>

#include "common/limits.h"
#include "common/settings.h"
#include "orchestrator/plan_model.h"
#include "orchestrator/reducectl_args.h"
#include "orchestrator/scale_model.h"

namespace rd::orch {
namespace {

using cli::die;

struct PlanRequest {
  PlanInput input;
  double bucket_bytes = 0;  // > 0: predict the time of one all-reduce of this size
  int shared_host_cores = 0;
  bool loopback = false;
  bool json = false;
};

PlanRequest readRequest(int argc, char** argv) {
  cli::Args args = cli::parseArgs(argc, argv, 2, {"--loopback", "--json"});
  PlanRequest r;
  PlanInput& input = r.input;
  if (args.words.size() > 1) die("plan takes at most one SPEC file");
  if (args.words.size() == 1) {
    JobSpec spec = cli::loadOrDie(args.words[0]);
    input.workers =
        spec.pool(PoolKind::kPrimary).replica_count + spec.pool(PoolKind::kWorkers).replica_count;
    input.worker_gbps = spec.pool(PoolKind::kWorkers).nic_gbps;
    if (input.worker_gbps == 0) input.worker_gbps = spec.pool(PoolKind::kPrimary).nic_gbps;
    input.reducer_gbps = spec.pool(PoolKind::kReducers).nic_gbps;
    input.reducers = spec.pool(PoolKind::kReducers).replica_count;
  }
  for (const auto& [name, value] : args.flags) {
    if (name == "--workers") {
      input.workers = cli::intFlag(name, value, 1, static_cast<int>(limits::kMaxRanks));
    } else if (name == "--worker-gbps") {
      input.worker_gbps = cli::gbpsFlag(name, value);
    } else if (name == "--reducer-gbps") {
      input.reducer_gbps = cli::gbpsFlag(name, value);
    } else if (name == "--reducers") {
      input.reducers = cli::intFlag(name, value, 0, static_cast<int>(limits::kMaxReducers));
    } else if (name == "--bucket") {
      uint64_t bytes = 0;
      if (!settings::parseSize(value, &bytes) || bytes == 0) {
        die("--bucket must be a size above 0 such as 25M (got '" + value + "')");
      }
      r.bucket_bytes = static_cast<double>(bytes);
    } else if (name == "--one-host") {
      r.shared_host_cores = cli::intFlag(name, value, 1, 4096);
    } else if (name == "--loopback") {
      r.loopback = true;
    } else if (name == "--json") {
      r.json = true;
    } else {
      die("unknown option " + name + " for plan (see reducectl --help)");
    }
  }
  if (input.workers == 0) die("plan needs a SPEC or --workers N");
  if (input.worker_gbps == 0) {
    die("plan needs the workers' NIC bandwidth: --worker-gbps G, or resources.nicGbps in the spec");
  }
  if (input.reducer_gbps == 0) input.reducer_gbps = input.worker_gbps;  // same machines' NICs
  if (r.loopback && r.shared_host_cores == 0) die("--loopback needs --one-host CORES");
  if (r.bucket_bytes == 0 && (r.json || r.shared_host_cores > 0)) {
    die("--json and --one-host need --bucket SIZE");
  }
  return r;
}

std::string milliseconds(double seconds) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g ms", seconds * 1e3);
  return buf;
}

std::string describeTime(const char* name, const AlgorithmTime& t) {
  return std::string("  ") + name + milliseconds(t.seconds) + " (" + t.limit + "; links " +
         milliseconds(t.link_s) + ", CPU " + milliseconds(t.cpu_s) + ", latency " +
         milliseconds(t.latency_s) + ")\n";
}

std::string workJson(const ProcessWork& w) {
  char buf[160];
  std::snprintf(buf, sizeof buf,
                "{\"transfer_ends\": %.17g, \"bytes\": %.17g, \"operations\": %.17g}",
                w.transfer_ends, w.bytes, w.operations);
  return buf;
}

std::string timeJson(const AlgorithmTime& t) {
  char buf[200];
  std::snprintf(buf, sizeof buf,
                "{\"seconds\": %.17g, \"link_s\": %.17g, \"cpu_s\": %.17g, \"latency_s\": %.17g, "
                "\"limit\": \"",
                t.seconds, t.link_s, t.cpu_s, t.latency_s);
  return buf + t.limit + "\", \"rank\": " + workJson(t.rank) +
         ", \"reducer\": " + workJson(t.reducer) +
         ", \"host_per_core\": " + workJson(t.host_per_core) + "}";
}

}  // namespace

int runPlanCommand(int argc, char** argv) {
  const PlanRequest r = readRequest(argc, argv);
  Plan plan;
  std::string error;
  if (!makePlan(r.input, &plan, &error)) die(error);
  if (r.bucket_bytes == 0) {
    std::fputs(describePlan(r.input, plan).c_str(), stdout);
    return 0;
  }
  if (plan.reducers > static_cast<int>(limits::kMaxRanks)) {
    die("the plan's " + std::to_string(plan.reducers) +
        " reducers are more than the model takes (" + std::to_string(limits::kMaxRanks) +
        "): give --reducers K or faster --reducer-gbps");
  }
  ScaleCase c;
  c.workers = r.input.workers;
  c.reducers = plan.reducers;
  c.worker_gbps = r.input.worker_gbps;
  c.reducer_gbps = r.input.reducer_gbps;
  c.bucket_bytes = r.bucket_bytes;
  c.shared_host_cores = r.shared_host_cores;
  c.loopback = r.loopback;
  ScalePrediction p;
  if (!predictScale(c, calibratedCosts(), &p, &error)) die(error);
  if (r.json) {
    std::printf(
        "{\"workers\": %d, \"reducers\": %d, \"bucket_bytes\": %.17g, \"rs\": %s, "
        "\"ring\": %s, \"reducers_for_links\": %d, \"reducers_for_cpu\": %d, "
        "\"link_efficiency\": %.17g}\n",
        c.workers, c.reducers, c.bucket_bytes, timeJson(p.rs).c_str(), timeJson(p.ring).c_str(),
        p.reducers_for_links, p.reducers_for_cpu, calibratedCosts().link_efficiency);
    return 0;
  }
  std::fputs(describePlan(r.input, plan).c_str(), stdout);
  std::printf("predicted all-reduce of %.0f bytes (scale model, docs/scale-model.md):\n",
              c.bucket_bytes);
  std::fputs(describeTime("rs through the reducers: ", p.rs).c_str(), stdout);
  std::fputs(describeTime("ring: ", p.ring).c_str(), stdout);
  const std::string for_cpu = p.reducers_for_cpu > 0
                                  ? std::to_string(p.reducers_for_cpu)
                                  : "more than " + std::to_string(limits::kMaxRanks);
  std::printf(
      "reducers needed: %d for their links, %s for their CPUs (%d threads each, at the "
      "%.2f core per Gbit/s of worker traffic measured over TCP)\n",
      p.reducers_for_links, for_cpu.c_str(), calibratedCosts().reducer_threads,
      reducerCoresPerGbps(calibratedCosts()));
  if (c.reducers > static_cast<int>(limits::kMaxReducers)) {
    std::printf(
        "warning: a communicator takes at most %u reducers; faster reducer NICs "
        "(--reducer-gbps) need fewer\n",
        limits::kMaxReducers);
  }
  return 0;
}

}  // namespace rd::orch
