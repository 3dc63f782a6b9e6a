#ifndef PIPELINE_TRAINER_PROGRESS_PRINTER_H_
#define PIPELINE_TRAINER_PROGRESS_PRINTER_H_

#include <ostream>
#include <string>

namespace pipeline {

// Log lines of a run. On a terminal, a transient line (the step progress)
// is redrawn in place behind a bar; elsewhere every line is a plain log
// line. Null `out` prints nothing (ranks other than 0).
class ProgressPrinter {
 public:
  explicit ProgressPrinter(std::ostream* out);

  // `fraction` (0..1) fills the bar; negative draws none.
  void Line(const std::string& text, bool transient = false, double fraction = -1);

 private:
  std::ostream* out_;
  bool terminal_;
  bool pending_ = false;
};

}  // namespace pipeline

#endif  // PIPELINE_TRAINER_PROGRESS_PRINTER_H_
