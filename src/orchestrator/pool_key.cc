// SPDX-License-Identifier: BSD-3-Clause
#include "orchestrator/pool_key.h"

#include <cstdio>
#include <string>

#include "common/auth.h"
#include "orchestrator/job_files.h"

namespace rd::orch {
namespace {

int usageError(const std::string& why) {
  std::fprintf(stderr,
               "reducectl pool: %s\n"
               "usage: reducectl pool key COMM_ID --secret-file POOL_SECRET [--out FILE]\n",
               why.c_str());
  return 2;
}

}  // namespace

bool readPoolKey(const ReducerPoolRef& pool, std::string* key, std::string* error) {
  std::string why;
  if (!auth::privateFile(pool.key_file, &why)) {
    *error = "reducerPool.keyFile: " + why;
    return false;
  }
  if (auth::readSecretFile(pool.key_file, key) != rdSuccess || key->empty()) {
    *error = "reducerPool.keyFile: no job key in " + pool.key_file +
             " (make one with reducectl pool key " + pool.comm_id + " --out FILE)";
    return false;
  }
  return true;
}

int runPoolCommand(int argc, char** argv) {
  if (argc < 3 || std::string(argv[2]) != "key") return usageError("the one pool command is key");
  std::string comm_id, secret_file, out;
  for (int i = 3; i < argc; ++i) {
    std::string a = argv[i];
    if ((a == "--secret-file" || a == "--out") && i + 1 < argc) {
      (a == "--out" ? out : secret_file) = argv[++i];
    } else if (a.rfind("--", 0) == 0) {
      return usageError("unknown option or missing value: " + a);
    } else if (comm_id.empty()) {
      comm_id = a;
    } else {
      return usageError("one COMM_ID only");
    }
  }
  if (comm_id.empty() || secret_file.empty()) {
    return usageError("needs COMM_ID and --secret-file");
  }
  std::string error, pool_secret;
  if (!auth::privateFile(secret_file, &error)) return usageError(error);
  if (auth::readSecretFile(secret_file, &pool_secret) != rdSuccess || pool_secret.empty()) {
    return usageError("cannot read a pool secret from " + secret_file);
  }
  std::string key = auth::jobKey(pool_secret, auth::commIdOfText(comm_id)) + "\n";
  if (out.empty()) {
    std::fputs(key.c_str(), stdout);
    return 0;
  }
  if (!createPrivateFile(out, key, "", &error))
    return usageError(error + " (it must not exist yet)");
  return 0;
}

}  // namespace rd::orch
