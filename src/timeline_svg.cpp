// The timeline picture as a standalone SVG (`--preview FILE.svg`): a title, then per rank
// (in the order given: PP order for a merge) a header and one strip per lane group, each
// strip a row of bars as tall as the group's occupancy of that time bin; a time axis with
// round ticks below. Plain SVG 1.1: no script, no external reference (fonts are named, never
// fetched), so any browser or image viewer shows it, offline. Hovering a strip shows its
// numbers (an SVG <title>, which browsers show as a tooltip without any script).
#include <cmath>
#include <cstdio>

#include "tracelane/figures.hpp"

namespace tracelane {

// Text for XML: markup characters escaped; bytes that are not valid UTF-8, and control
// characters XML 1.0 forbids, become U+FFFD, so that any name makes a well-formed document.
std::string xml_text(std::string_view text) {
  std::string out;
  const char* kReplacement = "\xEF\xBF\xBD";
  for (size_t i = 0; i < text.size();) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      switch (c) {
        case '&': out += "&amp;"; break;
        case '<': out += "&lt;"; break;
        case '>': out += "&gt;"; break;
        case '"': out += "&quot;"; break;
        case '\'': out += "&#39;"; break;
        default: out += (c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7f ? kReplacement : std::string(1, char(c));
      }
      ++i;
      continue;
    }
    // A well-formed UTF-8 sequence (no overlongs, no surrogates, at most U+10FFFF).
    size_t length = c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
    bool valid = length > 0 && i + length <= text.size();
    for (size_t k = 1; valid && k < length; ++k) valid = (static_cast<unsigned char>(text[i + k]) & 0xC0) == 0x80;
    if (valid && length >= 3) {
      unsigned char second = static_cast<unsigned char>(text[i + 1]);
      if ((c == 0xE0 && second < 0xA0) || (c == 0xED && second >= 0xA0) || (c == 0xF0 && second < 0x90) ||
          (c == 0xF4 && second >= 0x90))
        valid = false;
    }
    if (!valid) {
      out += kReplacement;
      ++i;
      continue;
    }
    out.append(text.substr(i, length));
    i += length;
  }
  return out;
}

namespace {


std::string number(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.1f", value);
  return buffer;
}

std::string percent(int ten_thousandths) {
  if (ten_thousandths > 0 && ten_thousandths < 5) return "<0.1%";  // busy, if briefly: never "0.0%"
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.1f%%", ten_thousandths / 100.0);
  return buffer;
}

// A colour per group; the built-in groups get fixed ones (Tableau 10), others one from the
// same palette by a hash of their id, so a group keeps its colour from picture to picture.
const char* colour_of(const std::string& group) {
  static const std::pair<const char*, const char*> known[] = {
      {"compute", "#4e79a7"},        {"nccl_all_gather", "#f28e2b"}, {"nccl_reduce_scatter", "#e15759"},
      {"nccl_all_reduce", "#b07aa1"}, {"nccl_other", "#9c755f"},      {"memcpy", "#59a14f"},
      {"memset", "#76b7b2"},         {"sync", "#8c8c8c"},            {"symmetric_memory_barrier", "#edc948"}};
  for (const auto& [id, colour] : known)
    if (group == id) return colour;
  static const char* palette[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
                                  "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};
  uint32_t hash = 2166136261u;  // FNV-1a
  for (unsigned char c : group) hash = (hash ^ c) * 16777619u;
  return palette[hash % 10];
}

// A duration in microseconds for an axis label or a caption: "750 us", "12.5 ms", "3.2 s".
std::string duration(double us) {
  char buffer[48];
  double magnitude = std::fabs(us);
  if (magnitude < 1000)
    std::snprintf(buffer, sizeof buffer, "%.4g \xC2\xB5s", us);
  else if (magnitude < 1e6)
    std::snprintf(buffer, sizeof buffer, "%.4g ms", us / 1e3);
  else
    std::snprintf(buffer, sizeof buffer, "%.4g s", us / 1e6);
  return buffer;
}

// A round tick step (1, 2 or 5 times a power of ten) giving at most about eight ticks.
double tick_step(double span) {
  if (!(span > 0)) return 0;
  double raw = span / 8;
  double power = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * power >= raw) return m * power;
  return 10 * power;
}

}  // namespace

