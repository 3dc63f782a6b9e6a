#include "pipeline/config/config_loader.h"

#include <filesystem>
#include <fstream>

#include "gmock/gmock.h"
#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"
#include "pipeline/config/config_loader_test.pb.h"
#include "pipeline/registry/registry_test.pb.h"

namespace pipeline {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

std::string WriteFile(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + "/" + name;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path) << text;
  return path;
}

TEST(ConfigLoaderTest, MalformedTextprotoNamesFileLineAndColumn) {
  const std::string path = WriteFile("bad.textproto", "trainer {\n  epochs: 3\n  epochz: 4\n}\n");
  auto config = LoadConfigFile(path);
  ASSERT_FALSE(config.ok());
  EXPECT_THAT(std::string(config.status().message()),
              StartsWith(path + ":3:9: Message type \"pipeline.TrainerConfig\" has no field named "
                                "\"epochz\". Its fields: epochs, batch_size, "));
}

TEST(ConfigLoaderTest, AnUnknownEnumValueListsTheValidOnes) {
  // In a plugin's options: the values of that options type's field.
  const std::string plugin = WriteFile("bad_variant.textproto", R"pb(model {
    name: "m"
    options { [type.googleapis.com/pipeline.testing.VariantModelOptions] { variant: HUGE } }
  })pb");
  auto config = LoadConfigFile(plugin);
  ASSERT_FALSE(config.ok());
  EXPECT_THAT(std::string(config.status().message()),
              HasSubstr("Unknown enumeration value of \"HUGE\" for field \"variant\". Valid "
                        "values: SMALL, LARGE."));
  // In the config's own messages.
  const std::string own = WriteFile("bad_precision.textproto", "trainer { precision: FP8 }\n");
  config = LoadConfigFile(own);
  ASSERT_FALSE(config.ok());
  EXPECT_THAT(std::string(config.status().message()),
              HasSubstr("for field \"precision\". Valid values: FP32, BF16_AUTOCAST, "
                        "FP16_AUTOCAST, AUTO."));
}

TEST(ConfigLoaderTest, MissingFileIsNamed) {
  EXPECT_EQ(LoadConfigFile("/no/such.textproto").status().message(),
            "/no/such.textproto: cannot read the config file");
}

TEST(ConfigLoaderTest, PluginLibrariesAreReadBeforeTheirOptionTypesExist) {
  WriteFile("libraries/base.textproto", R"pb(
    plugin_libraries: "libbase.so"
    trainer { epochs: 5 }
  )pb");
  const std::string top = WriteFile("libraries/top.textproto", R"pb(
    import: "base.textproto"
    plugin_libraries: "lib/libone.so"
    plugin_libraries: "libtwo.so"
    model {
      name: "from_a_library"
      options {
        [type.googleapis.com/elsewhere.NotLinkedOptions] { width: 3 nested { x: 1 } }
      }
    }
  )pb");
  auto libraries = ReadPluginLibraries(top);
  ASSERT_TRUE(libraries.ok()) << libraries.status();
  EXPECT_THAT(*libraries, ::testing::ElementsAre("lib/libone.so", "libtwo.so"));
  // Until the library is loaded, the strict reading rejects the options.
  auto config = LoadConfigFile(top);
  ASSERT_FALSE(config.ok());
  EXPECT_THAT(config.status().message(), HasSubstr("elsewhere.NotLinkedOptions"));
  // A syntax error is still one.
  const std::string broken = WriteFile("libraries/broken.textproto", "plugin_libraries: \n");
  EXPECT_THAT(ReadPluginLibraries(broken).status().message(), HasSubstr(broken + ":2:1:"));
}

// The options every model takes moved from each model's options to
// ModelConfig; their options types reserve the names, which the parser
// would drop without a word.
TEST(ConfigLoaderTest, ModelOptionsThatMovedNameTheirNewPlace) {
  const std::string path = WriteFile("moved/typed.textproto",
                                     "model {\n"
                                     "  name: \"resnet\"\n"
                                     "  options {\n"
                                     "    [type.googleapis.com/pipeline.testing.MovedFieldsModelOptions] {\n"
                                     "      depth: 50\n"
                                     "      weights: \"x.pt\"\n"
                                     "      freeze_backbone: true\n"
                                     "    }\n"
                                     "  }\n"
                                     "}\n");
  const std::string expected =
      path +
      ":6:7: model.options.weights has moved: write model { weights: \"x.pt\" } (beside name, "
      "not inside options)\n" +
      path +
      ":7:7: model.options.freeze_backbone has moved: write model { freeze_backbone: true } "
      "(beside name, not inside options)";
  auto config = LoadConfigFile(path);
  EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(config.status().message(), expected);
  // The lenient reading for plugin_libraries, which skips unknown fields,
  // refuses them the same way.
  EXPECT_EQ(ReadPluginLibraries(path).status().message(), expected);
}

