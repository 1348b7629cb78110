// SPDX-License-Identifier: BSD-3-Clause
#include "orchestrator/tuning/hypertune_metrics.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <string>

namespace rd::orch::tune {
namespace {

// Written by cloudml-hypertune 0.1.0 (CLOUD_ML_TRIAL_ID=7) for: ("accuracy", 0.5, step 1),
// ("", 1e-5), ("loss", nan, step 3, checkpoint "gs://b/ck\u00e9"), ("accuracy", 0.875, step 10).
const char* const kUpstreamFile =
    R"({"accuracy": "0.5", "checkpoint_path": "", "global_step": "1", "timestamp": 1796232700.0607831, "trial": "7"}
{"checkpoint_path": "", "global_step": "0", "timestamp": 1796232700.0609004, "training/hptuning/metric": "1e-05", "trial": "7"}
{"checkpoint_path": "gs://b/ck\u00e9", "global_step": "3", "loss": "nan", "timestamp": 1796232700.063794, "trial": "7"}
{"accuracy": "0.875", "checkpoint_path": "", "global_step": "10", "timestamp": 1796232700.0642424, "trial": "7"}
)";

std::vector<Measurement> parse(const std::string& text, size_t* skipped = nullptr) {
  return parseHypertuneMetrics(text, skipped);
}

/** A fresh directory under TMPDIR, removed with its files at the end of the test. */
class TempDir {
 public:
  TempDir() {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp != nullptr ? tmp : "/tmp") + "/rd-hypertune-XXXXXX";
    path_ = ::mkdtemp(pattern.data()) != nullptr ? pattern : "";
  }
  ~TempDir() {
    for (const auto& f : files_) std::remove(f.c_str());
    if (!path_.empty()) ::rmdir(path_.c_str());
  }
  std::string write(const std::string& name, const std::string& text) {
    std::string file = path_ + "/" + name;
    std::ofstream(file, std::ios::binary) << text;
    files_.push_back(file);
    return file;
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::vector<std::string> files_;
};

TEST(HypertuneMetrics, ReadsTheFileCloudmlHypertuneWrites) {
  size_t skipped = 99;
  const auto m = parse(kUpstreamFile, &skipped);
  EXPECT_EQ(skipped, 0u);
  ASSERT_EQ(m.size(), 4u);
  EXPECT_EQ(m[0].step, 1);
  EXPECT_DOUBLE_EQ(m[0].timestamp, 1796232700.0607831);
  EXPECT_EQ(m[0].metrics, (std::map<std::string, double>{{"accuracy", 0.5}}));
  // No step given: cloudml-hypertune writes "0"; the tag was empty: the default one.
  EXPECT_EQ(m[1].step, 0);
  EXPECT_EQ(m[1].metrics, (std::map<std::string, double>{{kDefaultMetricTag, 1e-5}}));
  // "nan" is no measurement; "trial" and "checkpoint_path" are never metrics.
  EXPECT_EQ(m[2].step, 3);
  EXPECT_TRUE(m[2].metrics.empty());
  EXPECT_EQ(m[3].step, 10);
  EXPECT_DOUBLE_EQ(m[3].timestamp, 1796232700.0642424);
  EXPECT_EQ(m[3].metrics, (std::map<std::string, double>{{"accuracy", 0.875}}));
}

TEST(HypertuneMetrics, DefaultTagIsCloudmlHypertunes) {
  EXPECT_STREQ(kDefaultMetricTag, "training/hptuning/metric");
  const auto m = parse(R"({"training/hptuning/metric": "0.25", "global_step": "4"})");
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].metrics.at(kDefaultMetricTag), 0.25);
}

TEST(HypertuneMetrics, EmptyAndBlankFilesHaveNoMeasurements) {
  size_t skipped = 99;
  EXPECT_TRUE(parse("", &skipped).empty());
  EXPECT_EQ(skipped, 0u);
  EXPECT_TRUE(parse("\n\n  \r\n\t\n", &skipped).empty());
  EXPECT_EQ(skipped, 0u);
}

