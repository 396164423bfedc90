#include "tracelane/json_value.hpp"

#include "event_writer.hpp"  // append_json_string

namespace tracelane {

JsonValue JsonValue::boolean(bool b) {
  JsonValue v;
  v.kind_ = Kind::boolean;
  v.text_ = b ? "true" : "false";
  return v;
}
JsonValue JsonValue::integer(int64_t value) { return raw_number(std::to_string(value)); }
JsonValue JsonValue::raw_number(std::string text) {
  JsonValue v;
  v.kind_ = Kind::number;
  v.text_ = std::move(text);
  return v;
}
JsonValue JsonValue::string(std::string s) {
  JsonValue v;
  v.kind_ = Kind::string;
  v.text_ = std::move(s);
  return v;
}
JsonValue JsonValue::array() {
  JsonValue v;
  v.kind_ = Kind::array;
  return v;
}
JsonValue JsonValue::object() {
  JsonValue v;
  v.kind_ = Kind::object;
  return v;
}
JsonValue& JsonValue::push(JsonValue v) {
  items_.push_back(std::move(v));
  return *this;
}
JsonValue& JsonValue::set(std::string key, JsonValue v) {
  for (size_t i = 0; i < keys_.size(); ++i)
    if (keys_[i] == key) {
      items_[i] = std::move(v);
      return *this;
    }
  keys_.push_back(std::move(key));
  items_.push_back(std::move(v));
  return *this;
}

JsonValue& JsonValue::extend(const JsonValue& other) {
  for (size_t i = 0; i < other.keys_.size(); ++i) set(other.keys_[i], other.items_[i]);
  return *this;
}

std::string JsonValue::dump(int indent) const {
  std::string out;
  dump_to(out, indent, 0);
  return out;
}

void JsonValue::dump_to(std::string& out, int indent, int depth) const {
  auto newline = [&](int d) {
    if (indent < 0) return;
    out.push_back('\n');
    out.append(size_t(indent * d), ' ');
  };
  switch (kind_) {
    case Kind::null:
      out += "null";
      break;
    case Kind::boolean:
    case Kind::number:
      out += text_;
      break;
    case Kind::string:
      append_json_string(out, text_);
      break;
    case Kind::array:
    case Kind::object: {
      bool object = kind_ == Kind::object;
      out.push_back(object ? '{' : '[');
      if (items_.empty()) {
        out.push_back(object ? '}' : ']');
        break;
      }
      for (size_t i = 0; i < items_.size(); ++i) {
        if (i) out += indent < 0 ? ", " : ",";
        newline(depth + 1);
        if (object) {
          append_json_string(out, keys_[i]);
          out += ": ";
        }
        items_[i].dump_to(out, indent, depth + 1);
      }
      newline(depth);
      out.push_back(object ? '}' : ']');
    }
  }
}

JsonObjectWriter::JsonObjectWriter(std::string& out, int indent, int depth)
    : out_(out), indent_(indent), depth_(depth) {
  out_.push_back('{');
}

// What dump_to() writes before an item of a container at `depth`: ',' after the first,
// then the item's own line.
void JsonObjectWriter::separator(int depth, bool first) {
  if (!first) out_ += indent_ < 0 ? ", " : ",";
  if (indent_ < 0) return;
  out_.push_back('\n');
  out_.append(size_t(indent_ * (depth + 1)), ' ');
}

JsonObjectWriter& JsonObjectWriter::member(std::string_view key, const JsonValue& value) {
  separator(depth_, members_++ == 0);
  append_json_string(out_, key);
  out_ += ": ";
  value.dump_to(out_, indent_, depth_ + 1);
  return *this;
}

JsonObjectWriter& JsonObjectWriter::begin_array(std::string_view key) {
  separator(depth_, members_++ == 0);
  append_json_string(out_, key);
  out_ += ": [";
  items_ = 0;
  return *this;
}

JsonObjectWriter& JsonObjectWriter::item(const JsonValue& value) {
  separator(depth_ + 1, items_++ == 0);
  value.dump_to(out_, indent_, depth_ + 2);
  return *this;
}

JsonObjectWriter& JsonObjectWriter::end_array() {
  if (items_ && indent_ >= 0) {
    out_.push_back('\n');
    out_.append(size_t(indent_ * (depth_ + 1)), ' ');
  }
  out_.push_back(']');
  return *this;
}

void JsonObjectWriter::finish() {
  if (members_ && indent_ >= 0) {
    out_.push_back('\n');
    out_.append(size_t(indent_ * depth_), ' ');
  }
  out_.push_back('}');
}

}  // namespace tracelane
