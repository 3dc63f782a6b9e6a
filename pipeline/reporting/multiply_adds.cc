#include "pipeline/reporting/multiply_adds.h"

#include <cstring>
#include <memory>

#include "ATen/core/ivalue.h"
#include "ATen/record_function.h"

namespace pipeline {
namespace {

thread_local int64_t counted = 0;

int64_t Product(c10::IntArrayRef sizes, size_t from = 0) {
  int64_t product = 1;
  for (size_t i = from; i < sizes.size(); ++i) product *= sizes[i];
  return product;
}

// aten::convolution(input, weight, bias, stride, padding, dilation,
// transposed, output_padding, groups): every output element takes
// (in_channels / groups) * kernel elements of multiply-adds.
int64_t ConvolutionMultiplyAdds(c10::ArrayRef<const c10::IValue> inputs) {
  if (inputs.size() < 9 || !inputs[0].isTensor() || !inputs[1].isTensor()) return 0;
  const c10::IntArrayRef input = inputs[0].toTensor().sizes();
  const c10::IntArrayRef weight = inputs[1].toTensor().sizes();
  const std::vector<int64_t> stride = inputs[3].toIntVector();
  const std::vector<int64_t> padding = inputs[4].toIntVector();
  const std::vector<int64_t> dilation = inputs[5].toIntVector();
  const bool transposed = inputs[6].toBool();
  const size_t spatial = weight.size() - 2;
  if (input.size() != weight.size() || stride.size() < spatial) return 0;
  auto at = [](const std::vector<int64_t>& v, size_t i) { return v.size() == 1 ? v[0] : v[i]; };
  if (transposed) {
    // Each input element is scattered through the whole kernel.
    return Product(input) * Product(weight, 1);
  }
  int64_t output_positions = 1;
  for (size_t d = 0; d < spatial; ++d) {
    const int64_t kernel = weight[2 + d];
    output_positions *=
        (input[2 + d] + 2 * at(padding, d) - at(dilation, d) * (kernel - 1) - 1) / at(stride, d) +
        1;
  }
  // weight is [out, in / groups, k...]: its product per output element.
  return input[0] * output_positions * Product(weight);
}

int64_t MatrixMultiplyAdds(const char* name, c10::ArrayRef<const c10::IValue> inputs) {
  // addmm(bias, a, b) and mm(a, b): m x k times k x n; bmm(a, b): batches of it.
  const size_t first = std::strcmp(name, "aten::addmm") == 0 ? 1 : 0;
  if (inputs.size() < first + 2 || !inputs[first].isTensor() || !inputs[first + 1].isTensor()) {
    return 0;
  }
  const c10::IntArrayRef a = inputs[first].toTensor().sizes();
  const c10::IntArrayRef b = inputs[first + 1].toTensor().sizes();
  if (a.size() != b.size() || a.size() < 2) return 0;
  return Product(a) * b[b.size() - 1];
}

std::unique_ptr<at::ObserverContext> Observe(const at::RecordFunction& fn) {
  const char* name = fn.name();
  // Only the outermost operator of each kind: conv2d, _convolution and the
  // backend kernels below aten::convolution, and linear/matmul above the
  // matrix products, would count the same work again.
  if (std::strcmp(name, "aten::convolution") == 0) {
    counted += ConvolutionMultiplyAdds(fn.inputs());
  } else if (std::strcmp(name, "aten::addmm") == 0 || std::strcmp(name, "aten::mm") == 0 ||
             std::strcmp(name, "aten::bmm") == 0) {
    counted += MatrixMultiplyAdds(name, fn.inputs());
  }
  return nullptr;
}

}  // namespace

int64_t CountMultiplyAdds(const std::function<void()>& run) {
  counted = 0;
  at::CallbackHandle handle = at::addThreadLocalCallback(
      at::RecordFunctionCallback(&Observe).needsInputs(true).scopes({at::RecordScope::FUNCTION}));
  run();
  at::removeCallback(handle);
  return counted;
}

}  // namespace pipeline
