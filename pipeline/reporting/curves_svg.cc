#include "pipeline/reporting/curves_svg.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"

namespace pipeline {
namespace {

constexpr double kPanelWidth = 440, kPanelHeight = 320;
// The legend sits in a row of its own between the heading and the plot, so
// it never covers a curve.
constexpr double kLeft = 64, kRight = 16, kTop = 60, kBottom = 48;
constexpr char kTrainColor[] = "#1f77b4";
constexpr char kValidationColor[] = "#d62728";

std::string Escape(const std::string& text) {
  return absl::StrReplaceAll(text, {{"&", "&amp;"}, {"<", "&lt;"}, {">", "&gt;"}, {"\"", "&quot;"}});
}

// Tick spacing of 1, 2 or 5 times a power of ten giving about `target` ticks.
double NiceStep(double range, int target) {
  const double raw = range / target;
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0}) {
    if (raw <= m * magnitude) return m * magnitude;
  }
  return 10 * magnitude;
}

struct Range {
  double low, high, step;
};

Range NiceRange(double low, double high, int target) {
  if (!(high > low)) {
    const double pad = std::max(std::abs(high) * 0.1, 0.01);
    low -= pad;
    high += pad;
  }
  const double step = NiceStep(high - low, target);
  return {std::floor(low / step) * step, std::ceil(high / step) * step, step};
}

std::string Number(double value, double step) {
  // As many decimals as the tick spacing needs.
  const int decimals = step >= 1 ? 0 : static_cast<int>(std::ceil(-std::log10(step) - 1e-9));
  return absl::StrFormat("%.*f", decimals, value);
}

struct Series {
  std::string name;
  const char* color;
  std::vector<std::pair<int64_t, double>> values;
};

// One chart at (x0, y0): axes, ticks, grid, labels, the series, a legend.
std::string Panel(double x0, double y0, const std::string& heading, const std::string& y_label,
                  const std::vector<Series>& series, int64_t last_epoch, bool percent) {
  double low = INFINITY, high = -INFINITY;
  for (const Series& s : series) {
    for (const auto& [epoch, value] : s.values) {
      low = std::min(low, value);
      high = std::max(high, value);
    }
  }
  if (!std::isfinite(low)) low = high = 0;
  // Loss from zero, so the drop reads at its true size; accuracy zoomed to
  // where the values are.
  if (!percent) low = std::min(low, 0.0);
  Range y = NiceRange(low, high, 5);
  if (percent) {
    y.low = std::max(y.low, 0.0);
    y.high = std::min(y.high, 100.0);
  }
  const double plot_w = kPanelWidth - kLeft - kRight, plot_h = kPanelHeight - kTop - kBottom;
  const double x_low = last_epoch > 1 ? 1 : 0.5, x_high = last_epoch > 1 ? last_epoch : 1.5;
  auto px = [&](double epoch) { return x0 + kLeft + (epoch - x_low) / (x_high - x_low) * plot_w; };
  auto py = [&](double value) {
    return y0 + kTop + plot_h - (value - y.low) / (y.high - y.low) * plot_h;
  };

  std::string svg = absl::StrFormat(
      "<g class=\"panel\">\n<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" "
      "font-size=\"15\" font-weight=\"bold\">%s</text>\n",
      x0 + kLeft + plot_w / 2, y0 + 22, Escape(heading));
  // Y ticks and grid.
  for (double v = y.low; v <= y.high + y.step / 2; v += y.step) {
    absl::StrAppendFormat(&svg,
                          "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>"
                          "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\" font-size=\"11\">%s"
                          "</text>\n",
                          x0 + kLeft, py(v), x0 + kLeft + plot_w, py(v), x0 + kLeft - 6,
                          py(v) + 4, Number(v, y.step));
  }
  // X ticks at whole epochs, thinned to about 10.
  const int64_t every = std::max<int64_t>(1, static_cast<int64_t>(NiceStep(
                                                 std::max<double>(last_epoch, 1), 10)));
  for (int64_t e = 1; e <= last_epoch; ++e) {
    if (e != 1 && e % every != 0) continue;
    absl::StrAppendFormat(&svg,
                          "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#333\"/>"
                          "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" font-size=\"11\">%d"
                          "</text>\n",
                          px(e), y0 + kTop + plot_h, px(e), y0 + kTop + plot_h + 5, px(e),
                          y0 + kTop + plot_h + 18, e);
  }
  // Axes and their labels.
  absl::StrAppendFormat(
      &svg,
      "<path d=\"M%.1f %.1f V%.1f H%.1f\" fill=\"none\" stroke=\"#333\"/>\n"
      "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" font-size=\"12\">epoch</text>\n"
      "<text transform=\"translate(%.1f %.1f) rotate(-90)\" text-anchor=\"middle\" "
      "font-size=\"12\">%s</text>\n",
      x0 + kLeft, y0 + kTop, y0 + kTop + plot_h, x0 + kLeft + plot_w, x0 + kLeft + plot_w / 2,
      y0 + kPanelHeight - 8, x0 + 16, y0 + kTop + plot_h / 2, Escape(y_label));
  // The series: a line through the points, each point with its value.
  for (const Series& s : series) {
    if (s.values.empty()) continue;
    std::string points;
    for (const auto& [epoch, value] : s.values) {
      absl::StrAppendFormat(&points, "%s%.1f,%.1f", points.empty() ? "" : " ", px(epoch),
                            py(value));
    }
    absl::StrAppendFormat(&svg,
                          "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" "
                          "points=\"%s\"/>\n",
                          s.color, points);
    for (const auto& [epoch, value] : s.values) {
      absl::StrAppendFormat(&svg,
                            "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"><title>%s, "
                            "epoch %d: %s</title></circle>\n",
                            px(epoch), py(value), s.color, Escape(s.name), epoch,
                            percent ? absl::StrFormat("%.2f%%", value)
                                    : absl::StrFormat("%.4f", value));
    }
  }
  // Legend: one row above the plot, entries side by side.
  const double legend_y = y0 + 40;
  double legend_x = x0 + kLeft;
  for (const Series& s : series) {
    if (s.values.empty()) continue;
    absl::StrAppendFormat(&svg,
                          "<g class=\"legend\"><line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" "
                          "y2=\"%.1f\" stroke=\"%s\" stroke-width=\"2\"/><text x=\"%.1f\" "
                          "y=\"%.1f\" font-size=\"12\">%s</text></g>\n",
                          legend_x, legend_y, legend_x + 20, legend_y, s.color, legend_x + 26,
                          legend_y + 4, Escape(s.name));
    // About 7 px per character at font-size 12.
    legend_x += 26 + 7.0 * static_cast<double>(s.name.size()) + 20;
  }
  svg += "</g>\n";
  return svg;
}