TEST(ConfigLoaderTest, ModelOptionsThatMovedWithoutTheTypeNameTheirNewPlace) {
  const std::string path = WriteFile(
      "moved/bare.textproto", "model { name: \"resnet\" options { num_classes: 10 } }\n");
  EXPECT_EQ(std::string(LoadConfigFile(path).status().message()),
            path + ":1:34: model.options.num_classes has moved: write model { num_classes: 10 } "
                   "(beside name, not inside options)");
}

TEST(ConfigLoaderTest, MovedModelOptionsAreReportedWithTheOtherErrors) {
  const std::string path =
      WriteFile("moved/more.textproto",
                "model { name: \"resnet\" options { "
                "[type.googleapis.com/pipeline.testing.MovedFieldsModelOptions] { in_channels: "
                "-1 } } }\n"
                "trainer { epochz: 3 }\n");
  auto config = LoadConfigFile(path);
  EXPECT_THAT(std::string(config.status().message()),
              HasSubstr(":1:99: model.options.in_channels has moved: write model { "
                        "in_channels: -1 } (beside name, not inside options)\n"));
  EXPECT_THAT(std::string(config.status().message()),
              HasSubstr(":2:17: Message type \"pipeline.TrainerConfig\" has no field named "
                        "\"epochz\"."));
}

TEST(ConfigLoaderTest, TheMovedFieldsBesideTheNameAndAPluginsOwnFieldsLoad) {
  const std::string path = WriteFile("moved/new.textproto", R"pb(
    model {
      name: "resnet"
      num_classes: 10
      weights: "x.pt"
      freeze_backbone: true
      options {
        [type.googleapis.com/pipeline.testing.MovedFieldsModelOptions] { depth: 50 }
      }
    }
    train_data {
      dataset {
        name: "own"
        options {
          [type.googleapis.com/pipeline.testing.OwnClassesModelOptions] { num_classes: 3 }
        }
      }
    }
  )pb");
  auto config = LoadConfigFile(path);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->model().weights(), "x.pt");
  EXPECT_TRUE(config->model().freeze_backbone());
  EXPECT_EQ(config->model().num_classes(), 10);

  // A model plugin whose options declare a field of that name keeps it.
  const std::string own = WriteFile("moved/own.textproto", R"pb(
    model {
      name: "own"
      options {
        [type.googleapis.com/pipeline.testing.OwnClassesModelOptions] { num_classes: 3 }
      }
    }
  )pb");
  auto own_config = LoadConfigFile(own);
  ASSERT_TRUE(own_config.ok()) << own_config.status();
  testing::OwnClassesModelOptions options;
  ASSERT_TRUE(own_config->model().options().UnpackTo(&options));
  EXPECT_EQ(options.num_classes(), 3);
}

TEST(ConfigLoaderTest, OverridingAMovedModelOptionNamesItsNewPlace) {
  PipelineConfig config;
  config.mutable_model()->set_name("resnet");
  testing::MovedFieldsModelOptions prototype;
  auto lookup = [&](const std::string&, const std::string&) -> const google::protobuf::Message* {
    return &prototype;
  };
  EXPECT_EQ(ApplyOverride("model.options.weights=x.pt", lookup, &config).message(),
            "--set model.options.weights=x.pt: model.options.weights has moved: write model { "
            "weights: x.pt } (beside name, not inside options); --set model.weights=x.pt");
  ASSERT_TRUE(ApplyOverride("model.weights=x.pt", lookup, &config).ok());
  EXPECT_EQ(config.model().weights(), "x.pt");
}

TEST(ConfigLoaderTest, ImportsMergeWithOverridesAndListReplacement) {
  WriteFile("imports/base.textproto", R"pb(
    trainer { epochs: 5 batch_size: 32 }
    train_data {
      transforms { name: "a" }
      transforms { name: "b" }
      num_workers: 3
    }
    output_dir: "base"
  )pb");
  const std::string top = WriteFile("imports/top.textproto", R"pb(
    import: "base.textproto"
    trainer { epochs: 2 }
    train_data { transforms { name: "c" } }
  )pb");
  auto config = LoadConfigFile(top);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->trainer().epochs(), 2);
  EXPECT_EQ(config->trainer().batch_size(), 32);
  ASSERT_EQ(config->train_data().transforms_size(), 1);
  EXPECT_EQ(config->train_data().transforms(0).name(), "c");
  EXPECT_EQ(config->train_data().num_workers(), 3);
  EXPECT_EQ(config->output_dir(), "base");
  EXPECT_EQ(config->import_size(), 0);
}

TEST(ConfigLoaderTest, ImportCycleIsAnError) {
  WriteFile("cycle/a.textproto", "import: \"b.textproto\"\n");
  const std::string b = WriteFile("cycle/b.textproto", "import: \"a.textproto\"\n");
  auto config = LoadConfigFile(b);
  EXPECT_THAT(config.status().message(), HasSubstr("import cycle: "));
  EXPECT_THAT(config.status().message(), HasSubstr("a.textproto imports "));
}

