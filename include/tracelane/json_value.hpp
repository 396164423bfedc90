// A small ordered JSON value for summaries and reports (not for traces): keys keep their
// insertion order, and dump() indents like Python's json.dumps(indent=2).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace tracelane {

class JsonValue {
 public:
  enum class Kind { null, boolean, number, string, array, object };

  JsonValue() = default;
  static JsonValue null() { return JsonValue(); }
  static JsonValue boolean(bool b);
  static JsonValue integer(int64_t v);
  static JsonValue raw_number(std::string text);  // already valid JSON number text
  static JsonValue string(std::string s);
  static JsonValue array();
  static JsonValue object();

  JsonValue& push(JsonValue v);                  // array
  JsonValue& set(std::string key, JsonValue v);  // object; replaces an existing key
  JsonValue& extend(const JsonValue& other);     // object: appends other's keys
  Kind kind() const { return kind_; }

  // indent < 0: one line with ", " and ": " separators.
  std::string dump(int indent = 2) const;

 private:
  void dump_to(std::string& out, int indent, int depth) const;
  Kind kind_ = Kind::null;
  std::string text_;  // number text, string content, or "true"/"false"
  std::vector<JsonValue> items_;
  std::vector<std::string> keys_;
};

}  // namespace tracelane
