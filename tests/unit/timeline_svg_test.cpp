// The timeline picture (src/timeline_svg.cpp, docs/figures.md "The picture"): a standalone
// SVG with a header per rank and one strip per lane group, no script and no external
// reference; and xml_text, which makes any name safe inside it.
#include "test_support.hpp"
#include "tracelane/figures.hpp"

using namespace tracelane;

namespace {

size_t count(const std::string& text, const std::string& part) {
  size_t n = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + part.size())) ++n;
  return n;
}

// Two ranks of a merge, two groups each.
GpuFigures two_ranks() {
  GpuFigures figures;
  figures.merged = true;
  figures.window_us = 1000;
  figures.timeline.end_us = 1000;
  for (int64_t rank : {4, 5}) {
    figures.bubble[rank] = 2500;
    for (const char* group : {"compute", "nccl_all_gather"}) {
      TimelineStrip strip;
      strip.rank = rank;
      strip.pp_rank = rank - 4;
      strip.group = group;
      strip.occupancy = std::string(50, '9') + std::string(50, '0');
      figures.timeline.strips.push_back(strip);
    }
  }
  return figures;
}

}  // namespace

TEST(TimelineSvg, DrawsOneStripPerRankAndGroupUnderAHeaderPerRank) {
  const std::string svg = timeline_svg(two_ranks(), "pp_traces_merged_compacted.json.gz");
  EXPECT_NE(svg.find("<svg"), std::string::npos);
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
  EXPECT_EQ(count(svg, "class=\"strip\""), 4u);
  EXPECT_EQ(count(svg, "data-group=\"compute\""), 2u);
  EXPECT_EQ(count(svg, "data-rank=\"5\""), 2u);
  EXPECT_NE(svg.find("global rank 4"), std::string::npos);
  EXPECT_NE(svg.find("global rank 5"), std::string::npos);
  EXPECT_NE(svg.find("pp_traces_merged_compacted.json.gz"), std::string::npos);
}

TEST(TimelineSvg, HasNoScriptAndNoExternalReference) {
  const std::string svg = timeline_svg(two_ranks(), "javascript:alert(1) <script>x</script>");
  EXPECT_EQ(svg.find("<script"), std::string::npos);
  EXPECT_EQ(svg.find("href"), std::string::npos);
  EXPECT_EQ(svg.find("url("), std::string::npos);
  EXPECT_EQ(svg.find("@import"), std::string::npos);
}

TEST(XmlText, EscapesMarkupAndKeepsValidUtf8) {
  EXPECT_EQ(xml_text("a<b>&c"), "a&lt;b&gt;&amp;c");
  EXPECT_EQ(xml_text("caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80"), "caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80");
  EXPECT_EQ(xml_text(""), "");
}

TEST(XmlText, BytesThatAreNotUtf8AndForbiddenControlsBecomeTheReplacementCharacter) {
  const std::string replacement = "\xEF\xBF\xBD";
  EXPECT_EQ(xml_text("a\xff"
                     "b"),
            "a" + replacement + "b");
  EXPECT_EQ(xml_text(std::string("a\x01z", 3)), "a" + replacement + "z");
  EXPECT_EQ(xml_text(std::string("nul\0", 4)), "nul" + replacement);
  // A lead byte without its continuation is not UTF-8 either.
  EXPECT_EQ(xml_text("\xC3"), replacement);
  // Tab and newline are characters XML 1.0 allows.
  EXPECT_EQ(xml_text("a\tb\nc").find(replacement), std::string::npos);
}
