// SPDX-License-Identifier: BSD-3-Clause
#include "orchestrator/doctor.h"

#include <ifaddrs.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <sstream>

#include "orchestrator/external_command.h"
#include "orchestrator/job_spec.h"
#include "orchestrator/metrics_scrape.h"

namespace rd::orch {

namespace {

// A link that runs at less than this share of its expected rate is called slow.
constexpr double kSlowShare = 0.5;
// A clock further off than this makes the timelines of one step hard to read together.
constexpr double kSkewNoteS = 0.05;

// This end of @p fd: "ADDRESS on INTERFACE", the route the kernel chose toward the reducer.
std::string localEnd(int fd) {
  sockaddr_storage local{};
  socklen_t len = sizeof local;
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) != 0) return "";
  char host[NI_MAXHOST] = {};
  if (getnameinfo(reinterpret_cast<sockaddr*>(&local), len, host, sizeof host, nullptr, 0,
                  NI_NUMERICHOST) != 0) {
    return "";
  }
  std::string where = host;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return where;
  for (ifaddrs* i = list; i != nullptr; i = i->ifa_next) {
    if (i->ifa_addr == nullptr || i->ifa_addr->sa_family != local.ss_family) continue;
    char other[NI_MAXHOST] = {};
    const socklen_t size =
        i->ifa_addr->sa_family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
    if (getnameinfo(i->ifa_addr, size, other, sizeof other, nullptr, 0, NI_NUMERICHOST) == 0 &&
        where == other) {
      where += std::string(" on ") + i->ifa_name;
      break;
    }
  }
  freeifaddrs(list);
  return where;
}

// "PROBE OK ... gbps=X" or "PROBE FAILED ... status=S: why" (reduce_probe.cc).
void readProbe(const std::string& out, const std::string& err, int code, ReducerCheck* c) {
  const size_t ok = out.find("PROBE OK ");
  if (code == 0 && ok != std::string::npos) {
    const size_t g = out.find(" gbps=", ok);
    c->joined = g != std::string::npos;
    c->gbps = c->joined ? std::strtod(out.c_str() + g + 6, nullptr) : 0;
    const size_t t = out.find(" transports=", ok);
    if (t != std::string::npos) {
      c->transports = trimSpace(out.substr(t + 12, out.find('\n', t) - (t + 12)));
    }
    if (c->joined) return;
  }
  const size_t failed = out.find("status=");
  std::string why = failed != std::string::npos ? trimSpace(out.substr(failed + 7))
                    : code == 124               ? "the probe did not finish in time"
                                                : "the probe failed: " + trimSpace(out + err);
  if (why.rfind("authentication failed", 0) == 0) {
    c->problem = "refuses the job's secret (" + why + ")";
  } else {
    c->problem = "was reached, but the probe through it failed: " + why;
  }
}

// "tcp/eth0 x3, sysv/memory+cma/memory x1": the reducer's connections by what carries them.
std::string connectionsByTransport(const std::map<std::string, double>& samples) {
  const std::string family = "libreduce_reducer_connections_by_transport{";
  std::string text;
  for (auto it = samples.lower_bound(family);
       it != samples.end() && it->first.compare(0, family.size(), family) == 0; ++it) {
    if (it->second <= 0) continue;
    text += (text.empty() ? "" : ", ") + labelValue(it->first, "transports") + " x" +
            std::to_string(static_cast<long long>(it->second));
  }
  return text;
}

// A slow link carried by TCP alone often means RDMA was not chosen: say where to look.
std::string tcpOnlyHint(const std::string& transports) {
  if (transports.empty()) return "";
  std::stringstream lanes(transports.substr(0, transports.find(' ')));
  std::string lane;
  while (std::getline(lanes, lane, '+')) {
    if (lane.rfind("tcp/", 0) != 0) return "";
  }
  return " (it runs over TCP only: if the hosts have RDMA NICs, check UCX_TLS and that UCX sees "
         "them, `ucx_info -d`)";
}

// A rate or a time, to about three figures: "25", "3.14", "0.095".
std::string figureText(double value) {
  char text[32];
  std::snprintf(text, sizeof text, value >= 10 ? "%.0f" : value >= 1 ? "%.2f" : "%.3f", value);
  return text;
}

}  // namespace

