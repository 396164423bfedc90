// JsonValue (include/tracelane/json_value.hpp), the small ordered JSON of summaries and
// reports: keys in insertion order, dump() indented as Python's json.dumps(indent=2) or on
// one line, and every string and key escaped so that any JSON parser reads it back.
#include "tracelane/json_value.hpp"
#include "test_support.hpp"

using tracelane::JsonValue;

namespace {

// What a JSON parser reads back from `text`: its one string field's key and value.
std::pair<std::string, std::string> only_field(const std::string& text) {
  simdjson::dom::parser parser;
  simdjson::dom::object object;
  if (parser.parse(text).get(object) != simdjson::SUCCESS) {
    ADD_FAILURE() << "not JSON: " << text;
    return {};
  }
  std::pair<std::string, std::string> field;
  size_t fields = 0;
  for (auto [key, value] : object) {
    std::string_view string;
    EXPECT_EQ(value.get_string().get(string), simdjson::SUCCESS);
    field = {std::string(key), std::string(string)};
    ++fields;
  }
  EXPECT_EQ(fields, 1u) << text;
  return field;
}

JsonValue sample() {
  JsonValue list = JsonValue::array();
  list.push(JsonValue::integer(1)).push(JsonValue::raw_number("2.50"));
  JsonValue doc = JsonValue::object();
  doc.set("name", JsonValue::string("rank0")).set("ok", JsonValue::boolean(true)).set("none", JsonValue::null());
  doc.set("list", list).set("empty", JsonValue::object()).set("nothing", JsonValue::array());
  return doc;
}

}  // namespace

TEST(JsonValue, IndentedDumpLooksLikePythonsJsonDumpsWithIndentTwo) {
  // json.dumps({"name": "rank0", "ok": True, "none": None, "list": [1, 2.50], "empty": {},
  // "nothing": []}, indent=2), but for 2.50, whose text is kept as given.
  EXPECT_EQ(sample().dump(2),
            "{\n"
            "  \"name\": \"rank0\",\n"
            "  \"ok\": true,\n"
            "  \"none\": null,\n"
            "  \"list\": [\n"
            "    1,\n"
            "    2.50\n"
            "  ],\n"
            "  \"empty\": {},\n"
            "  \"nothing\": []\n"
            "}");
}

TEST(JsonValue, ANegativeIndentDumpsOneLineWithCommaSpaceAndColonSpace) {
  EXPECT_EQ(sample().dump(-1),
            R"({"name": "rank0", "ok": true, "none": null, "list": [1, 2.50], "empty": {}, "nothing": []})");
  EXPECT_EQ(JsonValue().dump(), "null");
  EXPECT_EQ(JsonValue::boolean(false).dump(), "false");
}

TEST(JsonValue, IntegersKeepEveryDigitOfASixtyFourBitValue) {
  EXPECT_EQ(JsonValue::integer(INT64_MIN).dump(), "-9223372036854775808");
  EXPECT_EQ(JsonValue::integer(INT64_MAX).dump(), "9223372036854775807");
  EXPECT_EQ(JsonValue::integer(0).dump(), "0");
  EXPECT_EQ(JsonValue::integer(7).kind(), JsonValue::Kind::number);
}

TEST(JsonValue, SetReplacesAKeyWhereItIsAndExtendAddsTheOtherObjectsKeys) {
  JsonValue a = JsonValue::object();
  a.set("x", JsonValue::integer(1)).set("y", JsonValue::integer(2));
  a.set("x", JsonValue::integer(3));
  EXPECT_EQ(a.dump(-1), R"({"x": 3, "y": 2})");
  JsonValue b = JsonValue::object();
  b.set("z", JsonValue::null()).set("y", JsonValue::string("two"));
  a.extend(b);
  EXPECT_EQ(a.dump(-1), R"({"x": 3, "y": "two", "z": null})");
}

TEST(JsonValue, StringsAndKeysAreEscapedSoThatAJsonParserReadsThemBack) {
  const std::string nasty = std::string("quote \" backslash \\ slash / newline \n tab \t return \r bell \x07 nul ") +
                            '\0' + " escape \x1b[31m caf\xC3\xA9 \xE2\x82\xAC";
  JsonValue doc = JsonValue::object();
  doc.set(nasty, JsonValue::string(nasty));
  for (int indent : {2, -1}) {
    const std::string text = doc.dump(indent);
    // JSON allows no raw control character inside a string; on one line there is none at all.
    if (indent < 0) {
      for (char c : text) EXPECT_GE(static_cast<unsigned char>(c), 0x20) << "raw control byte in " << text;
    }
    EXPECT_EQ(only_field(text), std::make_pair(nasty, nasty)) << text;
  }
}

// JsonObjectWriter writes a document member by member (a sweep's report, its rows one at a
// time) exactly as dump() writes the same object as a tree, indented or on one line, at
// the top or nested, with empty and full arrays.
TEST(JsonObjectWriter, WritesTheBytesDumpWritesForTheSameObject) {
  using tracelane::JsonObjectWriter;
  JsonValue nested = JsonValue::object();
  nested.set("a", JsonValue::array().push(JsonValue::integer(1)).push(JsonValue::object()));
  nested.set("b", JsonValue::string("x<y"));
  std::vector<JsonValue> items = {nested, JsonValue::array(), JsonValue::null(), JsonValue::integer(-7)};
  for (int indent : {2, -1, 4}) {
    for (size_t count : {size_t(0), size_t(1), items.size()}) {
      JsonValue tree = JsonValue::object();
      tree.set("first", nested).set("empty", JsonValue::array());
      JsonValue rows = JsonValue::array();
      for (size_t i = 0; i < count; ++i) rows.push(items[i]);
      tree.set("rows", rows).set("last", JsonValue::boolean(true));

      std::string written;
      JsonObjectWriter writer(written, indent);
      writer.member("first", nested).begin_array("empty").end_array().begin_array("rows");
      for (size_t i = 0; i < count; ++i) writer.item(items[i]);
      writer.end_array().member("last", JsonValue::boolean(true)).finish();
      EXPECT_EQ(written, tree.dump(indent)) << "indent " << indent << ", " << count << " items";

      // Nested one level down: as dump() writes it as the value of an outer member.
      std::string inner;
      JsonObjectWriter at_depth(inner, indent, 1);
      at_depth.member("first", nested).finish();
      std::string outer = "{";
      if (indent >= 0) outer += "\n" + std::string(size_t(indent), ' ');
      outer += "\"o\": " + inner;
      if (indent >= 0) outer += "\n";
      outer += "}";
      EXPECT_EQ(outer, JsonValue::object().set("o", JsonValue::object().set("first", nested)).dump(indent));
    }
  }
  std::string empty;
  JsonObjectWriter(empty, 2).finish();
  EXPECT_EQ(empty, "{}");
}
