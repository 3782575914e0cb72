#include "common/json.h"

#include <charconv>
#include <clocale>
#include <cmath>
#include <cstdlib>
#include <string>
#include <unordered_set>
#if defined(__APPLE__)
#include <xlocale.h>
#endif

#include "common/error.h"

namespace bs {

// A JSON number (syntax already checked) as the nearest double, whatever the process's locale:
// strtod in the "C" locale, not from_chars, whose floating-point overloads Apple's libc++ lacks
// (deleted up to the macOS 15 SDK, macOS 26+ only after). False when out of range: the value
// overflows, or a nonzero literal underflows to zero (subnormals are kept).
static bool parse_double(std::string_view text, double& out) {
  static const locale_t c_locale = newlocale(LC_NUMERIC_MASK, "C", static_cast<locale_t>(0));
  const std::string nul(text);  // strtod reads to a NUL, and would take a hex tail ("0x1") too
  char* end = nullptr;
  out = strtod_l(nul.c_str(), &end, c_locale);
  if (end != nul.c_str() + nul.size()) return false;
  if (std::isinf(out)) return false;
  if (out == 0.0) {
    for (char c : text) {
      if (c == 'e' || c == 'E') break;
      if (c >= '1' && c <= '9') return false;
    }
  }
  return true;
}

class JsonParser {
 public:
  JsonParser(std::string_view text, const std::string& what) : s_(text), what_(what) {}

  Json parse_document() {
    skip_ws();
    Json v = value(0);
    skip_ws();
    if (pos_ != s_.size()) error("unexpected characters after the JSON value");
    return v;
  }

 private:
  static constexpr int kMaxDepth = 128;
  std::string_view s_;
  const std::string& what_;
  size_t pos_ = 0;