std::vector<ReducerCheck> checkReducers(const DoctorInput& input) {
  std::vector<ReducerCheck> checks;
  for (size_t i = 0; i < input.reducers.size(); ++i) {
    ReducerCheck c;
    c.address = input.reducers[i];
    std::string why;
    int fd = connectWithin(c.address, &why);
    c.reachable = fd >= 0;
    if (fd >= 0) {
      c.via = localEnd(fd);
      close(fd);
    }
    if (!c.reachable) {
      c.problem = "is not reachable: " + why +
                  " (is it running, and does this address reach it "
                  "from this host?)";
    } else {
      std::vector<std::string> argv = {input.probe_program,
                                       "--reducer",
                                       c.address,
                                       "--mib",
                                       std::to_string(input.probe_mib),
                                       "--iters",
                                       std::to_string(input.probe_iters),
                                       "--timeout-ms",
                                       std::to_string(input.timeout_s * 500)};
      if (!input.secret_file.empty()) {
        argv.insert(argv.end(), {"--secret-file", input.secret_file});
      }
      std::string out, err;
      int code = runCommand(argv, &out, &err, input.timeout_s);
      if (code < 0) {
        c.problem = "could not be probed: " + input.probe_program + ": " + err;
      } else {
        readProbe(out, err, code, &c);
      }
      if (c.joined && input.expect_gbps > 0 && c.gbps < kSlowShare * input.expect_gbps) {
        c.problem = "is slow: measured " + figureText(c.gbps) + " Gbit/s each way" +
                    (c.transports.empty() ? "" : " over " + c.transports) + ", expected " +
                    figureText(input.expect_gbps) + " (" + input.expect_source +
                    "); check the link between this host and it" + tcpOnlyHint(c.transports);
      }
    }
    std::map<std::string, double> samples;
    double asked_at = 0;
    std::string scrape_error;
    if (i < input.metrics.size() && !input.metrics[i].empty() &&
        scrapeMetrics(input.metrics[i], &samples, &asked_at, &scrape_error)) {
      if (samples.count("libreduce_reducer_clock_seconds") != 0) {
        c.has_skew = true;
        c.skew_s = samples["libreduce_reducer_clock_seconds"] - asked_at;
      }
      c.reducer_transports = connectionsByTransport(samples);
    }
    checks.push_back(std::move(c));
  }
  return checks;
}

std::string describeChecks(const DoctorInput& input, const std::vector<ReducerCheck>& checks) {
  std::ostringstream out;
  out << "reducectl doctor: " << checks.size() << " reducer" << (checks.size() == 1 ? "" : "s")
      << ", probes of " << input.probe_mib << " MiB";
  if (input.expect_gbps > 0) out << ", expecting " << figureText(input.expect_gbps) << " Gbit/s";
  out << "\n";
  int unhealthy = 0;
  std::vector<std::string> notes;
  for (size_t i = 0; i < checks.size(); ++i) {
    const ReducerCheck& c = checks[i];
    const std::string name = "reducer " + std::to_string(i) + " (" + c.address + ")";
    out << "  " << name << ": " << (c.problem.empty() ? "healthy" : "PROBLEM");
    if (!c.problem.empty()) ++unhealthy;
    if (c.joined) {
      out << ": joined with the job's secret, " << figureText(c.gbps) << " Gbit/s each way";
    } else if (c.reachable) {
      out << ": reachable, not joined";
    } else {
      out << ": not reachable";
    }
    out << "\n";
    if (!c.via.empty()) out << "    reached from " << c.via << "\n";
    if (!c.transports.empty()) out << "    carried by " << c.transports << " (UCX, from here)\n";
    if (!c.reducer_transports.empty()) {
      out << "    its connections: " << c.reducer_transports << " (UCX, its side)\n";
    }
    if (c.has_skew) {
      char skew[96];
      std::snprintf(skew, sizeof skew, "    clock %+.3f s from this host's\n", c.skew_s);
      out << skew;
      if (std::fabs(c.skew_s) > kSkewNoteS) {
        notes.push_back(name + "'s clock is " + figureText(std::fabs(c.skew_s)) + " s " +
                        (c.skew_s > 0 ? "ahead of" : "behind") +
                        " this host's: its timeline will not line up with the workers'");
      }
    }
  }
  if (unhealthy == 0) {
    out << "verdict: every reducer is healthy\n";
  } else {
    out << "verdict: " << unhealthy << " of " << checks.size() << " reducers need attention\n";
    for (size_t i = 0; i < checks.size(); ++i) {
      if (checks[i].problem.empty()) continue;
      out << "  - reducer " << i << " (" << checks[i].address << ") " << checks[i].problem << "\n";
    }
  }
  for (const std::string& n : notes) out << "  note: " << n << "\n";
  return out.str();
}

