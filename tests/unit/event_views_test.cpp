// Event's compact views (include/tracelane/trace.hpp): Text keeps a view in 8 bytes and a
// value's span in 6, and both fall back to a slower form for text of 64 KiB or more. The
// fallbacks must give back exactly what was read: the writer cuts changed values out of an
// event's text at its spans, so a wrong length would splice a value into the wrong bytes.
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "event_writer.hpp"
#include "tracelane/trace.hpp"

using namespace tracelane;

namespace {

std::string long_text(size_t size, char fill) { return std::string(size, fill); }

TEST(EventText, KeepsTheAddressAndSizeOfShortAndLongText) {
  const std::string words = "ac2g_fwd";
  const std::string big = long_text(70000, 'k');
  const std::string huge = long_text(size_t(1) << 20, 'h');
  for (const std::string* text : {&words, &big, &huge}) {
    Text t = std::string_view(*text);
    std::string_view back = t;
    EXPECT_EQ(back.data(), text->data()) << text->size();
    EXPECT_EQ(back.size(), text->size());
    EXPECT_EQ(t.size(), text->size());
  }
  const std::string at_limit = long_text(65535, 'x'), below = long_text(65534, 'y');
  EXPECT_EQ(Text(at_limit).view(), at_limit);
  EXPECT_EQ(Text(below).view(), below);
  EXPECT_TRUE(Text().empty());
  EXPECT_EQ(Text().view(), std::string_view());
  EXPECT_EQ(Text("").size(), 0u);
}

TEST(EventText, ComparesAsItsText) {
  Text x = "X", kernel = "kernel";
  EXPECT_TRUE(x == "X");
  EXPECT_TRUE("X" == x);
  EXPECT_FALSE(x == "XX");
  EXPECT_TRUE(kernel == std::string_view("kernel"));
  std::string other = "kernel";
  EXPECT_TRUE(kernel == Text(other));  // same text at another address
  EXPECT_TRUE(Text("a") < Text("b"));
  EXPECT_TRUE(Text("ab") > std::string_view("a"));
  const std::string big_a = long_text(70000, 'a'), big_b = long_text(70000, 'a') + "b";
  EXPECT_TRUE(Text(big_a) < Text(big_b));
  EXPECT_TRUE(Text(big_a) == big_a);
}

TEST(EventText, LongTextMadeOnSeveralThreadsAtOnceStaysValid) {
  // Long text takes a record of its own, made under a lock: views made concurrently must
  // each give back their own text.
  std::vector<std::string> texts;
  for (int k = 0; k < 8; ++k) texts.push_back(long_text(66000 + size_t(k), char('a' + k)));
  std::vector<std::vector<Text>> made(texts.size());
  std::vector<std::thread> threads;
  for (size_t k = 0; k < texts.size(); ++k)
    threads.emplace_back([&, k] {
      for (int n = 0; n < 200; ++n) made[k].push_back(Text(texts[k]));
    });
  for (auto& thread : threads) thread.join();
  for (size_t k = 0; k < texts.size(); ++k)
    for (const Text& t : made[k]) {
      ASSERT_EQ(t.data(), texts[k].data());
      ASSERT_EQ(t.size(), texts[k].size());
    }
}

// A trace whose event has a pid that is a 70 KB object, a tid that is a 70 KB string with
// escapes, and a 70 KB args.name: every span is past what 16 bits hold.
std::string trace_with_long_values(std::string& pid_text, std::string& tid_text, std::string& name_text) {
  pid_text = R"({"blob": ")" + long_text(70000, 'p') + R"(}\"]", "n": [1, {"}": 2}]})";
  tid_text = "\"" + long_text(35000, 't') + R"(\"\\)" + long_text(35000, 'u') + "\"";
  name_text = "\"" + long_text(70000, 'n') + "\"";
  return R"({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "op", "pid": )" + pid_text + R"(, "tid": )" +
         tid_text + R"(, "ts": 1.5, "dur": 2, "args": {"name": )" + name_text + "}}]}";
}

TEST(EventSpans, ValuesOf64KiBOrMoreAreFoundAgainExactly) {
  std::string pid_text, tid_text, name_text;
  Trace trace = parse_trace(trace_with_long_values(pid_text, tid_text, name_text), "long.json");
  ASSERT_EQ(trace.events.size(), 1u);
  const Event& event = trace.events[0];
  EXPECT_EQ(event.value_text(kPid), pid_text);
  EXPECT_EQ(event.value_text(kTid), tid_text);
  EXPECT_EQ(event.value_text(kArgName), name_text);
  EXPECT_EQ(event.value_text(kTs), "1.5");
  EXPECT_EQ(event.span(kPid).length, pid_text.size());
  EXPECT_TRUE(event.has_span(kTid));
  EXPECT_FALSE(event.has_span(kId));
  std::string buffer;
  EXPECT_EQ(event.arg_name(buffer).size(), 70000u);
  EXPECT_EQ(event.raw.size(), event.raw.view().size());
  EXPECT_GT(event.raw.size(), 200000u);
}

