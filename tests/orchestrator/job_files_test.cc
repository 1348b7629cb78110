// SPDX-License-Identifier: BSD-3-Clause
// The job secret file reducectl writes: a fresh file of its own, readable by its owner only,
// never through a link or a file someone else left at its path.
#include "orchestrator/job_files.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <string>

namespace rd::orch {
namespace {

class SecretFile : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/rd-secret-test-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
  }
  void TearDown() override {
    for (const char* name : {"/secret", "/victim"}) unlink((dir_ + name).c_str());
    rmdir(dir_.c_str());
  }
  static std::string read(const std::string& path) {
    std::ifstream in(path);
    std::string line;
    std::getline(in, line);
    return line;
  }
  static mode_t mode(const std::string& path) {
    struct stat st {};
    lstat(path.c_str(), &st);
    return st.st_mode;
  }
  std::string dir_;
};

TEST_F(SecretFile, IsFreshAndPrivate) {
  std::string path = dir_ + "/secret", error;
  ASSERT_TRUE(writeSecretFile(path, &error)) << error;
  std::string first = read(path);
  EXPECT_EQ(first.size(), 64u);
  EXPECT_TRUE(S_ISREG(mode(path)));
  EXPECT_EQ(mode(path) & 0777, 0600u);
  ASSERT_TRUE(writeSecretFile(path, &error)) << error;  // a stale one is replaced
  EXPECT_NE(read(path), first);
}

TEST_F(SecretFile, NeverWritesThroughALinkOrAnOpenFile) {
  std::string path = dir_ + "/secret", victim = dir_ + "/victim", error;
  std::ofstream(victim) << "precious\n";
  ASSERT_EQ(symlink(victim.c_str(), path.c_str()), 0);
  ASSERT_TRUE(writeSecretFile(path, &error)) << error;
  EXPECT_EQ(read(victim), "precious") << "the secret went through the link";
  EXPECT_TRUE(S_ISREG(mode(path)));
  EXPECT_EQ(mode(path) & 0777, 0600u);
  unlink(path.c_str());
  std::ofstream(path) << "left by someone\n";  // mode 0644 from the umask
  chmod(path.c_str(), 0644);
  ASSERT_TRUE(writeSecretFile(path, &error)) << error;
  EXPECT_EQ(mode(path) & 0777, 0600u);
  EXPECT_NE(read(path), "left by someone");
}

TEST_F(SecretFile, UnwritableDirectoryIsAClearError) {
  std::string error;
  EXPECT_FALSE(writeSecretFile("/nonexistent-dir/secret", &error));
  EXPECT_NE(error.find("cannot create the job secret /nonexistent-dir/secret"), std::string::npos)
      << error;
}

}  // namespace
}  // namespace rd::orch
