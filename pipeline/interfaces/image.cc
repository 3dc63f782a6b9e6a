#include "pipeline/interfaces/image.h"

#include "absl/strings/str_cat.h"

namespace pipeline {

std::string Image::ShapeString() const { return absl::StrCat(height, "x", width, "x", channels); }

}  // namespace pipeline