// kResourceExhausted for a full disk, as the checkpoint writer's errors.
absl::Status WriteError(const std::string& path, int error_number) {
  const std::string message =
      absl::StrCat("cannot write ", path, ": ", std::strerror(error_number));
  return error_number == ENOSPC || error_number == EDQUOT ? absl::ResourceExhaustedError(message)
                                                          : absl::InternalError(message);
}

}  // namespace

std::string RenderCurvesSvg(const std::vector<EpochPoint>& points, const std::string& title) {
  Series train_loss{"train loss", kTrainColor, {}}, val_loss{"validation loss", kValidationColor, {}};
  Series train_acc{"train accuracy", kTrainColor, {}},
      val_acc{"validation accuracy", kValidationColor, {}};
  int64_t last_epoch = 1;
  for (const EpochPoint& p : points) {
    last_epoch = std::max(last_epoch, p.epoch);
    train_loss.values.push_back({p.epoch, p.train_loss});
    train_acc.values.push_back({p.epoch, 100 * p.train_accuracy});
    if (p.val_loss) val_loss.values.push_back({p.epoch, *p.val_loss});
    if (p.val_accuracy) val_acc.values.push_back({p.epoch, 100 * *p.val_accuracy});
  }
  const double width = 2 * kPanelWidth, height = kPanelHeight + 30;
  std::string svg = absl::StrFormat(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
      "viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\">\n"
      "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
      "<text x=\"%.1f\" y=\"20\" text-anchor=\"middle\" font-size=\"14\">%s</text>\n",
      width, height, width, height, width / 2, Escape(title));
  svg += Panel(0, 30, "Loss", "cross-entropy loss", {train_loss, val_loss}, last_epoch, false);
  svg += Panel(kPanelWidth, 30, "Accuracy", "accuracy (%)", {train_acc, val_acc}, last_epoch,
               true);
  svg += "</svg>\n";
  return svg;
}

absl::Status WriteCurvesSvg(const std::string& path, const std::vector<EpochPoint>& points,
                            const std::string& title) {
  const std::string temporary = path + ".tmp";
  {
    std::ofstream file(temporary, std::ios::binary | std::ios::trunc);
    file << RenderCurvesSvg(points, title);
    if (!file.flush()) {
      // errno before remove() can change it; the torn file goes, the last
      // whole plot stays.
      const absl::Status error = WriteError(path, errno);
      std::remove(temporary.c_str());
      return error;
    }
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    const absl::Status error = WriteError(path, errno);
    std::remove(temporary.c_str());
    return error;
  }
  return absl::OkStatus();
}

}  // namespace pipeline
