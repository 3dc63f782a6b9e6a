#include "pipeline/registry/registry.h"

#include "gmock/gmock.h"
#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"
#include "pipeline/registry/registry_test.pb.h"

namespace pipeline {

// A plugin kind used only by this test.
class Greeter {
 public:
  explicit Greeter(std::string text) : text(std::move(text)) {}
  std::string text;
};

struct GreeterContext {
  std::string who;
};

template <>
struct PluginKind<Greeter> {
  static constexpr const char* kName = "greeter";
  using Context = GreeterContext;
};

namespace {

using ::pipeline::testing::GreeterOptions;
using ::testing::HasSubstr;

absl::StatusOr<std::unique_ptr<Greeter>> CreateGreeter(const GreeterOptions& options,
                                                       const GreeterContext& context) {
  std::string text;
  for (int i = 0; i < options.repeat(); ++i) text += options.greeting() + " " + context.who;
  return std::make_unique<Greeter>(text);
}

absl::Status ValidateGreeter(const GreeterOptions& options) {
  if (options.repeat() < 1) return absl::InvalidArgumentError("repeat must be >= 1");
  return absl::OkStatus();
}

PIPELINE_REGISTER_PLUGIN(Greeter, "greeter", GreeterOptions, "Says hello", CreateGreeter,
                         ValidateGreeter);
PIPELINE_REGISTER_PLUGIN(Greeter, "greeter_without_validation", GreeterOptions, "Also",
                         CreateGreeter);

PluginConfig Parse(const std::string& text) {
  PluginConfig config;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &config)) << text;
  return config;
}

TEST(RegistryTest, CreatesByNameWithTypedOptions) {
  auto greeter = Registry<Greeter>::Global().Create(
      Parse(R"pb(name: "greeter"
                 options {
                   [type.googleapis.com/pipeline.testing.GreeterOptions] { greeting: "hi" }
                 })pb"),
      {"you"});
  ASSERT_TRUE(greeter.ok()) << greeter.status();
  EXPECT_EQ((*greeter)->text, "hi you");
}

TEST(RegistryTest, MissingOptionsMeanDefaults) {
  auto greeter = Registry<Greeter>::Global().Create(Parse(R"pb(name: "greeter")pb"), {"x"});
  ASSERT_TRUE(greeter.ok()) << greeter.status();
  EXPECT_EQ((*greeter)->text, "hello x");
}

TEST(RegistryTest, UnknownNameListsKnownNamesAndClosestMatch) {
  auto greeter = Registry<Greeter>::Global().Create(Parse(R"pb(name: "greter")pb"), {});
  ASSERT_FALSE(greeter.ok());
  EXPECT_EQ(greeter.status().message(),
            "name: \"greter\" is not a registered greeter; registered: greeter, "
            "greeter_without_validation. Did you mean \"greeter\"?");
}

TEST(RegistryTest, EmptyNameListsChoices) {
  auto status = Registry<Greeter>::Global().Validate(PluginConfig());
  EXPECT_THAT(status.message(), HasSubstr("no greeter named; choose one of: greeter"));
}

TEST(RegistryTest, WrongOptionsTypeNamesExpectedType) {
  auto status = Registry<Greeter>::Global().Validate(
      Parse(R"pb(name: "greeter"
                 options { [type.googleapis.com/pipeline.testing.OtherOptions] { value: 1 } })pb"));
  EXPECT_EQ(status.message(),
            "options: greeter \"greeter\" takes options of type "
            "pipeline.testing.GreeterOptions but the config gives pipeline.testing.OtherOptions; "
            "write options { [type.googleapis.com/pipeline.testing.GreeterOptions] { ... } }");
}

TEST(RegistryTest, ValidatorRunsBeforeCreate) {
  auto status = Registry<Greeter>::Global().Validate(
      Parse(R"pb(name: "greeter"
                 options { [type.googleapis.com/pipeline.testing.GreeterOptions] { repeat: 0 } })pb"));
  EXPECT_EQ(status.message(), "options: repeat must be >= 1");
}

TEST(RegistryTest, SecondRegistrationOfANameFails) {
  auto status = Registry<Greeter>::Global().Register(
      "greeter", "dup", std::make_unique<GreeterOptions>(), nullptr,
      [](const google::protobuf::Message&, const GreeterContext&)
          -> absl::StatusOr<std::unique_ptr<Greeter>> { return nullptr; });
  EXPECT_EQ(status.message(), "greeter \"greeter\" is registered twice");
}

// What a plugin library's static initialisers do inside dlopen: the loader
// holds their registrations and runs them once the library is accepted, a
// taken name coming back as an error instead of ending the process.
TEST(RegistryTest, HeldRegistrationsRunWhenTheLoaderRunsThem) {
  BeginHoldingRegistrations();
  PluginRegistration<Greeter, GreeterOptions> held("held_greeter", "Held", CreateGreeter);
  PluginRegistration<Greeter, GreeterOptions> taken("greeter", "Again", CreateGreeter);
  std::vector<std::function<absl::Status()>> registrations = EndHoldingRegistrations();
  ASSERT_EQ(registrations.size(), 2u);
  EXPECT_EQ(Registry<Greeter>::Global().DefaultOptions("held_greeter"), nullptr);
  EXPECT_TRUE(registrations[0]().ok());
  EXPECT_NE(Registry<Greeter>::Global().DefaultOptions("held_greeter"), nullptr);
  const absl::Status status = registrations[1]();
  EXPECT_EQ(status.code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(status.message(), "greeter \"greeter\" is registered twice");
  // Holding has ended: a registration runs at once again.
  PluginRegistration<Greeter, GreeterOptions> direct("direct_greeter", "Now", CreateGreeter);
  EXPECT_NE(Registry<Greeter>::Global().DefaultOptions("direct_greeter"), nullptr);
  EXPECT_TRUE(EndHoldingRegistrations().empty());
}

TEST(RegistryTest, IndexListsEveryKindWithDefaults) {
  bool found = false;
  for (const PluginInfo& info : RegistryIndex::Global().ListAll()) {
    if (info.kind == "greeter" && info.name == "greeter") {
      found = true;
      EXPECT_EQ(info.options_type, "pipeline.testing.GreeterOptions");
      EXPECT_THAT(info.default_options, HasSubstr("greeting: \"hello\""));
      EXPECT_THAT(info.default_options, HasSubstr("repeat: 1"));
    }
  }
  EXPECT_TRUE(found);
}

}  // namespace
}  // namespace pipeline
