// SPDX-License-Identifier: BSD-3-Clause
// The nccl-tests flags, parsed once for every perf program.
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "perf/perf_runner.h"

namespace rd::perf {

namespace {

// "64M", "4K", "1G" (powers of 1024, as nccl-tests reads them) or plain bytes.
bool parseSize(const std::string& text, size_t* out) {
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || v < 0) return false;
  std::string unit(end);
  double scale = 1;
  if (unit == "K" || unit == "k")
    scale = 1024;
  else if (unit == "M" || unit == "m")
    scale = 1024.0 * 1024;
  else if (unit == "G" || unit == "g")
    scale = 1024.0 * 1024 * 1024;
  else if (!unit.empty())
    return false;
  *out = static_cast<size_t>(v * scale);
  return true;
}

bool parseInt(const std::string& text, int lo, int hi, int* out) {
  char* end = nullptr;
  long v = std::strtol(text.c_str(), &end, 10);
  if (end == text.c_str() || *end != '\0' || v < lo || v > hi) return false;
  *out = static_cast<int>(v);
  return true;
}

bool parseDtypes(const std::string& text, std::vector<rdDataType_t>* out) {
  out->clear();
  for (int d = 0; d < rdNumDataTypes; ++d) {
    if (text == "all" || text == rdDataTypeName(static_cast<rdDataType_t>(d))) {
      out->push_back(static_cast<rdDataType_t>(d));
    }
  }
  // nccl-tests spellings.
  if (text == "float" || text == "float32") out->assign(1, rdFloat32);
  if (text == "double") out->assign(1, rdFloat64);
  if (text == "half") out->assign(1, rdFloat16);
  if (text == "int") out->assign(1, rdInt32);
  return !out->empty();
}

bool parseOps(const std::string& text, std::vector<rdRedOp_t>* out) {
  out->clear();
  for (int o = 0; o < rdNumRedOps; ++o) {
    if (text == "all" || text == rdRedOpName(static_cast<rdRedOp_t>(o))) {
      out->push_back(static_cast<rdRedOp_t>(o));
    }
  }
  return !out->empty();
}

bool parseColl(const std::string& text, Coll* out) {
  for (Coll c : {Coll::kAllReduce, Coll::kReduceScatter, Coll::kAllGather, Coll::kBroadcast}) {
    if (text == collName(c)) {
      *out = c;
      return true;
    }
  }
  return false;
}

// Long spellings of nccl-tests mapped to the short flags.
std::string shortFlag(const std::string& flag) {
  static const char* const kLong[][2] = {
      {"--minbytes", "-b"},    {"--maxbytes", "-e"},     {"--stepfactor", "-f"},
      {"--stepbytes", "-i"},   {"--datatype", "-d"},     {"--op", "-o"},
      {"--iters", "-n"},       {"--warmup_iters", "-w"}, {"--check", "-c"},
      {"--average", "-a"},     {"--root", "-r"},         {"--blocking", "-z"},
      {"--output_file", "-J"}, {"--nthreads", "-t"},     {"--ngpus", "-g"}};
  for (const auto& pair : kLong) {
    if (flag == pair[0]) return pair[1];
  }
  return flag;
}

}  // namespace

const char* collName(Coll c) {
  switch (c) {
    case Coll::kAllReduce: return "allreduce";
    case Coll::kReduceScatter: return "reducescatter";
    case Coll::kAllGather: return "allgather";
    case Coll::kBroadcast: return "broadcast";
  }
  return "?";
}

