// SPDX-License-Identifier: BSD-3-Clause
#include "orchestrator/trace_merge.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>

#include "orchestrator/job_files.h"

namespace rd::orch {

namespace {

// One process's timeline, as trace.cc writes it: "[", one event per line (a comma after all but
// the last), "]". Anything else is refused: the merge never passes on what it cannot vouch for.
struct Timeline {
  std::string path;
  std::string process;  // its process_name
  std::vector<std::string> events;
};

bool readTimeline(const std::string& path, Timeline* out, std::string* why) {
  std::ifstream in(path);
  if (!in) {
    *why = "cannot be read";
    return false;
  }
  std::string line;
  if (!std::getline(in, line) || line != "[") {
    *why = "not a libreduce timeline (it does not start with '[')";
    return false;
  }
  static const std::regex kEvent(R"(^\{"name": "[^"]*", ("cat"|"ph").*"pid": [0-9]+, .*\}$)");
  static const std::regex kProcess(R"re("name": "process_name".*"args": \{"name": "([^"]*)")re");
  bool closed = false;
  while (std::getline(in, line)) {
    if (line == "]") {
      closed = true;
      break;
    }
    if (!line.empty() && line.back() == ',') line.pop_back();
    if (!std::regex_match(line, kEvent)) {
      *why = "line " + std::to_string(out->events.size() + 2) + " is not a trace event";
      return false;
    }
    std::smatch m;
    if (out->process.empty() && std::regex_search(line, m, kProcess)) out->process = m[1];
    out->events.push_back(line);
  }
  if (!closed) {
    *why = "cut short (no closing ']'): the process may still be writing it";
    return false;
  }
  out->path = path;
  return true;
}

bool isDirectory(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::vector<std::string> timelineFiles(const std::string& dir) {
  std::vector<std::string> files;
  for (const std::string& name : sortedEntries(dir)) {
    if (name.rfind("libreduce-", 0) == 0 && name.size() > 5 &&
        name.compare(name.size() - 5, 5, ".json") == 0) {
      files.push_back(dir);
      files.back().append("/").append(name);
    }
  }
  return files;
}

// Ranks first in rank order ("rank R of N"), then the reducers, then anything else.
long sortIndex(const std::string& process) {
  if (process.rfind("rank ", 0) == 0) return std::atol(process.c_str() + 5);
  if (process.rfind("reducer", 0) == 0) return 1000000;
  return 2000000;
}

}  // namespace

bool mergeTraces(const std::vector<std::string>& inputs, const std::string& output,
                 TraceMergeReport* report, std::string* error) {
  std::vector<std::string> files;
  for (const std::string& in : inputs) {
    if (isDirectory(in)) {
      for (std::string& f : timelineFiles(in)) files.push_back(std::move(f));
    } else {
      files.push_back(in);
    }
  }
  std::vector<Timeline> timelines;
  for (const std::string& f : files) {
    Timeline t;
    std::string why;
    if (readTimeline(f, &t, &why)) {
      timelines.push_back(std::move(t));
    } else {
      report->refused.push_back(f);
      report->refused.back().append(": ").append(why);
    }
  }
  if (timelines.empty()) {
    *error = files.empty() ? "no libreduce-*.json timeline found" : "no timeline could be read";
    return false;
  }
  std::stable_sort(timelines.begin(), timelines.end(), [](const Timeline& a, const Timeline& b) {
    return sortIndex(a.process) < sortIndex(b.process);
  });
  static const std::regex kPid(R"("pid": [0-9]+,)");
  std::ostringstream out;
  out << "[";
  bool first = true;
  for (size_t i = 0; i < timelines.size(); ++i) {
    const std::string pid = "\"pid\": " + std::to_string(i + 1) + ",";
    out << (first ? "\n" : ",\n") << R"({"name": "process_sort_index", "ph": "M", )" << pid
        << R"( "tid": 0, "args": {"sort_index": )" << i << "}}";
    first = false;
    for (const std::string& event : timelines[i].events) {
      out << ",\n" << std::regex_replace(event, kPid, pid, std::regex_constants::format_first_only);
    }
  }
  out << "\n]\n";
  const std::string tmp = output + ".tmp";
  std::ofstream file(tmp, std::ios::trunc);
  file << out.str();
  file.close();
  if (!file || std::rename(tmp.c_str(), output.c_str()) != 0) {
    std::remove(tmp.c_str());
    *error = "cannot write " + output;
    return false;
  }
  report->files = static_cast<int>(timelines.size());
  return true;
}

int runTraceCommand(int argc, char** argv) {
  const char* usage =
      "usage: reducectl trace merge INPUT... -o FILE (INPUT: a LIBREDUCE_TRACE "
      "directory or a timeline file)\n";
  if (argc < 3 || std::string(argv[2]) != "merge") {
    std::fputs(usage, stderr);
    return 2;
  }
  std::vector<std::string> inputs;
  std::string output;
  for (int i = 3; i < argc; ++i) {
    std::string a = argv[i];
    if ((a == "-o" || a == "--output") && i + 1 < argc) {
      output = argv[++i];
    } else if (!a.empty() && a[0] == '-') {
      std::fprintf(stderr, "reducectl trace merge: unknown option %s\n%s", a.c_str(), usage);
      return 2;
    } else {
      inputs.push_back(a);
    }
  }
  if (inputs.empty() || output.empty()) {
    std::fputs(usage, stderr);
    return 2;
  }
  TraceMergeReport report;
  std::string error;
  bool ok = mergeTraces(inputs, output, &report, &error);
  for (const std::string& r : report.refused) {
    std::fprintf(stderr, "reducectl trace merge: left out %s\n", r.c_str());
  }
  if (!ok) {
    std::fprintf(stderr, "reducectl trace merge: %s\n", error.c_str());
    return 1;
  }
  std::printf("merged %d timelines into %s\n", report.files, output.c_str());
  return 0;
}

}  // namespace rd::orch
