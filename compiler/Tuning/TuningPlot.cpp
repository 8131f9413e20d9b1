//===- TuningPlot.cpp - A tune's candidates as a picture ------------------===//

#include "Tuning/TuningPlot.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>

namespace attnc::tuning {

namespace {

/// XML text: the title holds a file name a user chose.
std::string escaped(const std::string &text) {
  std::string result;
  for (char c : text) {
    switch (c) {
    case '<':
      result += "&lt;";
      break;
    case '>':
      result += "&gt;";
      break;
    case '&':
      result += "&amp;";
      break;
    case '"':
      result += "&quot;";
      break;
    default:
      if (static_cast<unsigned char>(c) >= 0x20)
        result += c;
    }
  }
  return result;
}

std::string number(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.4g", value);
  return text;
}

bool isNumber(const std::string &text) {
  return !text.empty() &&
         text.find_first_not_of("0123456789") == std::string::npos;
}

} // namespace

std::string tuningPlotSvg(const std::vector<PlotPoint> &points,
                          const std::vector<std::string> &parameterNames,
                          const std::string &title) {
  int panels = int(parameterNames.size());
  int rows = (panels + 1) / 2;
  constexpr int panelWidth = 420, panelHeight = 260, margin = 60, top = 50;
  constexpr int width = 2 * panelWidth + 2 * margin + 20;
  int height = top + rows * (panelHeight + margin) + 20;

  // Times on a log scale shared by every panel.
  double low = 0, high = 0;
  int best = -1;
  for (size_t i = 0; i < points.size(); ++i) {
    if (points[i].outcome != Outcome::ok || !(points[i].timeMs > 0))
      continue;
    double ms = points[i].timeMs;
    low = low == 0 ? ms : std::min(low, ms);
    high = std::max(high, ms);
    if (best < 0 || ms < points[best].timeMs)
      best = int(i);
  }
  if (low == 0)
    low = high = 1;
  double logLow = std::log10(low) - 0.05, logHigh = std::log10(high) + 0.05;
  if (logHigh - logLow < 0.2)
    logHigh = logLow + 0.2;

  std::ostringstream svg;
  svg << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width
      << "\" height=\"" << height << "\" font-family=\"sans-serif\" "
      << "font-size=\"12\">\n"
      << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      << "<text x=\"" << margin << "\" y=\"24\" font-size=\"16\">"
      << escaped(title) << "</text>\n"
      << "<text x=\"" << margin << "\" y=\"40\" fill=\"#555\">ms, fastest run "
      << "(log scale) per candidate; green: the default, orange: the best, "
      << "red along the top: failed</text>\n";

  for (int p = 0; p < panels; ++p) {
    auto valueOf = [&](const PlotPoint &point) {
      return size_t(p) < point.parameters.size() ? point.parameters[p]
                                                 : std::string();
    };
    int x0 = margin + (p % 2) * (panelWidth + margin);
    int y0 = top + margin / 2 + (p / 2) * (panelHeight + margin);
    // The parameter's values in order: numeric ones by value.
    std::vector<std::string> values;
    for (const PlotPoint &point : points) {
      std::string value = valueOf(point);
      if (std::find(values.begin(), values.end(), value) == values.end())
        values.push_back(value);
    }
    std::sort(values.begin(), values.end(),
              [&](const std::string &a, const std::string &b) {
                if (isNumber(a) && isNumber(b))
                  return std::stoll(a) < std::stoll(b);
                return a < b;
              });
    auto xOf = [&](const std::string &value) {
      size_t at =
          std::find(values.begin(), values.end(), value) - values.begin();
      return x0 + (at + 0.5) * panelWidth / values.size();
    };
    auto yOf = [&](double ms) {
      double fraction = (std::log10(ms) - logLow) / (logHigh - logLow);
      return y0 + panelHeight - fraction * panelHeight;
    };
    svg << "<rect x=\"" << x0 << "\" y=\"" << y0 << "\" width=\"" << panelWidth
        << "\" height=\"" << panelHeight
        << "\" fill=\"none\" stroke=\"#999\"/>\n"
        << "<text x=\"" << x0 << "\" y=\"" << y0 + panelHeight + 36 << "\">"
        << escaped(parameterNames[p]) << "</text>\n";
    for (const std::string &value : values)
      svg << "<text x=\"" << xOf(value) << "\" y=\"" << y0 + panelHeight + 16
          << "\" text-anchor=\"middle\">" << escaped(value) << "</text>\n";
    for (double tick = std::ceil(logLow * 4) / 4; tick <= logHigh; tick += 0.25)
      svg << "<text x=\"" << x0 - 4 << "\" y=\"" << yOf(std::pow(10, tick)) + 4
          << "\" text-anchor=\"end\" fill=\"#555\">"
          << number(std::pow(10, tick)) << "</text>\n";
    // Spread a column's points a little so equal values stay visible.
    std::map<std::string, int> column;
    // The default and the best last, over the others.
    std::vector<size_t> order;
    for (size_t i = 1; i < points.size(); ++i)
      if (int(i) != best)
        order.push_back(i);
    order.push_back(0);
    if (best > 0)
      order.push_back(size_t(best));
    for (size_t i : order) {
      if (i >= points.size())
        continue;
      const PlotPoint &point = points[i];
      std::string value = valueOf(point);
      double jitter = ((column[value]++ % 9) - 4) * 2.0;
      double x = xOf(value) + jitter;
      if (point.outcome != Outcome::ok) {
        svg << "<text x=\"" << x << "\" y=\"" << y0 + 10
            << "\" text-anchor=\"middle\" fill=\"#d33\">x</text>\n";
        continue;
      }
      bool isDefault = i == 0, isBest = int(i) == best;
      svg << "<circle cx=\"" << x << "\" cy=\"" << yOf(point.timeMs)
          << "\" r=\"" << (isDefault || isBest ? 6 : 3) << "\" fill=\""
          << (isBest      ? "#f80"
              : isDefault ? "#2a2"
                          : "#36c")
          << "\" fill-opacity=\"" << (isDefault || isBest ? 1.0 : 0.5)
          << "\"><title>" << escaped(point.description) << ": "
          << number(point.timeMs) << " ms</title></circle>\n";
    }
  }
  svg << "</svg>\n";
  return svg.str();
}

} // namespace attnc::tuning