// Spans are kept in 3 bytes each (a 16-bit offset, an 8-bit length) while every one
// fits, and all in a record the trace keeps when one does not: each span, the original
// stream's included, reads back as set on both sides of either edge, a copy keeps its spans
// when the event it came from is given others, and the record lives in the trace's arena.
TEST(EventSpans, EverySpanReadsBackAsSetOnBothSidesOfItsEdges) {
  const std::string text(0x30000, 'x');
  Trace keeper;  // keeps the records
  auto keep = [&keeper](std::string_view bytes) { return keeper.keep(bytes); };
  auto in_arena = [&keeper](const void* p) {
    for (const auto& block : keeper.arena)
      if (p >= static_cast<const void*>(block->data()) && p < static_cast<const void*>(block->data() + block->size()))
        return true;
    return false;
  };
  for (bool in_length : {false, true}) {
    const std::vector<uint32_t> edges = in_length ? std::vector<uint32_t>{0xfe, 0xff, 0x100, 0x20001}
                                                  : std::vector<uint32_t>{0xfffe, 0xffff, 0x10000, 0x20001};
    for (uint32_t edge : edges) {
      for (int slot = 0; slot <= kFieldCount; ++slot) {
        EventSpans spans;
        for (int f = 0; f < kFieldCount; ++f) spans.fields[f] = Span{uint32_t(10 * f + 1), uint32_t(f + 1)};
        spans.original_stream = Span{200, 3};
        const Span wide = in_length ? Span{7, edge} : Span{edge, 5};
        (slot == kFieldCount ? spans.original_stream : spans.fields[slot]) = wide;
        Event event;
        event.raw = std::string_view(text);
        event.set_spans(spans, keep);
        const std::string what =
            std::string(in_length ? "length " : "offset ") + std::to_string(edge) + ", slot " + std::to_string(slot);
        const bool far = in_length ? edge > 0xff : edge > 0xffff;
        EXPECT_EQ(event.far_spans, far) << what;
        if (far) {
          const char* record;
          std::memcpy(&record, event.packed_spans.data(), sizeof record);
          EXPECT_TRUE(in_arena(record)) << what;
        }
        for (int f = 0; f < kFieldCount; ++f) {
          EXPECT_EQ(event.span(Field(f)).offset, spans.fields[f].offset) << what << ", field " << f;
          EXPECT_EQ(event.span(Field(f)).length, spans.fields[f].length) << what << ", field " << f;
          EXPECT_TRUE(event.has_span(Field(f))) << what;
        }
        EXPECT_EQ(event.original_stream_text(), text.substr(spans.original_stream.offset, spans.original_stream.length))
            << what;

        Event copy = event;
        EventSpans other;
        other.fields[kTid] = Span{0x40000, 2};
        event.set_spans(other, keep);
        EXPECT_FALSE(event.has_span(kPid)) << what;
        EXPECT_EQ(event.span(kTid).offset, 0x40000u) << what;
        EXPECT_EQ(copy.span(kPid).offset, spans.fields[kPid].offset) << what;
        EXPECT_EQ(copy.span(Field(kFieldCount - 1)).length, spans.fields[kFieldCount - 1].length) << what;
      }
    }
  }
  // A field the event lacks reads as absent in 3 bytes too.
  EventSpans near;
  near.fields[kTs] = Span{0xffff, 0xff};
  Event event;
  event.raw = std::string_view(text);
  event.set_spans(near, keep);
  EXPECT_FALSE(event.far_spans);
  EXPECT_TRUE(event.has_span(kTs));
  EXPECT_FALSE(event.has_span(kPid));
  EXPECT_EQ(event.original_stream_text(), "");
}

TEST(EventSpans, TheWriterReplacesALongValueAndNothingAroundIt) {
  std::string pid_text, tid_text, name_text;
  Trace trace = parse_trace(trace_with_long_values(pid_text, tid_text, name_text), "long.json");
  Event event = trace.events[0];
  event.set_pid(5);
  event.set_tid(7);
  std::string out;
  append_event(out, event);
  std::string expected(event.raw.view());
  expected.replace(expected.find(tid_text), tid_text.size(), "7");
  expected.replace(expected.find(pid_text), pid_text.size(), "5");
  EXPECT_EQ(out, expected);
}

