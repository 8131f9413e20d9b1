//===- TuningPlot.h - A tune's candidates as a picture ------------*- C++
//-*-===//
//
// `attnc tune --report DIR` writes DIR/candidates.svg beside the CSV: one
// panel per schedule parameter (for the mlir backend query tile, key tile,
// score block, P·V block), each candidate's time against that parameter's
// value, the default and the best marked, failed candidates along the top. A
// self-contained SVG file: any browser shows it.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_TUNING_TUNINGPLOT_H
#define ATTNC_TUNING_TUNINGPLOT_H

#include "Tuning/TuningDatabase.h"

#include <string>
#include <vector>

namespace attnc::tuning {

struct PlotPoint {
  std::vector<std::string> parameters; ///< One value per parameter name.
  std::string description;
  Outcome outcome = Outcome::ok;
  double timeMs = 0;
};

/// The SVG text, one panel per parameter; `points[0]` is the default.
/// `title` heads the picture.
std::string tuningPlotSvg(const std::vector<PlotPoint> &points,
                          const std::vector<std::string> &parameterNames,
                          const std::string &title);

} // namespace attnc::tuning

#endif // ATTNC_TUNING_TUNINGPLOT_H
