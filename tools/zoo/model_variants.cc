#include "tools/zoo/model_variants.h"

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/message.h"
#include "pipeline/interfaces/model.h"
#include "pipeline/registry/registry.h"

namespace pipeline {
namespace zoo {
namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;

ModelVariant MakeVariant(const std::string& model, const std::string& variant,
                         const Message& options) {
  ModelVariant result{model, variant, {}};
  result.config.set_name(model);
  result.config.mutable_options()->PackFrom(options);
  return result;
}

// One variant per value of the enum `field`.
void AddEnumValues(const std::string& model, const Message& defaults, const FieldDescriptor& field,
                   std::vector<ModelVariant>* variants) {
  const google::protobuf::EnumDescriptor& values = *field.enum_type();
  for (int i = 0; i < values.value_count(); ++i) {
    std::unique_ptr<Message> options(defaults.New());
    options->GetReflection()->SetEnum(options.get(), &field, values.value(i));
    variants->push_back(MakeVariant(model, values.value(i)->name(), *options));
  }
}

// One variant per integer the plugin's validator accepts for `field`.
void AddValidDepths(const std::string& model, const Message& defaults, const FieldDescriptor& field,
                    std::vector<ModelVariant>* variants) {
  for (int depth = 1; depth <= kMaxProbedDepth; ++depth) {
    std::unique_ptr<Message> options(defaults.New());
    const google::protobuf::Reflection& reflection = *options->GetReflection();
    if (field.cpp_type() == FieldDescriptor::CPPTYPE_INT32) {
      reflection.SetInt32(options.get(), &field, depth);
    } else if (field.cpp_type() == FieldDescriptor::CPPTYPE_INT64) {
      reflection.SetInt64(options.get(), &field, depth);
    } else if (field.cpp_type() == FieldDescriptor::CPPTYPE_UINT32) {
      reflection.SetUInt32(options.get(), &field, depth);
    } else {
      reflection.SetUInt64(options.get(), &field, depth);
    }
    ModelVariant variant = MakeVariant(model, absl::StrCat(depth), *options);
    if (Registry<Model>::Global().Validate(variant.config).ok()) {
      variants->push_back(std::move(variant));
    }
  }
}

bool IsInteger(const FieldDescriptor& field) {
  switch (field.cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32:
    case FieldDescriptor::CPPTYPE_INT64:
    case FieldDescriptor::CPPTYPE_UINT32:
    case FieldDescriptor::CPPTYPE_UINT64:
      return true;
    default:
      return false;
  }
}

}  // namespace

std::vector<ModelVariant> ListModelVariants() {
  std::vector<ModelVariant> variants;
  const Registry<Model>& registry = Registry<Model>::Global();
  for (const std::string& model : registry.Names()) {
    const Message& defaults = *registry.DefaultOptions(model);
    const google::protobuf::Descriptor& descriptor = *defaults.GetDescriptor();
    const FieldDescriptor* variant = descriptor.FindFieldByName("variant");
    const FieldDescriptor* depth = descriptor.FindFieldByName("depth");
    if (variant != nullptr && !variant->is_repeated() &&
        variant->cpp_type() == FieldDescriptor::CPPTYPE_ENUM) {
      AddEnumValues(model, defaults, *variant, &variants);
    } else if (depth != nullptr && !depth->is_repeated() &&
               depth->cpp_type() == FieldDescriptor::CPPTYPE_ENUM) {
      AddEnumValues(model, defaults, *depth, &variants);
    } else if (depth != nullptr && !depth->is_repeated() && IsInteger(*depth)) {
      AddValidDepths(model, defaults, *depth, &variants);
    } else {
      variants.push_back(MakeVariant(model, "", defaults));
    }
  }
  return variants;
}

std::vector<std::string> TorchvisionCandidates(const ModelVariant& variant) {
  if (variant.variant.empty()) return {variant.model};
  const std::string value = absl::AsciiStrToLower(variant.variant);
  return {value, absl::StrCat(variant.model, "_", value), absl::StrCat(variant.model, value)};
}

}  // namespace zoo
}  // namespace pipeline
