#include "pipeline/trainer/progress_printer.h"

#include <unistd.h>

#include <algorithm>
#include <iostream>

#include "absl/strings/str_cat.h"

namespace pipeline {

ProgressPrinter::ProgressPrinter(std::ostream* out)
    : out_(out), terminal_(out == &std::cerr && ::isatty(STDERR_FILENO)) {}

void ProgressPrinter::Line(const std::string& text, bool transient, double fraction) {
  if (out_ == nullptr) return;
  if (terminal_ && transient) {
    std::string bar;
    if (fraction >= 0) {
      constexpr int kCells = 24;
      const int filled = static_cast<int>(std::min(1.0, fraction) * kCells + 0.5);
      bar = absl::StrCat("[", std::string(filled, '#'), std::string(kCells - filled, '.'), "] ");
    }
    *out_ << "\r\033[K" << bar << text << std::flush;
    pending_ = true;
    return;
  }
  if (pending_) *out_ << "\r\033[K";
  pending_ = false;
  *out_ << text << "\n" << std::flush;
}

}  // namespace pipeline
