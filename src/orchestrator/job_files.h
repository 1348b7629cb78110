// SPDX-License-Identifier: BSD-3-Clause
// What a local job owns outside its processes: its id, its output directory, the job secret (a
// private temporary directory, never the output directory, which may be shared) and the TCP
// ports its replicas are given.
#pragma once

#include <set>
#include <string>
#include <utility>
#include <vector>

namespace rd::orch {

/** NAME-YYYYMMDD-HHMMSS-XXXX (XXXX random hex): unique enough for concurrent local jobs. */
std::string makeJobId(const std::string& name);

/** The names in @p dir but hidden ones (".", "..", ".x"), sorted; none when it cannot be read. */
std::vector<std::string> sortedEntries(const std::string& dir);

/** mkdir -p; false with @p error naming the directory and the reason. */
bool makeDirectories(const std::string& path, std::string* error);

/**
 * Creates a 0700 temporary directory holding "secret" (0600, 32 random bytes as hex). Sets
 * @p dir and @p secret_file.
 */
bool makeSecret(std::string* dir, std::string* secret_file, std::string* error);

/** A fresh job secret: 32 random bytes as hex; empty if the system gave no randomness. */
std::string newSecret();

/**
 * Creates @p path holding @p text, readable by its owner only: exclusively, so never through a
 * link or into a file that exists. False with "cannot create|write @p what PATH..." otherwise.
 */
bool createPrivateFile(const std::string& path, const std::string& text, const std::string& what,
                       std::string* error);

/** Writes a fresh job secret (32 random bytes as hex) to @p path, readable by its owner only. */
bool writeSecretFile(const std::string& path, std::string* error);

/** The address= a reducer's ready file holds once its line is complete; "" until then. */
std::string readyAddress(const std::string& ready_file);

/** The @p key= field (address, metrics, pid) of that line; "" until then or without it. */
std::string readyField(const std::string& ready_file, const std::string& key);

/**
 * A TCP port on 127.0.0.1 (every address with @p any_address) that is free now and not in @p given;
 * with @p pair, PORT + 1 is free too (rank 0 serves the ring rendezvous there, MASTER_PORT itself
 * is left to the training program's own store). The port (and PORT + 1) is added to @p given. 0
 * when none is found.
 */
int reserveLocalPort(bool pair, std::set<int>* given, bool any_address = false);

/** Writes @p text to @p path through a temporary file and a rename: readers see all or nothing. */
bool writeFileAtomically(const std::string& path, const std::string& text);

/** @p path made absolute against the working directory (replicas may run elsewhere). */
std::string absolutePath(const std::string& path);

/**
 * The environment @p env (environ) as pairs, less what reducectl sets for each replica
 * (managedVariables()) and less LIBREDUCE_SECRET: a replica never inherits a secret by value.
 */
std::vector<std::pair<std::string, std::string>> inheritedEnvironment(char** env);

}  // namespace rd::orch
