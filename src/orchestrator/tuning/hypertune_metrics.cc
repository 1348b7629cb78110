// SPDX-License-Identifier: BSD-3-Clause
// Reader of the cloudml-hypertune metrics file (format: hypertune_metrics.h, as found in
// GoogleCloudPlatform/cloudml-hypertune, hypertune/hypertune.py). The file is the training
// program's output, so it is parsed as untrusted text: a small strict JSON parser with a depth
// limit, rather than a dependency, because each line is a flat object of strings and numbers.
#include "orchestrator/tuning/hypertune_metrics.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string_view>
#include <system_error>

namespace rd::orch::tune {
namespace {

// Deeper nesting than any metrics line has; bounds the parser's recursion.
constexpr int kMaxDepth = 32;

/** A value of the line's top-level object. Nested objects and arrays are kOther. */
struct Value {
  enum class Kind { kString, kNumber, kOther } kind = Kind::kOther;
  std::string text;  // the string's content, or the number's JSON text
};

/** Parses one line as exactly one JSON object (RFC 8259) and nothing else. */
class LineParser {
 public:
  explicit LineParser(std::string_view text) : text_(text) {}

  /** The object's members (duplicates: the last wins); nullopt when the line is not one. */
  std::optional<std::map<std::string, Value>> parse() {
    std::map<std::string, Value> fields;
    skipSpace();
    if (!parseObject(0, &fields)) return std::nullopt;
    skipSpace();
    if (pos_ != text_.size()) return std::nullopt;
    return fields;
  }

 private:
  bool atEnd() const { return pos_ >= text_.size(); }
  char peek() const { return atEnd() ? '\0' : text_[pos_]; }

  void skipSpace() {
    while (!atEnd() && (peek() == ' ' || peek() == '\t' || peek() == '\r' || peek() == '\n')) {
      ++pos_;
    }
  }

  bool consume(char c) {
    if (atEnd() || text_[pos_] != c) return false;
    ++pos_;
    return true;
  }

  bool consumeWord(std::string_view word) {
    if (text_.substr(pos_, word.size()) != word) return false;
    pos_ += word.size();
    return true;
  }

  // Members go to @p fields; nested objects pass null (their members are only checked).
  bool parseObject(int depth, std::map<std::string, Value>* fields) {
    if (depth > kMaxDepth || !consume('{')) return false;
    skipSpace();
    if (consume('}')) return true;
    while (true) {
      std::string key;
      skipSpace();
      if (!parseString(&key)) return false;
      skipSpace();
      if (!consume(':')) return false;
      skipSpace();
      Value value;
      if (!parseValue(depth, &value)) return false;
      if (fields != nullptr) (*fields)[std::move(key)] = std::move(value);
      skipSpace();
      if (consume('}')) return true;
      if (!consume(',')) return false;
    }
  }

  bool parseArray(int depth) {
    if (depth > kMaxDepth || !consume('[')) return false;
    skipSpace();
    if (consume(']')) return true;
    while (true) {
      skipSpace();
      Value ignored;
      if (!parseValue(depth, &ignored)) return false;
      skipSpace();
      if (consume(']')) return true;
      if (!consume(',')) return false;
    }
  }

  bool parseValue(int depth, Value* value) {
    switch (peek()) {
      case '"': value->kind = Value::Kind::kString; return parseString(&value->text);
      case '{': value->kind = Value::Kind::kOther; return parseObject(depth + 1, nullptr);
      case '[': value->kind = Value::Kind::kOther; return parseArray(depth + 1);
      case 't': value->kind = Value::Kind::kOther; return consumeWord("true");
      case 'f': value->kind = Value::Kind::kOther; return consumeWord("false");
      case 'n': value->kind = Value::Kind::kOther; return consumeWord("null");
      default: value->kind = Value::Kind::kNumber; return parseNumber(&value->text);
    }
  }

  bool digits() {
    const size_t start = pos_;
    while (!atEnd() && peek() >= '0' && peek() <= '9') ++pos_;
    return pos_ > start;
  }

  // -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)? ; @p text gets the number's characters.
  bool parseNumber(std::string* text) {
    const size_t start = pos_;
    consume('-');
    if (!consume('0') && !(peek() >= '1' && peek() <= '9' && digits())) return false;
    if (consume('.') && !digits()) return false;
    if (consume('e') || consume('E')) {
      if (!consume('+')) consume('-');
      if (!digits()) return false;
    }
    *text = std::string(text_.substr(start, pos_ - start));
    return true;
  }

  bool parseHex4(uint32_t* code) {
    if (text_.size() - pos_ < 4) return false;
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) {
      const char c = text_[pos_++];
      v <<= 4;
      if (c >= '0' && c <= '9') {
        v |= static_cast<uint32_t>(c - '0');
      } else if (c >= 'a' && c <= 'f') {
        v |= static_cast<uint32_t>(c - 'a' + 10);
      } else if (c >= 'A' && c <= 'F') {
        v |= static_cast<uint32_t>(c - 'A' + 10);
      } else {
        return false;
      }
    }
    *code = v;
    return true;
  }

  // After "\u": one code point, a surrogate pair joined; a lone surrogate becomes U+FFFD (Python
  // writes those for undecodable bytes, and its json.loads accepts them).
  bool parseUnicodeEscape(std::string* out) {
    uint32_t code = 0;
    if (!parseHex4(&code)) return false;
    if (code >= 0xD800 && code <= 0xDBFF && text_.substr(pos_, 2) == "\\u") {
      const size_t save = pos_;
      pos_ += 2;
      uint32_t low = 0;
      if (!parseHex4(&low)) return false;
      if (low >= 0xDC00 && low <= 0xDFFF) {
        code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
      } else {
        pos_ = save;  // not a pair: the second escape is read on its own
      }
    }
    if (code >= 0xD800 && code <= 0xDFFF) code = 0xFFFD;
    appendUtf8(code, out);
    return true;
  }