std::string timeline_svg(const GpuFigures& figures, const std::string& title) {
  const Timeline& timeline = figures.timeline;
  const int bins = timeline.bins > 0 ? timeline.bins : 1;
  // Layout in pixels.
  const double width = 1100, left = 200, right = 70, plot = width - left - right;
  const double strip_height = 16, strip_gap = 3, header_height = 22, block_gap = 10;
  const double title_height = 58, axis_height = 40;

  // Ranks as blocks of consecutive strips (a file has one block).
  struct Block {
    size_t first = 0, count = 0;
  };
  std::vector<Block> blocks;
  for (size_t s = 0; s < timeline.strips.size(); ++s) {
    const TimelineStrip& strip = timeline.strips[s];
    if (blocks.empty() || timeline.strips[blocks.back().first].rank != strip.rank ||
        timeline.strips[blocks.back().first].pp_rank != strip.pp_rank)
      blocks.push_back({s, 0});
    blocks.back().count++;
  }
  double body = 0;
  for (const Block& block : blocks) body += header_height + double(block.count) * (strip_height + strip_gap) + block_gap;
  if (blocks.empty()) body = 30;
  const double height = title_height + body + axis_height;

  std::string out;
  out += "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out += "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"" + number(width) + "\" height=\"" +
         number(height) + "\" viewBox=\"0 0 " + number(width) + " " + number(height) + "\"" +
         " font-family=\"system-ui, -apple-system, 'Segoe UI', Roboto, Helvetica, Arial, sans-serif\">\n";
  out += "<title>" + xml_text(title) + " \xE2\x80\x94 GPU timeline</title>\n";
  out += "<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n";

  // Title and caption.
  out += "<text x=\"16\" y=\"24\" font-size=\"16\" font-weight=\"600\" fill=\"#1f2328\">" + xml_text(title) + "</text>\n";
  std::string caption = "GPU window " + duration(figures.window_us);
  if (figures.merged) {
    caption += " \xC2\xB7 " + std::to_string(blocks.size()) + " ranks in PP order, on the merge's common clock";
  } else {
    caption += " \xC2\xB7 " + std::to_string(figures.busy.size()) + " lane groups";
  }
  caption += " \xC2\xB7 bar height: share of each time bin the group was busy";
  out += "<text x=\"16\" y=\"44\" font-size=\"12\" fill=\"#57606a\">" + xml_text(caption) + "</text>\n";

  double span = timeline.end_us - timeline.start_us;
  double step = tick_step(span);
  double plot_top = title_height, plot_bottom = title_height + body;
  // Vertical grid lines first, so strips are drawn over them.
  out += "<g stroke=\"#d0d7de\" stroke-width=\"1\">\n";
  if (step > 0)
    for (double t = 0; t <= span * (1 + 1e-9); t += step) {
      double x = left + plot * t / span;
      out += "<line x1=\"" + number(x) + "\" y1=\"" + number(plot_top) + "\" x2=\"" + number(x) + "\" y2=\"" +
             number(plot_bottom + 4) + "\"/>\n";
    }
  out += "</g>\n";

  if (blocks.empty())
    out += "<text x=\"" + number(left) + "\" y=\"" + number(title_height + 18) +
           "\" font-size=\"12\" fill=\"#57606a\">no GPU slices</text>\n";
  double y = title_height;
  const double bin_width = plot / bins;
  for (const Block& block : blocks) {
    const TimelineStrip& head = timeline.strips[block.first];
    std::string header;
    if (head.pp_rank) header += "PP rank " + std::to_string(*head.pp_rank);
    if (head.rank) header += std::string(header.empty() ? "" : " \xC2\xB7 ") + "global rank " + std::to_string(*head.rank);
    if (header.empty()) header = "GPU";
    if (figures.merged && head.rank) {
      auto bubble = figures.bubble.find(*head.rank);
      if (bubble != figures.bubble.end()) header += " \xC2\xB7 pipeline bubble " + percent(bubble->second);
    }
    out += "<text x=\"16\" y=\"" + number(y + 15) + "\" font-size=\"12\" font-weight=\"600\" fill=\"#1f2328\">" +
           xml_text(header) + "</text>\n";
    y += header_height;
    for (size_t s = block.first; s < block.first + block.count; ++s) {
      const TimelineStrip& strip = timeline.strips[s];
      const char* colour = colour_of(strip.group);
      std::string tip = header + " \xC2\xB7 " + (strip.label.empty() ? strip.group : strip.label);
      if (strip.busy >= 0) tip += ": busy " + percent(strip.busy) + " of the window";
      // class and data-* name the strip for whoever reads the picture as data (tests, pages).
      out += "<g class=\"strip\"";
      if (strip.rank) out += " data-rank=\"" + std::to_string(*strip.rank) + "\"";
      if (strip.pp_rank) out += " data-pp-rank=\"" + std::to_string(*strip.pp_rank) + "\"";
      out += " data-group=\"" + xml_text(strip.group) + "\">\n<title>" + xml_text(tip) + "</title>\n";
      out += "<text x=\"" + number(left - 10) + "\" y=\"" + number(y + 12) +
             "\" font-size=\"11.5\" text-anchor=\"end\" fill=\"#24292f\">" +
             xml_text(strip.label.empty() ? strip.group : strip.label) + "</text>\n";
      out += "<rect x=\"" + number(left) + "\" y=\"" + number(y) + "\" width=\"" + number(plot) + "\" height=\"" +
             number(strip_height) + "\" fill=\"#f6f8fa\"/>\n";
      // One bar per run of equal digits: fewer elements, and no seams between equal bins.
      out += "<g fill=\"" + std::string(colour) + "\">";
      const std::string& digits = strip.occupancy;
      for (size_t b = 0; b < digits.size();) {
        size_t e = b;
        while (e < digits.size() && digits[e] == digits[b]) ++e;
        int level = digits[b] - '0';
        if (level > 0 && level <= 9) {
          double bar = strip_height * level / 9.0;
          out += "<rect x=\"" + number(left + bin_width * double(b)) + "\" y=\"" + number(y + strip_height - bar) +
                 "\" width=\"" + number(bin_width * double(e - b)) + "\" height=\"" + number(bar) + "\"/>";
        }
        b = e;
      }
      out += "</g>\n";
      if (strip.busy >= 0)
        out += "<text x=\"" + number(left + plot + 8) + "\" y=\"" + number(y + 12) +
               "\" font-size=\"11\" fill=\"#57606a\">" + xml_text(percent(strip.busy)) + "</text>\n";
      out += "</g>\n";
      y += strip_height + strip_gap;
    }
    y += block_gap;
  }

  // The time axis, relative to the window's start.
  double axis = plot_bottom + 4;
  out += "<line x1=\"" + number(left) + "\" y1=\"" + number(axis) + "\" x2=\"" + number(left + plot) + "\" y2=\"" +
         number(axis) + "\" stroke=\"#57606a\" stroke-width=\"1\"/>\n";
  out += "<g font-size=\"11\" fill=\"#57606a\" text-anchor=\"middle\">\n";
  if (step > 0)
    for (double t = 0; t <= span * (1 + 1e-9); t += step)
      out += "<text x=\"" + number(left + plot * t / span) + "\" y=\"" + number(axis + 15) + "\">" +
             xml_text(t == 0 ? std::string("0") : duration(t)) + "</text>\n";
  out += "</g>\n";
  out += "<text x=\"" + number(left + plot) + "\" y=\"" + number(axis + 31) +
         "\" font-size=\"11\" fill=\"#57606a\" text-anchor=\"end\">time since the window's start (" +
         xml_text(real_text(timeline.start_us)) + " \xC2\xB5s)</text>\n";
  out += "</svg>\n";
  return out;
}

}  // namespace tracelane
