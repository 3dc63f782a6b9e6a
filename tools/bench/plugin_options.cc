#include "tools/bench/plugin_options.h"

#include <memory>

#include "google/protobuf/descriptor.h"
#include "google/protobuf/dynamic_message.h"
#include "google/protobuf/text_format.h"

namespace pipeline {
namespace bench {
namespace {

// The message type an Any holds, from its type URL; null when unknown.
const google::protobuf::Descriptor* TypeOf(const google::protobuf::Any& any) {
  const std::string& url = any.type_url();
  return google::protobuf::DescriptorPool::generated_pool()->FindMessageTypeByName(
      url.substr(url.rfind('/') + 1));
}

std::unique_ptr<google::protobuf::Message> Unpacked(const google::protobuf::Any& any,
                                                    const google::protobuf::Descriptor& type) {
  std::unique_ptr<google::protobuf::Message> message(
      google::protobuf::MessageFactory::generated_factory()->GetPrototype(&type)->New());
  any.UnpackTo(message.get());
  return message;
}

}  // namespace

bool SetStringOption(PluginConfig& plugin, const std::string& field, const std::string& value) {
  const google::protobuf::Descriptor* type = TypeOf(plugin.options());
  const google::protobuf::FieldDescriptor* descriptor =
      type ? type->FindFieldByName(field) : nullptr;
  if (descriptor == nullptr ||
      descriptor->type() != google::protobuf::FieldDescriptor::TYPE_STRING) {
    return false;
  }
  std::unique_ptr<google::protobuf::Message> options = Unpacked(plugin.options(), *type);
  options->GetReflection()->SetString(options.get(), descriptor, value);
  plugin.mutable_options()->PackFrom(*options);
  return true;
}

std::string OptionsText(const google::protobuf::Any& any) {
  const google::protobuf::Descriptor* type = TypeOf(any);
  if (type == nullptr) return "";
  google::protobuf::TextFormat::Printer printer;
  printer.SetSingleLineMode(true);
  std::string text;
  printer.PrintToString(*Unpacked(any, *type), &text);
  return text;
}

}  // namespace bench
}  // namespace pipeline
