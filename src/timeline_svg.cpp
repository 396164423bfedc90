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
        case '&':
          out += "&amp;";
          break;
        case '<':
          out += "&lt;";
          break;
        case '>':
          out += "&gt;";
          break;
        case '"':
          out += "&quot;";
          break;
        case '\'':
          out += "&#39;";
          break;
        default:
          out +=
              (c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7f ? kReplacement : std::string(1, char(c));
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
  static const std::pair<const char*, const char*> known[] = {{"compute", "#4e79a7"},
                                                              {"nccl_all_gather", "#f28e2b"},
                                                              {"nccl_reduce_scatter", "#e15759"},
                                                              {"nccl_all_reduce", "#b07aa1"},
                                                              {"nccl_other", "#9c755f"},
                                                              {"memcpy", "#59a14f"},
                                                              {"memset", "#76b7b2"},
                                                              {"sync", "#8c8c8c"},
                                                              {"symmetric_memory_barrier", "#edc948"}};
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

// Ranks as blocks of consecutive strips (a file has one block).
struct Block {
  size_t first = 0, count = 0;
};
std::vector<Block> blocks_of(const Timeline& timeline) {
  std::vector<Block> blocks;
  for (size_t s = 0; s < timeline.strips.size(); ++s) {
    const TimelineStrip& strip = timeline.strips[s];
    if (blocks.empty() || timeline.strips[blocks.back().first].rank != strip.rank ||
        timeline.strips[blocks.back().first].pp_rank != strip.pp_rank)
      blocks.push_back({s, 0});
    blocks.back().count++;
  }
  return blocks;
}

// The picture, drawn top to bottom: title, grid, one block of strips per rank, time axis.
class TimelinePicture {
 public:
  TimelinePicture(const GpuFigures& figures, const std::string& title)
      : figures_(figures), timeline_(figures.timeline), title_(title), blocks_(blocks_of(timeline_)) {
    for (const Block& block : blocks_)
      body_ += kHeaderHeight + double(block.count) * (kStripHeight + kStripGap) + kBlockGap;
    if (blocks_.empty()) body_ = 30;
    span_ = timeline_.end_us - timeline_.start_us;
    step_ = tick_step(span_);
    bin_width_ = kPlot / (timeline_.bins > 0 ? timeline_.bins : 1);
  }

  std::string draw() {
    draw_title();
    draw_grid();
    if (blocks_.empty())
      out_ += "<text x=\"" + number(kLeft) + "\" y=\"" + number(kTitleHeight + 18) +
              "\" font-size=\"12\" fill=\"#57606a\">no GPU slices</text>\n";
    double y = kTitleHeight;
    for (const Block& block : blocks_) y = draw_block(block, y);
    draw_axis();
    out_ += "</svg>\n";
    return std::move(out_);
  }

 private:
  // Layout in pixels.
  static constexpr double kWidth = 1100, kLeft = 200, kRight = 70, kPlot = kWidth - kLeft - kRight;
  static constexpr double kStripHeight = 16, kStripGap = 3, kHeaderHeight = 22, kBlockGap = 10;
  static constexpr double kTitleHeight = 58, kAxisHeight = 40;

  double plot_bottom() const { return kTitleHeight + body_; }

  void draw_title() {
    const double height = kTitleHeight + body_ + kAxisHeight;
    out_ += "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
    out_ += "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"" + number(kWidth) + "\" height=\"" +
            number(height) + "\" viewBox=\"0 0 " + number(kWidth) + " " + number(height) + "\"" +
            " font-family=\"system-ui, -apple-system, 'Segoe UI', Roboto, Helvetica, Arial, sans-serif\">\n";
    out_ += "<title>" + xml_text(title_) + " \xE2\x80\x94 GPU timeline</title>\n";
    out_ += "<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n";
    out_ += "<text x=\"16\" y=\"24\" font-size=\"16\" font-weight=\"600\" fill=\"#1f2328\">" + xml_text(title_) +
            "</text>\n";
    std::string caption = "GPU window " + duration(figures_.window_us);
    if (figures_.merged) {
      caption += " \xC2\xB7 " + std::to_string(blocks_.size()) + " ranks in PP order, on the merge's common clock";
    } else {
      caption += " \xC2\xB7 " + std::to_string(figures_.busy.size()) + " lane groups";
    }
    caption += " \xC2\xB7 bar height: share of each time bin the group was busy";
    out_ += "<text x=\"16\" y=\"44\" font-size=\"12\" fill=\"#57606a\">" + xml_text(caption) + "</text>\n";
  }

  // Vertical grid lines first, so strips are drawn over them.
  void draw_grid() {
    out_ += "<g stroke=\"#d0d7de\" stroke-width=\"1\">\n";
    if (step_ > 0)
      for (double t = 0; t <= span_ * (1 + 1e-9); t += step_) {
        double x = kLeft + kPlot * t / span_;
        out_ += "<line x1=\"" + number(x) + "\" y1=\"" + number(kTitleHeight) + "\" x2=\"" + number(x) + "\" y2=\"" +
                number(plot_bottom() + 4) + "\"/>\n";
      }
    out_ += "</g>\n";
  }

  // A rank's header and its strips from `y`; returns where the next block starts.
  double draw_block(const Block& block, double y) {
    const TimelineStrip& head = timeline_.strips[block.first];
    std::string header;
    if (head.pp_rank) header += "PP rank " + std::to_string(*head.pp_rank);
    if (head.rank)
      header += std::string(header.empty() ? "" : " \xC2\xB7 ") + "global rank " + std::to_string(*head.rank);
    if (header.empty()) header = "GPU";
    if (figures_.merged && head.rank) {
      auto bubble = figures_.bubble.find(*head.rank);
      if (bubble != figures_.bubble.end()) header += " \xC2\xB7 pipeline bubble " + percent(bubble->second);
    }
    out_ += "<text x=\"16\" y=\"" + number(y + 15) + "\" font-size=\"12\" font-weight=\"600\" fill=\"#1f2328\">" +
            xml_text(header) + "</text>\n";
    y += kHeaderHeight;
    for (size_t s = block.first; s < block.first + block.count; ++s) {
      draw_strip(timeline_.strips[s], header, y);
      y += kStripHeight + kStripGap;
    }
    return y + kBlockGap;
  }

  void draw_strip(const TimelineStrip& strip, const std::string& header, double y) {
    std::string tip = header + " \xC2\xB7 " + (strip.label.empty() ? strip.group : strip.label);
    if (strip.busy >= 0) tip += ": busy " + percent(strip.busy) + " of the window";
    // class and data-* name the strip for whoever reads the picture as data (tests, pages).
    out_ += "<g class=\"strip\"";
    if (strip.rank) out_ += " data-rank=\"" + std::to_string(*strip.rank) + "\"";
    if (strip.pp_rank) out_ += " data-pp-rank=\"" + std::to_string(*strip.pp_rank) + "\"";
    out_ += " data-group=\"" + xml_text(strip.group) + "\">\n<title>" + xml_text(tip) + "</title>\n";
    out_ += "<text x=\"" + number(kLeft - 10) + "\" y=\"" + number(y + 12) +
            "\" font-size=\"11.5\" text-anchor=\"end\" fill=\"#24292f\">" +
            xml_text(strip.label.empty() ? strip.group : strip.label) + "</text>\n";
    out_ += "<rect x=\"" + number(kLeft) + "\" y=\"" + number(y) + "\" width=\"" + number(kPlot) + "\" height=\"" +
            number(kStripHeight) + "\" fill=\"#f6f8fa\"/>\n";
    // One bar per run of equal digits: fewer elements, and no seams between equal bins.
    out_ += "<g fill=\"" + std::string(colour_of(strip.group)) + "\">";
    const std::string& digits = strip.occupancy;
    for (size_t b = 0; b < digits.size();) {
      size_t e = b;
      while (e < digits.size() && digits[e] == digits[b]) ++e;
      int level = digits[b] - '0';
      if (level > 0 && level <= 9) {
        double bar = kStripHeight * level / 9.0;
        out_ += "<rect x=\"" + number(kLeft + bin_width_ * double(b)) + "\" y=\"" + number(y + kStripHeight - bar) +
                "\" width=\"" + number(bin_width_ * double(e - b)) + "\" height=\"" + number(bar) + "\"/>";
      }
      b = e;
    }
    out_ += "</g>\n";
    if (strip.busy >= 0)
      out_ += "<text x=\"" + number(kLeft + kPlot + 8) + "\" y=\"" + number(y + 12) +
              "\" font-size=\"11\" fill=\"#57606a\">" + xml_text(percent(strip.busy)) + "</text>\n";
    out_ += "</g>\n";
  }

  // The time axis, relative to the window's start.
  void draw_axis() {
    double axis = plot_bottom() + 4;
    out_ += "<line x1=\"" + number(kLeft) + "\" y1=\"" + number(axis) + "\" x2=\"" + number(kLeft + kPlot) +
            "\" y2=\"" + number(axis) + "\" stroke=\"#57606a\" stroke-width=\"1\"/>\n";
    out_ += "<g font-size=\"11\" fill=\"#57606a\" text-anchor=\"middle\">\n";
    if (step_ > 0)
      for (double t = 0; t <= span_ * (1 + 1e-9); t += step_)
        out_ += "<text x=\"" + number(kLeft + kPlot * t / span_) + "\" y=\"" + number(axis + 15) + "\">" +
                xml_text(t == 0 ? std::string("0") : duration(t)) + "</text>\n";
    out_ += "</g>\n";
    out_ += "<text x=\"" + number(kLeft + kPlot) + "\" y=\"" + number(axis + 31) +
            "\" font-size=\"11\" fill=\"#57606a\" text-anchor=\"end\">time since the window's start (" +
            xml_text(real_text(timeline_.start_us)) + " \xC2\xB5s)</text>\n";
  }

  const GpuFigures& figures_;
  const Timeline& timeline_;
  const std::string& title_;
  std::vector<Block> blocks_;
  double body_ = 0, span_ = 0, step_ = 0, bin_width_ = 0;
  std::string out_;
};

}  // namespace

std::string timeline_svg(const GpuFigures& figures, const std::string& title) {
  return TimelinePicture(figures, title).draw();
}

}  // namespace tracelane
