// SPDX-License-Identifier: BSD-3-Clause
#include "common/auth.h"

#include <sys/stat.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include "common/settings.h"
#include "common/status.h"

namespace rd::auth {

void initCrypto() {
  // With the configuration, as the first RAND_bytes would: that is when OpenSSL registers its
  // exit-time clean-up.
  OPENSSL_init_crypto(OPENSSL_INIT_LOAD_CONFIG, nullptr);
}

rdResult_t randomBytes(void* out, size_t len) {
  if (RAND_bytes(static_cast<unsigned char*>(out), static_cast<int>(len)) != 1) {
    return setError(rdSystemError, "no random bytes available (OpenSSL RAND_bytes failed)");
  }
  return rdSuccess;
}

Nonce makeNonce() {
  Nonce n{};
  if (randomBytes(n.data(), n.size()) != rdSuccess) {
    // Without entropy the join still works; the proof is only as fresh as the peer's nonce.
    n.fill(0);
  }
  return n;
}

Mac prove(Role role, const std::string& secret, uint64_t comm_id, uint32_t rank, uint32_t nranks,
          const Nonce& worker_nonce, const Nonce& reducer_nonce) {
  std::string msg = role == Role::kWorker ? "libreduce-worker-v1" : "libreduce-reducer-v1";
  msg.append(reinterpret_cast<const char*>(&comm_id), sizeof comm_id);
  msg.append(reinterpret_cast<const char*>(&rank), sizeof rank);
  msg.append(reinterpret_cast<const char*>(&nranks), sizeof nranks);
  msg.append(reinterpret_cast<const char*>(worker_nonce.data()), worker_nonce.size());
  msg.append(reinterpret_cast<const char*>(reducer_nonce.data()), reducer_nonce.size());
  return hmac(secret, msg);
}

Mac hmac(const std::string& secret, const std::string& message) {
  Mac mac{};
  unsigned int len = 0;
  // HMAC accepts an empty key; an empty secret still yields a well-defined proof.
  static const unsigned char kEmpty = 0;
  const void* key = secret.empty() ? static_cast<const void*>(&kEmpty) : secret.data();
  HMAC(EVP_sha256(), key, static_cast<int>(secret.size()),
       reinterpret_cast<const unsigned char*>(message.data()), message.size(), mac.data(), &len);
  return mac;
}

uint64_t commIdOfText(const std::string& text) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h == 0 ? 1 : h;
}

std::string jobKey(const std::string& pool_secret, uint64_t comm_id) {
  std::string message = "libreduce-job-key-v1";
  for (int i = 0; i < 8; ++i) message += static_cast<char>((comm_id >> (8 * i)) & 0xff);
  Mac mac = hmac(pool_secret, message);
  static const char kHex[] = "0123456789abcdef";
  std::string key;
  for (uint8_t b : mac) {
    key += kHex[b >> 4];
    key += kHex[b & 0xf];
  }
  return key;
}

bool equal(const Mac& a, const Mac& b) {
  return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

bool privateFile(const std::string& path, std::string* error) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0 || (st.st_mode & 077) == 0) return true;
  char mode[8];
  std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
  *error = "the secret file " + path + " is accessible by group or others (mode " + mode +
           "): make it readable by its owner only (chmod 600 " + path + ")";
  return false;
}

rdResult_t readSecretFile(const std::string& path, std::string* out) {
  std::ifstream in(path);
  if (!in) {
    return setErrorf(rdInvalidArgument, "cannot read the secret file %s: %s", path.c_str(),
                     std::strerror(errno));
  }
  std::string line;
  std::getline(in, line);
  if (!line.empty() && line.back() == '\r') line.pop_back();
  *out = line;
  return rdSuccess;
}

rdResult_t secretFromSettings(std::string* out) {
  out->clear();
  if (settings::isSetInEnv(settings::Id::kSecret)) {
    *out = settings::rawValue(settings::Id::kSecret);
    return rdSuccess;
  }
  if (settings::isSetInEnv(settings::Id::kSecretFile)) {
    return readSecretFile(settings::rawValue(settings::Id::kSecretFile), out);
  }
  return rdSuccess;
}

}  // namespace rd::auth
