#ifndef PIPELINE_REPORTING_CURVES_SVG_H_
#define PIPELINE_REPORTING_CURVES_SVG_H_

// The training curves of a run as one SVG image (curves.svg in the output
// folder): loss and accuracy per epoch, training and validation, side by
// side. Plain SVG with no scripts or fonts to fetch, so any browser or image
// viewer shows it and it can be committed next to a README.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace pipeline {

struct EpochPoint {
  int64_t epoch = 0;  // 1-based
  double train_loss = 0;
  double train_accuracy = 0;  // a fraction, 0..1
  // Epochs without a validation pass have none.
  std::optional<double> val_loss;
  std::optional<double> val_accuracy;
};

// Each data point is a <circle> whose <title> reads e.g.
// "validation loss, epoch 3: 0.4123" (hover text in a browser).
std::string RenderCurvesSvg(const std::vector<EpochPoint>& points, const std::string& title);

// Writes RenderCurvesSvg to `path` through a temporary file and a rename, so a
// viewer never sees half a file.
absl::Status WriteCurvesSvg(const std::string& path, const std::vector<EpochPoint>& points,
                            const std::string& title);

}  // namespace pipeline

#endif  // PIPELINE_REPORTING_CURVES_SVG_H_