  [[noreturn]] void error(const std::string& msg) const {
    size_t line = 1, col = 1;
    for (size_t i = 0; i < pos_ && i < s_.size(); ++i) {
      if (s_[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    fail(what_, ": invalid JSON at byte ", pos_, " (line ", line, ", column ", col, "): ", msg);
  }

  bool at_end() const { return pos_ >= s_.size(); }
  char peek() const { return at_end() ? '\0' : s_[pos_]; }

  void skip_ws() {
    while (!at_end() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r')) ++pos_;
  }

  void expect_literal(std::string_view lit) {
    if (s_.substr(pos_, lit.size()) != lit) error("expected a value");
    pos_ += lit.size();
  }

  Json value(int depth) {
    if (depth > kMaxDepth) error("nesting deeper than 128 levels");
    Json v;
    switch (peek()) {
      case '{': object(v, depth); break;
      case '[': array(v, depth); break;
      case '"':
        v.kind_ = Json::Kind::String;
        v.str_ = string();
        break;
      case 't':
        expect_literal("true");
        v.kind_ = Json::Kind::Bool;
        v.bool_ = true;
        break;
      case 'f':
        expect_literal("false");
        v.kind_ = Json::Kind::Bool;
        break;
      case 'n': expect_literal("null"); break;
      default:
        if (peek() == '-' || (peek() >= '0' && peek() <= '9')) {
          number(v);
        } else {
          error(at_end() ? "unexpected end of input, expected a value" : "expected a value");
        }
    }
    return v;
  }

  void object(Json& v, int depth) {
    v.kind_ = Json::Kind::Object;
    ++pos_;
    skip_ws();
    if (peek() == '}') {
      ++pos_;
      return;
    }
    std::unordered_set<std::string> seen;
    for (;;) {
      skip_ws();
      if (peek() != '"') error("expected a string key");
      const size_t key_pos = pos_;
      std::string key = string();
      if (!seen.insert(key).second) {
        pos_ = key_pos;
        error("duplicate key \"" + key + "\"");
      }
      skip_ws();
      if (peek() != ':') error("expected ':' after an object key");
      ++pos_;
      skip_ws();
      v.members_.emplace_back(std::move(key), value(depth + 1));
      skip_ws();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      if (peek() == '}') {
        ++pos_;
        return;
      }
      error(at_end() ? "unexpected end of input inside an object" : "expected ',' or '}'");
    }
  }

  void array(Json& v, int depth) {
    v.kind_ = Json::Kind::Array;
    ++pos_;
    skip_ws();
    if (peek() == ']') {
      ++pos_;
      return;
    }
    for (;;) {
      skip_ws();
      v.items_.push_back(value(depth + 1));
      skip_ws();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      if (peek() == ']') {
        ++pos_;
        return;
      }
      error(at_end() ? "unexpected end of input inside an array" : "expected ',' or ']'");
    }
  }

  void number(Json& v) {
    const size_t start = pos_;
    bool integral = true;
    if (peek() == '-') ++pos_;
    if (peek() == '0') {
      ++pos_;
    } else if (peek() >= '1' && peek() <= '9') {
      while (peek() >= '0' && peek() <= '9') ++pos_;
    } else {
      error("expected a digit");
    }
    if (peek() == '.') {
      integral = false;
      ++pos_;
      if (!(peek() >= '0' && peek() <= '9')) error("expected a digit after '.'");
      while (peek() >= '0' && peek() <= '9') ++pos_;
    }
    if (peek() == 'e' || peek() == 'E') {
      integral = false;
      ++pos_;
      if (peek() == '+' || peek() == '-') ++pos_;
      if (!(peek() >= '0' && peek() <= '9')) error("expected a digit in the exponent");
      while (peek() >= '0' && peek() <= '9') ++pos_;
    }
    const char* b = s_.data() + start;
    const char* e = s_.data() + pos_;
    v.kind_ = Json::Kind::Number;
    if (!parse_double(std::string_view(b, static_cast<size_t>(e - b)), v.num_)) {
      pos_ = start;
      error("number out of range");
    }
    if (integral) {
      auto ri = std::from_chars(b, e, v.int_);
      v.is_int_ = ri.ec == std::errc() && ri.ptr == e;
    }
  }

  static void put_utf8(std::string& out, uint32_t cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xc0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3f));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xe0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
      out += static_cast<char>(0x80 | (cp & 0x3f));
    } else {
      out += static_cast<char>(0xf0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
      out += static_cast<char>(0x80 | (cp & 0x3f));
    }
  }

  uint32_t hex4() {
    if (pos_ + 4 > s_.size()) error("truncated \\u escape");
    uint32_t cp = 0;
    for (int i = 0; i < 4; ++i) {
      const char c = s_[pos_++];
      cp <<= 4;
      if (c >= '0' && c <= '9') cp |= c - '0';
      else if (c >= 'a' && c <= 'f') cp |= c - 'a' + 10;
      else if (c >= 'A' && c <= 'F') cp |= c - 'A' + 10;
      else error("bad hex digit in \\u escape");
    }
    return cp;
  }

  // Length of the valid UTF-8 sequence starting with lead byte c (0 when invalid).
  size_t utf8_len(size_t at) const {
    const auto b = [&](size_t i) { return static_cast<unsigned char>(s_[i]); };
    const unsigned char c = b(at);
    size_t n;
    uint32_t cp;
    if (c < 0x80) return 1;
    if ((c & 0xe0) == 0xc0) n = 2, cp = c & 0x1f;
    else if ((c & 0xf0) == 0xe0) n = 3, cp = c & 0x0f;
    else if ((c & 0xf8) == 0xf0) n = 4, cp = c & 0x07;
    else return 0;
    if (at + n > s_.size()) return 0;
    for (size_t i = 1; i < n; ++i) {
      if ((b(at + i) & 0xc0) != 0x80) return 0;
      cp = (cp << 6) | (b(at + i) & 0x3f);
    }
    const uint32_t min_cp[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < min_cp[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
    return n;
  }

  std::string string() {
    ++pos_;  // opening quote
    std::string out;
    for (;;) {
      if (at_end()) error("unterminated string");
      const char c = s_[pos_];
      if (c == '"') {
        ++pos_;
        return out;
      }
      if (static_cast<unsigned char>(c) < 0x20) error("control character inside a string");
      if (c != '\\') {
        const size_t n = utf8_len(pos_);
        if (n == 0) error("invalid UTF-8 inside a string");
        out.append(s_.substr(pos_, n));
        pos_ += n;
        continue;
      }
      ++pos_;
      const char e = peek();
      ++pos_;
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          uint32_t cp = hex4();
          if (cp >= 0xdc00 && cp <= 0xdfff) error("lone low surrogate in \\u escape");
          if (cp >= 0xd800 && cp <= 0xdbff) {
            if (s_.substr(pos_, 2) != "\\u") error("high surrogate without a low surrogate");
            pos_ += 2;
            const uint32_t lo = hex4();
            if (lo < 0xdc00 || lo > 0xdfff) error("high surrogate without a low surrogate");
            cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
          }
          put_utf8(out, cp);
          break;
        }
        default: --pos_; error("unknown escape in a string");
      }
    }
  }
};

Json Json::parse(std::string_view text, const std::string& what) { return JsonParser(text, what).parse_document(); }

const Json* Json::find(std::string_view key) const {
  for (const auto& [k, v] : members_) {
    if (k == key) return &v;
  }
  return nullptr;
}

const char* Json::kind_name(Kind k) {
  switch (k) {
    case Kind::Null: return "null";
    case Kind::Bool: return "boolean";
    case Kind::Number: return "number";
    case Kind::String: return "string";
    case Kind::Array: return "array";
    case Kind::Object: return "object";
  }
  return "?";
}

std::string Json::brief() const {
  switch (kind_) {
    case Kind::Null: return "null";
    case Kind::Bool: return bool_ ? "true" : "false";
    case Kind::Number: {
      if (is_int_) return std::to_string(int_);
      std::ostringstream os;
      os << num_;
      return os.str();
    }
    case Kind::String: return "\"" + (str_.size() > 40 ? str_.substr(0, 40) + "..." : str_) + "\"";
    case Kind::Array: return "[...]";
    case Kind::Object: return "{...}";
  }
  return "?";
}

}  // namespace bs