  static void appendUtf8(uint32_t code, std::string* out) {
    auto byte = [out](uint32_t b) { out->push_back(static_cast<char>(b)); };
    if (code < 0x80) {
      byte(code);
    } else if (code < 0x800) {
      byte(0xC0 | (code >> 6));
      byte(0x80 | (code & 0x3F));
    } else if (code < 0x10000) {
      byte(0xE0 | (code >> 12));
      byte(0x80 | ((code >> 6) & 0x3F));
      byte(0x80 | (code & 0x3F));
    } else {
      byte(0xF0 | (code >> 18));
      byte(0x80 | ((code >> 12) & 0x3F));
      byte(0x80 | ((code >> 6) & 0x3F));
      byte(0x80 | (code & 0x3F));
    }
  }

  bool parseString(std::string* out) {
    if (!consume('"')) return false;
    while (!atEnd()) {
      const char c = text_[pos_++];
      if (c == '"') return true;
      if (static_cast<unsigned char>(c) < 0x20) return false;  // raw controls are not JSON
      if (c != '\\') {
        out->push_back(c);
        continue;
      }
      if (atEnd()) return false;
      switch (text_[pos_++]) {
        case '"': out->push_back('"'); break;
        case '\\': out->push_back('\\'); break;
        case '/': out->push_back('/'); break;
        case 'b': out->push_back('\b'); break;
        case 'f': out->push_back('\f'); break;
        case 'n': out->push_back('\n'); break;
        case 'r': out->push_back('\r'); break;
        case 't': out->push_back('\t'); break;
        case 'u':
          if (!parseUnicodeEscape(out)) return false;
          break;
        default: return false;
      }
    }
    return false;  // unterminated: a line cut by a concurrent rewrite
  }

  std::string_view text_;
  size_t pos_ = 0;
};

/** @p text as a finite double, all of it ("0.75", "1e-05"); nullopt otherwise ("nan", "1 "). */
std::optional<double> finiteNumber(std::string_view text) {
  double v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(v)) {
    return std::nullopt;
  }
  return v;
}

std::optional<double> numberOf(const Value& value) {
  if (value.kind == Value::Kind::kOther) return std::nullopt;
  return finiteNumber(value.text);
}

/** An integer step: "12", 12, or an integral float (12.0, "1e3") within int64. */
std::optional<int64_t> stepOf(const Value& value) {
  if (value.kind == Value::Kind::kOther) return std::nullopt;
  const std::string& text = value.text;
  int64_t step = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), step);
  if (ec == std::errc() && end == text.data() + text.size()) return step;
  const std::optional<double> v = finiteNumber(text);
  // 2^63 is exact in a double; the range check keeps the cast defined.
  if (!v || std::trunc(*v) != *v || *v < -9223372036854775808.0 || *v >= 9223372036854775808.0) {
    return std::nullopt;
  }
  return static_cast<int64_t>(*v);
}

bool isReservedKey(const std::string& key) {
  return key == "global_step" || key == "timestamp" || key == "trial" || key == "checkpoint_path";
}

Measurement toMeasurement(const std::map<std::string, Value>& fields, size_t line_index) {
  Measurement m;
  m.step = static_cast<int64_t>(line_index);
  for (const auto& [key, value] : fields) {
    if (key == "global_step") {
      if (const auto step = stepOf(value)) m.step = *step;
    } else if (key == "timestamp") {
      if (const auto t = numberOf(value)) m.timestamp = *t;
    } else if (!isReservedKey(key)) {
      if (const auto v = numberOf(value)) m.metrics[key] = *v;
    }
  }
  return m;
}

bool isBlank(std::string_view line) {
  return line.find_first_not_of(" \t\r") == std::string_view::npos;
}

}  // namespace

std::vector<Measurement> parseHypertuneMetrics(const std::string& text, size_t* skipped) {
  std::vector<Measurement> out;
  size_t bad = 0;
  const std::string_view all(text);
  size_t start = 0;
  for (size_t index = 0; start < all.size(); ++index) {
    size_t end = all.find('\n', start);
    if (end == std::string_view::npos) end = all.size();
    const std::string_view line = all.substr(start, end - start);
    start = end + 1;
    if (isBlank(line)) continue;
    if (auto fields = LineParser(line).parse()) {
      out.push_back(toMeasurement(*fields, index));
    } else {
      ++bad;
    }
  }
  if (skipped != nullptr) *skipped = bad;
  return out;
}

std::vector<Measurement> readHypertuneMetrics(const std::string& path, size_t* skipped) {
  if (skipped != nullptr) *skipped = 0;
  // O_NONBLOCK: a FIFO put at the path must not block the poller (it is refused below).
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return {};
  struct stat st {};
  std::string text;
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
    const auto size = static_cast<size_t>(st.st_size);
    if (size > kMaxMetricsFileBytes) {
      ::lseek(fd, static_cast<off_t>(size - kMaxMetricsFileBytes), SEEK_SET);
    }
    char buf[65536];
    while (text.size() < kMaxMetricsFileBytes) {
      const ssize_t n = ::read(fd, buf, std::min(sizeof buf, kMaxMetricsFileBytes - text.size()));
      if (n > 0) {
        text.append(buf, static_cast<size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        break;
      }
    }
  }
  ::close(fd);
  return parseHypertuneMetrics(text, skipped);
}

}  // namespace rd::orch::tune
