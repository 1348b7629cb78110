// SPDX-License-Identifier: BSD-3-Clause
// `reducectl doctor`: why a job does not start or runs slowly, asked of its reducers one by
// one. Each is reached (TCP), joined with the job's secret and probed with verified all-reduces
// (reduce-probe, through the library itself), its link rate compared with what the spec's NICs
// let reducectl plan expect, the UCX transports and devices the link settled on named, and,
// where it serves metrics, its clock compared with this one and its own connections' transports.
// The verdict names each reducer that is down, refuses the secret, answers wrongly or is slow.
#pragma once

#include <string>
#include <vector>

namespace rd::orch {

struct DoctorInput {
  std::vector<std::string> reducers;  // host:port of each
  std::vector<std::string> metrics;   // host:port of each one's --metrics, "" where none
  std::string secret_file;            // the job's secret (a shared pool: the job's key)
  double expect_gbps = 0;             // each link's expected rate; 0: not judged
  std::string expect_source;          // where that rate comes from, for the verdict
  int probe_mib = 16;                 // bytes of each probe all-reduce
  int probe_iters = 3;
  int timeout_s = 20;         // per reducer
  std::string probe_program;  // reduce-probe
};

/** What was found about one reducer. */
struct ReducerCheck {
  std::string address;
  bool reachable = false;
  std::string via;         // this host's address and interface toward it: "10.0.0.5 on eth1"
  bool joined = false;     // the probe joined and its all-reduces came back right
  double gbps = 0;         // measured, each way
  std::string transports;  // what carries the probe's link from here: "tcp/eth1"
  std::string reducer_transports;  // from its metrics: its connections by transport
  bool has_skew = false;
  double skew_s = 0;    // its clock minus this one's
  std::string problem;  // plain words; empty when healthy
};

/** Checks every reducer of @p input, in turn (probes side by side would share the links). */
std::vector<ReducerCheck> checkReducers(const DoctorInput& input);

/** The report: a line per reducer, then the verdict. */
std::string describeChecks(const DoctorInput& input, const std::vector<ReducerCheck>& checks);

/** `reducectl doctor (SPEC | --reducers LIST) [options]`; 0 when every reducer is healthy. */
int runDoctorCommand(int argc, char** argv, const std::string& default_probe);

}  // namespace rd::orch