// The writer truncates then rewrites: a reader may see any prefix of the new file.
TEST(HypertuneMetrics, EveryPrefixOfTheFileGivesItsCompleteLines) {
  const std::string full = kUpstreamFile;
  const auto all = parse(full);
  for (size_t n = 0; n <= full.size(); ++n) {
    const std::string prefix = full.substr(0, n);
    size_t skipped = 0;
    const auto m = parse(prefix, &skipped);
    size_t complete = 0;
    for (char c : prefix) complete += c == '\n' ? 1 : 0;
    const bool cut = !prefix.empty() && prefix.back() != '\n';
    // A line cut right after its closing brace is complete JSON already.
    const bool whole = cut && prefix.back() == '}';
    ASSERT_EQ(m.size(), complete + (whole ? 1 : 0)) << prefix;
    ASSERT_EQ(skipped, cut && !whole ? 1u : 0u) << prefix;
    for (size_t i = 0; i < m.size(); ++i) {
      EXPECT_EQ(m[i].step, all[i].step);
      EXPECT_EQ(m[i].metrics, all[i].metrics);
    }
  }
}

TEST(HypertuneMetrics, GarbageLinesAreSkippedAndCounted) {
  const std::string text =
      "not json\n"
      "{\n"
      "[1, 2]\n"
      "\"accuracy\"\n"
      "{\"a\": 1,}\n"
      "{'a': 1}\n"
      "{\"a\": 01}\n"
      "{\"a\": NaN}\n"
      "{\"a\": .5}\n"
      "{\"a\": 1.}\n"
      "{\"a\": 1e}\n"
      "{\"a\": tru}\n"
      "{\"a\": \"\\x\"}\n"
      "{\"a\": \"\\u12G4\"}\n"
      "{\"a\": \"tab\there\"}\n"
      "{\"a\": 1} {\"b\": 2}\n"
      "{\"a\": 1} x\n"
      "{a: 1}\n"
      "{\"accuracy\": \"0.5\", \"global_step\": \"2\"}\n"
      "\xff\xfe\x01\n";
  size_t skipped = 0;
  const auto m = parse(text, &skipped);
  EXPECT_EQ(skipped, 19u);
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].step, 2);
  EXPECT_EQ(m[0].metrics.at("accuracy"), 0.5);
}

TEST(HypertuneMetrics, NumbersAsStringsOrNumbersOtherValuesSkipped) {
  const auto m = parse(
      R"({"a": 0.25, "b": "0.5", "c": -3, "d": "1e-05", "e": 2E+2, "f": "x", "g": true,)"
      R"( "h": null, "i": {"j": 1}, "k": [1, "2"], "l": "", "m": " 1", "n": "inf", "o": 1e999,)"
      R"( "global_step": 12, "timestamp": "17.5"})");
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].step, 12);
  EXPECT_EQ(m[0].timestamp, 17.5);
  EXPECT_EQ(m[0].metrics, (std::map<std::string, double>{
                              {"a", 0.25}, {"b", 0.5}, {"c", -3}, {"d", 1e-5}, {"e", 200}}));
}

TEST(HypertuneMetrics, StepIsAnIntegerOrElseTheLineIndex) {
  const auto m = parse(
      "{\"x\": 1, \"global_step\": \"7\"}\n"
      "{\"x\": 1, \"global_step\": 8.0}\n"
      "\n"
      "{\"x\": 1, \"global_step\": \"1.5\"}\n"
      "{\"x\": 1}\n"
      "{\"x\": 1, \"global_step\": \"9223372036854775807\"}\n"
      "{\"x\": 1, \"global_step\": 1e30}\n");
  ASSERT_EQ(m.size(), 6u);
  EXPECT_EQ(m[0].step, 7);
  EXPECT_EQ(m[1].step, 8);
  EXPECT_EQ(m[2].step, 3);  // not an integer: its line's 0-based index
  EXPECT_EQ(m[3].step, 4);  // absent
  EXPECT_EQ(m[4].step, INT64_MAX);
  EXPECT_EQ(m[5].step, 6);  // out of range
}

TEST(HypertuneMetrics, EscapedKeysDuplicatesAndWhitespace) {
  const auto m = parse(
      "  { \"caf\\u00e9\" : \"1\" , \"\\ud83d\\ude00\":2,\"a\\/b\\n\":3, \"x\": 1, \"x\": 2 }\r\n");
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].metrics.at("caf\xc3\xa9"), 1);
  EXPECT_EQ(m[0].metrics.at("\xf0\x9f\x98\x80"), 2);
  EXPECT_EQ(m[0].metrics.at("a/b\n"), 3);
  EXPECT_EQ(m[0].metrics.at("x"), 2);  // the last wins, as with Python's json.loads
  // A lone surrogate (Python writes one for an undecodable byte) is read as U+FFFD.
  const auto lone = parse(R"({"\udc80a": 1, "\ud800\u0041": 2})");
  ASSERT_EQ(lone.size(), 1u);
  EXPECT_EQ(lone[0].metrics.at("\xef\xbf\xbd"
                               "a"),
            1);
  EXPECT_EQ(lone[0].metrics.at("\xef\xbf\xbd"
                               "A"),
            2);
}