// A value of 256 bytes or more, near the event's start, is past what a span's 8-bit length
// holds: its event keeps its spans in a record, and reads and writes it back exactly.
TEST(EventSpans, AValueLongerThanAByteSaysIsReadAndWrittenExactly) {
  for (size_t size : {size_t(253), size_t(254), size_t(300), size_t(5000)}) {
    const std::string name = long_text(size, 'n'), name_text = "\"" + name + "\"";
    Trace trace = parse_trace(R"({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "op", "pid": 3, "tid": 4, )"
                              R"("ts": 1.5, "dur": 2, "args": {"name": )" +
                                  name_text + "}}]}",
                              "long.json");
    ASSERT_EQ(trace.events.size(), 1u);
    Event event = trace.events[0];
    EXPECT_EQ(event.far_spans, name_text.size() > 0xff) << size;
    EXPECT_EQ(event.value_text(kArgName), name_text) << size;
    std::string buffer;
    EXPECT_EQ(event.arg_name(buffer), name) << size;
    EXPECT_EQ(event.value_text(kTs), "1.5") << size;
    event.set_tid(7);
    std::string out;
    append_event(out, event);
    std::string expected(event.raw.view());
    expected.replace(expected.find("\"tid\": 4"), 8, "\"tid\": 7");
    EXPECT_EQ(out, expected) << size;
  }
}

// A ph of one character (as JSON reads it) is held in the event; any other, in its far
// record; an absent or empty ph reads as empty. Each is written back as read.
TEST(EventPh, OneCharacterIsHeldInTheEventAndAnyOtherInItsRecord) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"("X")", "X"}, {R"("\u0058")", "X"},        {R"("XX")", "XX"}, {R"("\u0000")", std::string(1, '\0')},
      {R"("")", ""},   {R"("\u00e9")", "\xc3\xa9"}, {"5", ""},
  };
  std::string json = R"({"traceEvents": [)";
  for (const auto& [text, ph] : cases) json += R"({"ph": )" + text + R"(, "name": "e", "pid": 1, "tid": 2, "ts": 3},)";
  json += R"({"name": "no ph", "pid": 1}]})";
  Trace trace = parse_trace(json, "ph.json");
  ASSERT_EQ(trace.events.size(), cases.size() + 1);
  for (size_t k = 0; k < cases.size(); ++k) {
    const Event& event = trace.events[k];
    EXPECT_EQ(event.ph(), cases[k].second) << cases[k].first;
    EXPECT_EQ(event.far_spans, !cases[k].second.empty() && !Event::ph_fits(cases[k].second)) << cases[k].first;
    std::string out;
    append_event(out, event);
    EXPECT_EQ(out, event.raw.view()) << cases[k].first;
  }
  EXPECT_EQ(trace.events.back().ph(), "");
  EXPECT_FALSE(trace.events.back().far_spans);
  EXPECT_FALSE(trace.events[0].is_flow());
}

// append_json_string, which writes every string tracelane makes (lane names, arrows,
// summaries): every byte, alone and between plain text on either side, comes out as the
// escape tracelane chose for it among those JSON allows (RFC 8259 section 7): the short
// form for '"', '\\', \b \f \n \r \t, \u00XX for the other controls, and every other byte
// as itself.
TEST(JsonString, EveryByteIsEscapedAsJsonSaysWhereverItIsInAString) {
  auto expected_of = [](unsigned char c) -> std::string {
    switch (c) {
      case '"':
        return "\\\"";
      case '\\':
        return "\\\\";
      case '\b':
        return "\\b";
      case '\f':
        return "\\f";
      case '\n':
        return "\\n";
      case '\r':
        return "\\r";
      case '\t':
        return "\\t";
      default:
        break;
    }
    if (c >= 0x20) return std::string(1, char(c));
    const char* hex = "0123456789abcdef";
    return std::string("\\u00") + hex[c >> 4] + hex[c & 15];
  };
  for (int byte = 0; byte < 256; ++byte) {
    const char c = char(byte);
    const std::string one = expected_of(static_cast<unsigned char>(c));
    for (const auto& [before, after] : std::vector<std::pair<std::string, std::string>>{
             {"", ""}, {"ab", ""}, {"", "yz"}, {"ab", "yz"}, {"a\"", "\\z"}}) {
      std::string expected = "\"";
      for (char b : before) expected += expected_of(static_cast<unsigned char>(b));
      expected += one;
      for (char a : after) expected += expected_of(static_cast<unsigned char>(a));
      expected += "\"";
      std::string out = "x";  // appended to, not replaced
      append_json_string(out, before + c + after);
      EXPECT_EQ(out, "x" + expected) << "byte " << byte << " between \"" << before << "\" and \"" << after << "\"";
    }
  }
  std::string empty;
  append_json_string(empty, "");
  EXPECT_EQ(empty, "\"\"");
}

}  // namespace
