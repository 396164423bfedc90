// A small ordered JSON value for summaries and reports (not for traces): keys keep their
// insertion order, and dump() indents like Python's json.dumps(indent=2).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
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
  // Appends dump(indent)'s text of this value as it is written `depth` levels down a
  // document (JsonObjectWriter).
  void dump_to(std::string& out, int indent, int depth) const;

 private:
  Kind kind_ = Kind::null;
  std::string text_;  // number text, string content, or "true"/"false"
  std::vector<JsonValue> items_;
  std::vector<std::string> keys_;
};

// Writes an object member by member into `out`, exactly as JsonValue::dump(indent) writes
// the same object at `depth`: for a document whose bulk, a long array, should never be a
// tree (a sweep's report of a million rows): each item is built, written and dropped.
class JsonObjectWriter {
 public:
  JsonObjectWriter(std::string& out, int indent, int depth = 0);
  JsonObjectWriter& member(std::string_view key, const JsonValue& value);
  // An array member written item by item: begin_array(key), item()..., end_array().
  JsonObjectWriter& begin_array(std::string_view key);
  JsonObjectWriter& item(const JsonValue& value);
  JsonObjectWriter& end_array();
  void finish();  // the closing '}'

 private:
  void separator(int depth, bool first);
  std::string& out_;
  int indent_, depth_;
  size_t members_ = 0, items_ = 0;
};

}  // namespace tracelane