TEST(HypertuneMetrics, NoCapOnTheNumberOfLines) {
  std::string text;
  for (int i = 0; i < 250; ++i) {
    text += "{\"loss\": \"" + std::to_string(i) + "\", \"global_step\": \"" + std::to_string(i) +
            "\"}\n";
  }
  const auto m = parse(text);
  ASSERT_EQ(m.size(), 250u);
  EXPECT_EQ(m.back().step, 249);
  EXPECT_EQ(m.back().metrics.at("loss"), 249);
}

TEST(HypertuneMetrics, DeepNestingIsRefusedNotRecursedInto) {
  size_t skipped = 0;
  const std::string deep = "{\"a\": " + std::string(200000, '[') + "\n";
  EXPECT_TRUE(parse(deep, &skipped).empty());
  EXPECT_EQ(skipped, 1u);
  const auto ok = parse(R"({"a": [[[{"b": [1, {"c": null}]}]]], "m": "2"})");
  ASSERT_EQ(ok.size(), 1u);
  EXPECT_EQ(ok[0].metrics, (std::map<std::string, double>{{"m", 2}}));
}

TEST(HypertuneMetrics, ReadsFilesAndTreatsMissingOrUnreadableAsEmpty) {
  TempDir dir;
  ASSERT_FALSE(dir.path().empty());
  size_t skipped = 99;
  EXPECT_TRUE(readHypertuneMetrics(dir.path() + "/output.metrics", &skipped).empty());
  EXPECT_EQ(skipped, 0u);
  EXPECT_TRUE(readHypertuneMetrics(dir.path() + "/no/such/dir/file").empty());
  EXPECT_TRUE(readHypertuneMetrics(dir.path()).empty());  // a directory
  const std::string fifo = dir.write("fifo", "");
  ASSERT_EQ(std::remove(fifo.c_str()), 0);
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_TRUE(readHypertuneMetrics(fifo).empty());  // returns at once, no writer needed
  const std::string file = dir.write("output.metrics", std::string(kUpstreamFile) + "{\"acc");
  const auto m = readHypertuneMetrics(file, &skipped);
  EXPECT_EQ(m.size(), 4u);
  EXPECT_EQ(skipped, 1u);
}

TEST(HypertuneMetrics, HugeFileIsReadFromItsTail) {
  TempDir dir;
  ASSERT_FALSE(dir.path().empty());
  std::string text = "{\"old\": 1}\n" + std::string(kMaxMetricsFileBytes, ' ') + "\n";
  text += "{\"new\": 2, \"global_step\": 5}\n";
  const auto m = readHypertuneMetrics(dir.write("big.metrics", text));
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].metrics.at("new"), 2);
}

// Hostile input never crashes or hangs: random bytes (biased towards JSON's own characters) and
// random edits of a real file.
TEST(HypertuneMetrics, RandomInputIsSafe) {
  std::mt19937 rng(12345);
  const std::string alphabet = "{}[]\":,\\u0123456789.eE+-tfnrl \n\tabcdx\xff";
  const std::string base = kUpstreamFile;
  for (int round = 0; round < 4000; ++round) {
    std::string text;
    if (round % 2 == 0) {
      const size_t len = rng() % 300;
      for (size_t i = 0; i < len; ++i) {
        text.push_back(rng() % 3 == 0 ? static_cast<char>(rng() % 256)
                                      : alphabet[rng() % alphabet.size()]);
      }
    } else {
      text = base;
      for (unsigned edits = 1 + rng() % 8; edits > 0; --edits) {
        const size_t at = rng() % text.size();
        switch (rng() % 3) {
          case 0: text[at] = static_cast<char>(rng() % 256); break;
          case 1: text.erase(at, 1 + rng() % 10); break;
          default: text.insert(at, 1, alphabet[rng() % alphabet.size()]);
        }
      }
    }
    size_t skipped = 0;
    const auto m = parse(text, &skipped);
    size_t lines = 1;
    for (char c : text) lines += c == '\n' ? 1 : 0;
    ASSERT_LE(m.size() + skipped, lines);
  }
}

}  // namespace
}  // namespace rd::orch::tune
