// SPDX-License-Identifier: BSD-3-Clause
// Job-secret authentication: both sides of a join prove they know the secret with an
// HMAC-SHA256 over fresh nonces from each side, so neither the secret nor a replayable proof
// ever crosses the network.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "libreduce/reduce.h"

namespace rd::auth {

using Nonce = std::array<uint8_t, 32>;
using Mac = std::array<uint8_t, 32>;

enum class Role { kWorker, kReducer };

/**
 * Initializes OpenSSL now. Its clean-up runs at exit, in the reverse order of registration: an
 * object that lives until exit and runs a thread using OpenSSL (the in-process rendezvous) must
 * be made after this, so that its thread ends while OpenSSL can still free that thread's state.
 */
void initCrypto();

/** Fills @p out from the kernel's random source. */
rdResult_t randomBytes(void* out, size_t len);

/** A fresh random nonce. */
Nonce makeNonce();

/** The proof @p role sends: HMAC(secret, role | comm_id | rank | nranks | both nonces). */
Mac prove(Role role, const std::string& secret, uint64_t comm_id, uint32_t rank, uint32_t nranks,
          const Nonce& worker_nonce, const Nonce& reducer_nonce);

/** HMAC-SHA256 of @p message keyed with @p secret (an empty secret is a valid key). */
Mac hmac(const std::string& secret, const std::string& message);

/** Constant-time comparison of two proofs. */
bool equal(const Mac& a, const Mac& b);

/**
 * The secret from LIBREDUCE_SECRET, else the first line of LIBREDUCE_SECRET_FILE, else "".
 * An unreadable secret file is an error.
 */
rdResult_t secretFromSettings(std::string* out);

/** First line of @p path (without the newline); rdInvalidArgument naming the file if unreadable. */
rdResult_t readSecretFile(const std::string& path, std::string* out);

}  // namespace rd::auth
