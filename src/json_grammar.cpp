// JSON's grammar where simdjson On-Demand does not check it (see json_grammar.hpp), and the
// chunked path's error replay.
#include "json_grammar.hpp"

#include <cctype>
#include <utility>

namespace tracelane {

namespace od = simdjson::ondemand;

bool valid_atom(std::string_view t) {
  if (t.empty() || t[0] == '"' || t[0] == '{' || t[0] == '[') return true;
  if (t == "true" || t == "false" || t == "null") return true;
  auto digit = [&](size_t i) { return i < t.size() && t[i] >= '0' && t[i] <= '9'; };
  size_t i = t[0] == '-' ? 1 : 0;
  if (!digit(i)) return false;
  if (t[i] == '0')
    ++i;
  else
    while (digit(i)) ++i;
  if (i < t.size() && t[i] == '.') {
    if (!digit(++i)) return false;
    while (digit(i)) ++i;
  }
  if (i < t.size() && (t[i] == 'e' || t[i] == 'E')) {
    ++i;
    if (i < t.size() && (t[i] == '+' || t[i] == '-')) ++i;
    if (!digit(i)) return false;
    while (digit(i)) ++i;
  }
  return i == t.size();
}

bool valid_escapes(std::string_view t) {
  for (size_t i = t.find('\\'); i != std::string_view::npos && i + 1 < t.size(); i = t.find('\\', i)) {
    char c = t[i + 1];
    if (c == 'u') {
      if (i + 6 > t.size()) return false;
      for (size_t k = i + 2; k < i + 6; ++k)
        if (!std::isxdigit(static_cast<unsigned char>(t[k]))) return false;
      i += 6;
    } else if (c == '"' || c == '\\' || c == '/' || c == 'b' || c == 'f' || c == 'n' || c == 'r' || c == 't') {
      i += 2;
    } else {
      return false;
    }
  }
  return true;
}

void GrammarCheck::fail(std::string_view what, const char* where) const {
  std::string message = source_ + ": ";
  message += what;
  if (where) message += " (byte " + std::to_string(offset(where)) + ")";
  throw Error(message);
}

std::string simdjson_failure(simdjson::error_code error) {
  if (error == simdjson::MEMALLOC) return "out of memory (simdjson's index of the document)";
  if (error == simdjson::CAPACITY)
    return "a JSON document of more than 4 GiB, the most simdjson reads at once (SPEC 9.10: a trace is read in "
           "chunks of whole events, but one event, or the top level without traceEvents' contents, must fit)";
  return std::string("invalid JSON: ") + simdjson::error_message(error);
}

void GrammarCheck::fail_json(simdjson::error_code error, od::document& doc, std::string_view context) const {
  if (error == simdjson::MEMALLOC || error == simdjson::CAPACITY) fail_document(error);
  auto location = doc.current_location();
  fail(std::string("invalid JSON ") + std::string(context) + ": " + simdjson::error_message(error),
       location.error() ? nullptr : location.value_unsafe());
}

std::string GrammarCheck::subject() const {
  return index_ == SIZE_MAX ? "top-level key \"" + *top_key_ + "\"" : "event #" + std::to_string(index_);
}

void GrammarCheck::fail_value(std::string_view what, const char* where) const {
  fail("invalid JSON " + event_context() + ": " + std::string(what), where);
}

void GrammarCheck::fail_bad_escape(std::string_view token) const {
  fail_value("a string has an escape JSON does not have", token.data());
}

void GrammarCheck::fail_too_deep(od::value& v) const {
  fail(subject() + " nests deeper than " + std::to_string(kMaxDepth) +
           " levels (JSON readers such as Perfetto's refuse it)",
       v.raw_json_token().data());
}

void GrammarCheck::check_scalar(std::string_view token) const {
  if (!valid_atom(token)) fail_value("the value '" + std::string(token.substr(0, 40)) + "' is not JSON", token.data());
}

void GrammarCheck::check_value(od::value& v, size_t level) {
  od::json_type type;
  if (auto error = v.type().get(type)) fail_json(error);
  switch (type) {
    case od::json_type::object: {
      if (level > kMaxDepth) fail_too_deep(v);
      od::object o;
      if (auto error = v.get_object().get(o)) fail_json(error);
      for (auto field_result : o) {
        if (auto error = field_result.error()) fail_json(error);
        od::field& field = field_result.value_unsafe();
        check_key(field.key());
        od::value& child = field.value();
        check_value(child, level + 1);
      }
      return;
    }
    case od::json_type::array: {
      if (level > kMaxDepth) fail_too_deep(v);
      od::array a;
      if (auto error = v.get_array().get(a)) fail_json(error);
      for (auto element : a) {
        if (auto error = element.error()) fail_json(error);
        od::value& child = element.value_unsafe();
        check_value(child, level + 1);
      }
      return;
    }
    case od::json_type::string:
      check_string(trim_right(v.raw_json_token()));
      return;
    default:
      check_scalar(trim_right(v.raw_json_token()));
      return;
  }
}

std::string_view GrammarCheck::checked_text(od::value& v, size_t level) {
  std::string_view token = trim_right(v.raw_json_token());
  bool container = !token.empty() && (token[0] == '{' || token[0] == '[');
  check_value(v, level);
  if (!container) return token;
  const char* end = nullptr;
  if (auto error = doc_->current_location().get(end)) fail_json(error);
  return trim_right(std::string_view(token.data(), size_t(end - token.data())));
}

void throw_first_stage_error(char* document, size_t allocated, const ChunkPlan& plan, size_t first,
                             const std::string& source) {
  od::parser parser;
  for (size_t k = first; k < plan.chunks.size(); ++k) {
    auto [begin, end] = plan.chunks[k];
    ChunkBrackets brackets(document, begin, end);
    if (auto error = parser.iterate(document + begin, end - begin + 1, allocated - begin).error())
      throw Error(source + ": " + simdjson_failure(error));
  }
}

size_t replay_last_chunk(const ChunkPlan& plan, size_t k, size_t largest_document_bytes) {
  size_t last = k;
  while (last + 1 < plan.chunks.size() &&
         plan.chunks[last + 1].second - plan.chunks[k].first + 1 <= largest_document_bytes)
    ++last;
  return last;
}

}  // namespace tracelane
