#include "plugins/models/common/dropout.h"

#include "absl/strings/str_cat.h"

namespace pipeline {

absl::Status ValidateDropout(double dropout) { return ValidateDropout(dropout, "dropout"); }

absl::Status ValidateDropout(double dropout, absl::string_view field) {
  // Written to also reject NaN.
  if (!(dropout >= 0 && dropout <= 1)) {
    return absl::InvalidArgumentError(absl::StrCat(field, ": ", dropout,
                                                   " is not a probability from 0 to 1 "
                                                   "(torch.nn.Dropout's range); set 0 to "
                                                   "disable dropout"));
  }
  return absl::OkStatus();
}

}  // namespace pipeline