void usage(const char* program, const char* extra_help) {
  std::printf(
      "usage: %s [flags]\n"
      "  -b, --minbytes SIZE     smallest buffer (bytes; K/M/G suffixes), default 32M\n"
      "  -e, --maxbytes SIZE     largest buffer, default 32M\n"
      "  -f, --stepfactor F      multiply the size by F each step, default 2\n"
      "  -i, --stepbytes SIZE    add SIZE each step instead\n"
      "  -d, --datatype T        int8 uint8 int32 uint32 int64 uint64 float16 bfloat16 float32\n"
      "                          float64 or all, default float32\n"
      "  -o, --op OP             sum prod min max avg or all, default sum\n"
      "  -n, --iters N           timed iterations, default 20\n"
      "  -w, --warmup_iters N    warm-up iterations, default 5\n"
      "  -c, --check 0|1         verify results (exact inputs, #wrong column), default 1\n"
      "  -a, --average 0-3       time over ranks: 0 rank 0, 1 mean, 2 min, 3 max; default 1\n"
      "  -r, --root R            broadcast root, default 0\n"
      "  -z, --blocking 0|1      accepted for compatibility (calls always block)\n"
      "  -J, --output_file PATH  rank 0 writes every measurement as JSON\n"
      "  -t, -g 1                accepted for compatibility (one thread, no GPU)\n"
      "  --coll C                allreduce reducescatter allgather broadcast, default allreduce\n"
      "%s"
      "Ranks come from RANK / WORLD_SIZE (torchrun, the local job launcher), Open MPI's\n"
      "OMPI_COMM_WORLD_RANK / _SIZE, PMI_RANK / PMI_SIZE or SLURM_PROCID / SLURM_NTASKS.\n",
      program, extra_help);
}

bool parseOptions(int argc, char** argv, const std::vector<std::string>& extra_flags, Options* out,
                  std::string* error) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string flag = shortFlag(argv[i]);
    bool extra = false;
    for (const auto& e : extra_flags) extra = extra || flag == e;
    if (flag == "-h" || flag == "--help") {
      *error = "help";
      return false;
    }
    if (i + 1 >= argc) {
      *error = "flag " + flag + " needs a value";
      return false;
    }
    std::string v = argv[++i];
    bool ok = true;
    int ignored = 0;
    if (extra) {
      o.extra.push_back(flag);
      o.extra.push_back(v);
    } else if (flag == "-b") {
      ok = parseSize(v, &o.min_bytes);
    } else if (flag == "-e") {
      ok = parseSize(v, &o.max_bytes);
    } else if (flag == "-f") {
      o.factor = std::atof(v.c_str());
      ok = o.factor > 1;
    } else if (flag == "-i") {
      ok = parseSize(v, &o.step_bytes) && o.step_bytes > 0;
    } else if (flag == "-d") {
      ok = parseDtypes(v, &o.dtypes);
    } else if (flag == "-o") {
      ok = parseOps(v, &o.ops);
    } else if (flag == "-n") {
      ok = parseInt(v, 1, 1 << 30, &o.iters);
    } else if (flag == "-w") {
      ok = parseInt(v, 0, 1 << 30, &o.warmup);
    } else if (flag == "-c") {
      ok = parseInt(v, 0, 1 << 30, &o.check);
    } else if (flag == "-a") {
      ok = parseInt(v, 0, 3, &o.average);
    } else if (flag == "-r") {
      ok = parseInt(v, 0, 1 << 30, &o.root);
    } else if (flag == "-z") {
      ok = parseInt(v, 0, 1, &ignored);
    } else if (flag == "-J") {
      o.json_path = v;
    } else if (flag == "-t" || flag == "-g") {
      ok = parseInt(v, 1, 1, &ignored);
    } else if (flag == "--coll") {
      ok = parseColl(v, &o.coll);
    } else {
      *error = "unknown flag " + flag;
      return false;
    }
    if (!ok) {
      *error = "bad value '" + v + "' for " + flag;
      return false;
    }
  }
  if (o.min_bytes > o.max_bytes) {
    *error = "-b is larger than -e";
    return false;
  }
  *out = o;
  return true;
}

int parseCommandLine(int argc, char** argv, const char* program,
                     const std::vector<std::string>& extra_flags, const char* extra_help,
                     bool print, Options* out) {
  std::string error;
  if (parseOptions(argc, argv, extra_flags, out, &error)) {
    out->program = program;
    return -1;
  }
  if (print) {
    usage(argv[0], extra_help);
    if (error != "help") std::fprintf(stderr, "%s: %s\n", program, error.c_str());
  }
  return error == "help" ? 0 : 2;
}

}  // namespace rd::perf
