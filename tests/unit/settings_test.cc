// SPDX-License-Identifier: BSD-3-Clause
#include "common/settings.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <set>
#include <string>

#include "common/status.h"

namespace rd::settings {
namespace {

// Sets an environment variable for one scope and restores the previous state.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    const char* old = getenv(name);
    had_ = old != nullptr;
    if (had_) old_ = old;
    setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (had_)
      setenv(name_, old_.c_str(), 1);
    else
      unsetenv(name_);
  }

 private:
  const char* name_;
  bool had_ = false;
  std::string old_;
};

TEST(Settings, EveryRowIsCompleteAndUnique) {
  std::set<std::string> names, envs;
  int index = 0;
  for (const Setting& s : all()) {
    EXPECT_EQ(static_cast<int>(s.id), index++) << s.name << ": rows must follow Id order";
    EXPECT_TRUE(names.insert(s.name).second) << s.name;
    EXPECT_TRUE(envs.insert(s.env).second) << s.env;
    EXPECT_EQ(std::string(s.env).rfind("LIBREDUCE_", 0), 0u) << s.env;
    EXPECT_GT(std::string(s.description).size(), 10u) << s.name;
    EXPECT_NE(s.default_value, nullptr);
  }
}

TEST(Settings, DefaultsParse) {
  int64_t i = 0;
  uint64_t size = 0;
  std::string choice;
  EXPECT_EQ(readInt(Id::kKernelThreads, &i), rdSuccess);
  EXPECT_EQ(i, 0);
  EXPECT_EQ(readSize(Id::kKernelSplitBytes, &size), rdSuccess);
  EXPECT_EQ(size, 1u << 20);
  EXPECT_EQ(readChoice(Id::kCpuIsa, &choice), rdSuccess);
  EXPECT_EQ(choice, "auto");
}

TEST(Settings, SizesAcceptSuffixes) {
  uint64_t v = 0;
  EXPECT_TRUE(parseSize("0", &v) && v == 0);
  EXPECT_TRUE(parseSize("4096", &v) && v == 4096);
  EXPECT_TRUE(parseSize("64K", &v) && v == 64 * 1024);
  EXPECT_TRUE(parseSize("2m", &v) && v == 2u << 20);
  EXPECT_TRUE(parseSize("1GiB", &v) && v == 1u << 30);
  EXPECT_TRUE(parseSize("3kb", &v) && v == 3 * 1024);
  EXPECT_FALSE(parseSize("", &v));
  EXPECT_FALSE(parseSize("-1", &v));
  EXPECT_FALSE(parseSize("12Q", &v));
  EXPECT_FALSE(parseSize("99999999999999999999", &v));
  EXPECT_FALSE(parseSize("17179869184T", &v));  // overflows 64 bits
}

TEST(Settings, EnvironmentOverridesAndBadValuesNameTheVariable) {
  int64_t i = 0;
  {
    ScopedEnv env("LIBREDUCE_KERNEL_THREADS", "3");
    EXPECT_TRUE(isSetInEnv(Id::kKernelThreads));
    EXPECT_EQ(readInt(Id::kKernelThreads, &i), rdSuccess);
    EXPECT_EQ(i, 3);
  }
  for (const char* bad : {"three", "3x", "-1", "100000"}) {
    ScopedEnv env("LIBREDUCE_KERNEL_THREADS", bad);
    EXPECT_EQ(readInt(Id::kKernelThreads, &i), rdInvalidArgument) << bad;
    EXPECT_NE(lastError().find(std::string("LIBREDUCE_KERNEL_THREADS=") + bad), std::string::npos)
        << lastError();
    EXPECT_NE(lastError().find("0..256"), std::string::npos) << lastError();
  }
  {
    ScopedEnv env("LIBREDUCE_KERNEL_SPLIT_BYTES", "1K");  // below the 4K minimum
    uint64_t v = 0;
    EXPECT_EQ(readSize(Id::kKernelSplitBytes, &v), rdInvalidArgument);
  }
  {
    ScopedEnv env("LIBREDUCE_CPU_ISA", "AVX2");  // choices are case-insensitive
    std::string choice;
    EXPECT_EQ(readChoice(Id::kCpuIsa, &choice), rdSuccess);
    EXPECT_EQ(choice, "avx2");
  }
  {
    ScopedEnv env("LIBREDUCE_CPU_ISA", "sse9");
    std::string choice;
    EXPECT_EQ(readChoice(Id::kCpuIsa, &choice), rdInvalidArgument);
    EXPECT_NE(lastError().find("auto|avx512|avx2|scalar"), std::string::npos) << lastError();
  }
}

}  // namespace
}  // namespace rd::settings