TEST(ConfigLoaderTest, OverridesScalarsEnumsListsAndMessages) {
  PipelineConfig config;
  ASSERT_TRUE(ApplyOverride("trainer.epochs=7", nullptr, &config).ok());
  ASSERT_TRUE(ApplyOverride("output_dir=runs/x", nullptr, &config).ok());
  ASSERT_TRUE(ApplyOverride("train_data.transforms.0.name=resize", nullptr, &config).ok());
  ASSERT_TRUE(ApplyOverride("train_data.transforms.1.name=\"flip\"", nullptr, &config).ok());
  ASSERT_TRUE(ApplyOverride("model={name: \"resnet\"}", nullptr, &config).ok());
  EXPECT_EQ(config.trainer().epochs(), 7);
  EXPECT_EQ(config.output_dir(), "runs/x");
  EXPECT_EQ(config.train_data().transforms(1).name(), "flip");
  EXPECT_EQ(config.model().name(), "resnet");
}

TEST(ConfigLoaderTest, NonNumericValueIsAClearError) {
  PipelineConfig config;
  auto status = ApplyOverride("trainer.epochs=three", nullptr, &config);
  EXPECT_EQ(status.message(),
            "--set trainer.epochs=three: \"three\" is not a value of type int32 for trainer.epochs");
}

TEST(ConfigLoaderTest, UnknownFieldSuggestsTheClosest) {
  PipelineConfig config;
  auto status = ApplyOverride("trainer.epoch=3", nullptr, &config);
  EXPECT_THAT(status.message(),
              HasSubstr("--set trainer.epoch: pipeline.TrainerConfig has no field \"epoch\""));
  EXPECT_THAT(status.message(), HasSubstr("Did you mean \"epochs\"?"));
}

TEST(ConfigLoaderTest, IndexGapAndMissingEqualsAreErrors) {
  PipelineConfig config;
  EXPECT_THAT(ApplyOverride("train_data.transforms.2.name=x", nullptr, &config).message(),
              HasSubstr("has 0 entries; index 2 would leave a gap"));
  EXPECT_THAT(ApplyOverride("trainer.epochs", nullptr, &config).message(),
              HasSubstr("expected field.path=value"));
}

TEST(ConfigLoaderTest, OverridesInsideExistingPluginOptions) {
  PipelineConfig config;
  testing::GreeterOptions options;
  options.set_greeting("hey");
  config.mutable_model()->set_name("greeter");
  config.mutable_model()->mutable_options()->PackFrom(options);
  ASSERT_TRUE(ApplyOverride("model.options.repeat=4", nullptr, &config).ok());
  testing::GreeterOptions result;
  ASSERT_TRUE(config.model().options().UnpackTo(&result));
  EXPECT_EQ(result.greeting(), "hey");
  EXPECT_EQ(result.repeat(), 4);
}

TEST(ConfigLoaderTest, OverridesInsideAbsentOptionsUseThePluginsType) {
  PipelineConfig config;
  config.mutable_model()->set_name("greeter");
  testing::GreeterOptions prototype;
  std::string asked_kind, asked_name;
  auto lookup = [&](const std::string& kind,
                    const std::string& name) -> const google::protobuf::Message* {
    asked_kind = kind;
    asked_name = name;
    return &prototype;
  };
  ASSERT_TRUE(ApplyOverride("model.options.greeting=yo", lookup, &config).ok());
  EXPECT_EQ(asked_kind, "model");
  EXPECT_EQ(asked_name, "greeter");
  testing::GreeterOptions result;
  ASSERT_TRUE(config.model().options().UnpackTo(&result));
  EXPECT_EQ(result.greeting(), "yo");
}

// Found by tests/fuzz: options bytes the options type has no field for
// printed as "6: 63", which the parser then rejected.
TEST(ConfigLoaderTest, PrintedConfigParsesBackWhenOptionsHoldUnknownFields) {
  PipelineConfig config;
  ASSERT_TRUE(ParseTextProto(R"pb(
    model {
      name: "greeter"
      options {
        type_url: "type.googleapis.com/pipeline.testing.GreeterOptions"
        value: "\n\002yo\0600"
      }
    }
  )pb", "raw.textproto", &config).ok());
  PipelineConfig again;
  const std::string printed = ConfigToText(config);
  ASSERT_TRUE(ParseTextProto(printed, "printed.textproto", &again).ok()) << printed;
  pipeline::testing::GreeterOptions options;
  ASSERT_TRUE(again.model().options().UnpackTo(&options));
  EXPECT_EQ(options.greeting(), "yo");
}

TEST(ConfigLoaderTest, ResolvesBareNamesInConfigsFolder) {
  const std::string workspace = ::testing::TempDir() + "/ws";
  WriteFile("ws/configs/single.textproto", "");
  auto path = ResolveConfigPath("single", "/nonexistent", workspace);
  ASSERT_TRUE(path.ok()) << path.status();
  EXPECT_EQ(*path, workspace + "/configs/single.textproto");
  auto missing = ResolveConfigPath("nope.textproto", "/nonexistent", workspace);
  EXPECT_THAT(missing.status().message(), HasSubstr("configs/ holds: single.textproto"));
}

}  // namespace
}  // namespace pipeline
