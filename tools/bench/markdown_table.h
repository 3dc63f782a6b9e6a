#ifndef TOOLS_BENCH_MARKDOWN_TABLE_H_
#define TOOLS_BENCH_MARKDOWN_TABLE_H_

// The bench's output: rows collected while the sections measure, printed
// as one Markdown table at the end.

#include <ostream>
#include <string>
#include <vector>

namespace pipeline {
namespace bench {

class MarkdownTable {
 public:
  explicit MarkdownTable(std::vector<std::string> header) : header_(std::move(header)) {}

  void Add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }

  // The header, its separator, the rows in the order added, a blank line.
  void Print(std::ostream& out) const;

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
};

// The ratio column's cell: a / b to two decimals, or "-" when b was not
// measured (0).
std::string Ratio(double a, double b);

}  // namespace bench
}  // namespace pipeline

#endif  // TOOLS_BENCH_MARKDOWN_TABLE_H_