namespace {

std::vector<std::string> splitList(const std::string& text) {
  std::vector<std::string> items;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) items.push_back(trimSpace(item));
  return items;
}

int usageError(const std::string& why) {
  std::fprintf(stderr,
               "reducectl doctor: %s\nusage: reducectl doctor (SPEC | --reducers HOST:PORT,...) "
               "[--secret-file PATH] [--metrics HOST:PORT,...] [--expect-gbps G] [--probe-mib M] "
               "[--reduce-probe PATH]\n",
               why.c_str());
  return 2;
}

// A spec attached to a shared pool names the reducers, the key and the NICs.
bool fromSpec(const std::string& path, DoctorInput* input, std::string* why) {
  JobSpec spec;
  if (!loadJobSpec(path, &spec, why)) return false;
  if (!spec.reducer_pool.attached()) {
    *why = path +
           " starts its own reducers when it runs: point doctor at running reducers "
           "with --reducers and --secret-file";
    return false;
  }
  input->reducers = spec.reducer_pool.addresses;
  input->secret_file = spec.reducer_pool.key_file;
  // One probe stream runs from this host to one reducer: the workers' NIC bounds it.
  input->expect_gbps = spec.pool(PoolKind::kWorkers).nic_gbps;
  if (input->expect_gbps == 0) input->expect_gbps = spec.pool(PoolKind::kPrimary).nic_gbps;
  input->expect_source = "the workers' resources.nicGbps";
  return true;
}

}  // namespace

int runDoctorCommand(int argc, char** argv, const std::string& default_probe) {
  DoctorInput input;
  input.probe_program = default_probe;
  double expect = -1;
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    const bool has_value = i + 1 < argc;
    if (a.rfind("--", 0) != 0) {
      std::string why;
      if (!fromSpec(a, &input, &why)) return usageError(why);
    } else if (!has_value) {
      return usageError(a + " needs a value");
    } else if (a == "--reducers") {
      input.reducers = splitList(argv[++i]);
    } else if (a == "--metrics") {
      input.metrics = splitList(argv[++i]);
    } else if (a == "--secret-file") {
      input.secret_file = argv[++i];
    } else if (a == "--expect-gbps") {
      expect = std::atof(argv[++i]);
      if (!(expect > 0)) return usageError("--expect-gbps must be a rate above 0");
    } else if (a == "--probe-mib") {
      input.probe_mib = std::atoi(argv[++i]);
      if (input.probe_mib < 1 || input.probe_mib > 4096) {
        return usageError("--probe-mib must be 1..4096");
      }
    } else if (a == "--reduce-probe") {
      input.probe_program = argv[++i];
    } else {
      return usageError("unknown option " + a);
    }
  }
  if (expect > 0) {
    input.expect_gbps = expect;
    input.expect_source = "--expect-gbps";
  }
  // Run as a rank of a job, the job's own reducers and secret are the defaults.
  const char* env_reducers = std::getenv("LIBREDUCE_REDUCERS");
  const char* env_secret = std::getenv("LIBREDUCE_SECRET_FILE");
  if (input.reducers.empty() && env_reducers != nullptr) input.reducers = splitList(env_reducers);
  if (input.secret_file.empty() && env_secret != nullptr) input.secret_file = env_secret;
  if (input.reducers.empty()) {
    return usageError("no reducers: give a SPEC or --reducers (or LIBREDUCE_REDUCERS)");
  }
  const std::vector<ReducerCheck> checks = checkReducers(input);
  std::fputs(describeChecks(input, checks).c_str(), stdout);
  for (const ReducerCheck& c : checks) {
    if (!c.problem.empty()) return 1;
  }
  return 0;
}

}  // namespace rd::orch
