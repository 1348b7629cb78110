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

/**
 * The communicator id a job's text id names (LIBREDUCE_COMM_ID, else MASTER_ADDR:MASTER_PORT):
 * its FNV-1a digest, never 0. Also a stable digest of any text.
 */
uint64_t commIdOfText(const std::string& text);

/**
 * The key of one communicator under a shared reducer pool's secret: lower-case hex of
 * HMAC-SHA256(@p pool_secret, "libreduce-job-key-v1" | @p comm_id as 8 little-endian bytes).
 * A job's workers hold only this key (as their job secret); a reducer that holds the pool secret
 * derives it from the communicator a connection names, so one job's key admits that
 * communicator only, and the pool secret never leaves the reducers.
 */
std::string jobKey(const std::string& pool_secret, uint64_t comm_id);

/** Constant-time comparison of two proofs. */
bool equal(const Mac& a, const Mac& b);

/**
 * The secret from LIBREDUCE_SECRET, else the first line of LIBREDUCE_SECRET_FILE, else "".
 * An unreadable secret file is an error.
 */
rdResult_t secretFromSettings(std::string* out);

/**
 * False, with why and the chmod that fixes it, when group or others can access the secret file
 * @p path (as ssh refuses such a key); true otherwise, also when it cannot be read (reading it
 * then says why).
 */
bool privateFile(const std::string& path, std::string* error);

/** First line of @p path (without the newline); rdInvalidArgument naming the file if unreadable. */
rdResult_t readSecretFile(const std::string& path, std::string* out);

}  // namespace rd::auth
