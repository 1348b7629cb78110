// SPDX-License-Identifier: BSD-3-Clause
#include "orchestrator/network_emulation.h"

#include <sys/wait.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <cmath>
#include <cstdio>
#include <random>

namespace rd::orch {

namespace {

// Runs a shell command, returning its standard output (standard error is merged) and status.
int runCapture(const std::string& command, std::string* output) {
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return -1;
  char buf[4096];
  size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0) output->append(buf, n);
  int status = pclose(pipe);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string mbit(double gbps) {
  return std::to_string(std::llround(gbps * 1000.0)) + "mbit";
}

// "198.18.0.3/16" -> "198.18.0.3"
std::string stripPrefixLength(const std::string& cidr) {
  return cidr.substr(0, cidr.find('/'));
}

}  // namespace

bool createEmulatedNetwork(const JobSpec& spec, const std::string& tool, EmulatedNetwork* net,
                           std::string* error) {
  if (geteuid() != 0) {
    *error = "--emulate-network needs root (it creates network namespaces)";
    return false;
  }
  if (access(tool.c_str(), R_OK) != 0) {
    *error = "--emulate-network: the harness's netns tool is not at " + tool +
             " (give --netns-tool PATH)";
    return false;
  }
  double rank_gbps = spec.pool(PoolKind::kWorkers).nic_gbps;
  if (rank_gbps == 0) rank_gbps = spec.pool(PoolKind::kPrimary).nic_gbps;
  double reducer_gbps = spec.pool(PoolKind::kReducers).nic_gbps;
  if (rank_gbps == 0) rank_gbps = reducer_gbps;
  if (reducer_gbps == 0) reducer_gbps = rank_gbps;
  if (rank_gbps == 0) {
    *error = "--emulate-network needs the NICs' bandwidth: resources.nicGbps in the pools";
    return false;
  }
  int ranks = spec.pool(PoolKind::kPrimary).replica_count +
              spec.pool(PoolKind::kWorkers).replica_count +
              spec.pool(PoolKind::kEvaluators).replica_count;
  int reducers = spec.pool(PoolKind::kReducers).replica_count;
  if (ranks > 254 || reducers > 254) {
    *error = "--emulate-network: at most 254 hosts per side (addresses of 198.18.0.0/15)";
    return false;
  }
  std::random_device rd;
  char prefix[16];
  std::snprintf(prefix, sizeof prefix, "rdj%05x", rd() & 0xfffff);
  net->prefix = prefix;
  std::string python = "/usr/bin/python3 '" + tool + "'";
  net->destroy_command = python + " --destroy " + net->prefix;
  std::string out;
  int rc = runCapture(python + " --create " + net->prefix + " --workers " + std::to_string(ranks) +
                          " --reducers " + std::to_string(reducers) + " --rate " + mbit(rank_gbps) +
                          " --reducer-rate " + mbit(reducer_gbps),
                      &out);
  if (rc != 0) {
    *error = "--emulate-network: could not build the namespaces: " + out;
    return false;
  }
  try {
    YAML::Node hosts = YAML::Load(out)["hosts"];
    for (int i = 0; i < ranks; ++i) {
      YAML::Node h = hosts["w" + std::to_string(i)];
      net->ranks.push_back(
          {h["netns"].as<std::string>(), stripPrefixLength(h["addr"].as<std::string>())});
    }
    for (int i = 0; i < reducers; ++i) {
      YAML::Node h = hosts["r" + std::to_string(i)];
      net->reducers.push_back(
          {h["netns"].as<std::string>(), stripPrefixLength(h["addr"].as<std::string>())});
    }
  } catch (const YAML::Exception& e) {
    std::string ignored;
    destroyEmulatedNetwork(*net, &ignored);
    *error = std::string("--emulate-network: unexpected answer from the netns tool: ") + e.what();
    return false;
  }
  return true;
}

bool destroyEmulatedNetwork(const EmulatedNetwork& net, std::string* error) {
  if (net.prefix.empty()) return true;
  std::string out;
  if (runCapture(net.destroy_command, &out) != 0) {
    *error = out;
    return false;
  }
  return true;
}

}  // namespace rd::orch
