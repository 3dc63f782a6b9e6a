#include "tools/bench/markdown_table.h"

#include "absl/strings/str_format.h"

namespace pipeline {
namespace bench {
namespace {

std::string Line(const std::vector<std::string>& cells) {
  std::string text = "|";
  for (const std::string& cell : cells) text += " " + cell + " |";
  return text + "\n";
}

}  // namespace

void MarkdownTable::Print(std::ostream& out) const {
  out << Line(header_);
  out << Line(std::vector<std::string>(header_.size(), "---"));
  for (const auto& row : rows_) out << Line(row);
  out << "\n" << std::flush;
}

std::string Ratio(double a, double b) { return b > 0 ? absl::StrFormat("%.2f", a / b) : "-"; }

}  // namespace bench
}  // namespace pipeline
