#include "pipeline/trainer/run_info.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pipeline/util/torch_version.h"

namespace pipeline {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::MatchesRegex;

bool Shell(const std::string& command) { return std::system(command.c_str()) == 0; }

std::string Output(const std::string& command) {
  std::string out;
  FILE* pipe = ::popen(command.c_str(), "r");
  char buffer[256];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof(buffer), pipe)) > 0) out.append(buffer, n);
  ::pclose(pipe);
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return out;
}

TEST(RunInfoTest, VersionTextNamesTheBuildAndEveryLibrary) {
  const std::string text = VersionText();
  EXPECT_THAT(text, HasSubstr(std::string("libtorch ") + kLibTorchVersion));
  EXPECT_THAT(text, HasSubstr(kCudaBuild ? "CUDA build" : "CPU build"));
  for (const auto& [name, version] : LibraryVersions()) {
    EXPECT_FALSE(version.empty()) << name;
    EXPECT_THAT(text, HasSubstr(name + " " + version));
  }
}

TEST(RunInfoTest, JsonQuoteEscapesWhatJsonRequires) {
  EXPECT_EQ(JsonQuote("a\"b\\c\nd\te\x01"), "\"a\\\"b\\\\c\\nd\\te\\u0001\"");
}

TEST(RunInfoTest, GitRevisionOfACheckoutAndItsDirtyState) {
  if (!Shell("git --version >/dev/null 2>&1")) GTEST_SKIP() << "git is not installed";
  const fs::path repo = fs::path(::testing::TempDir()) / "run_info_repo";
  fs::remove_all(repo);
  fs::create_directories(repo / "configs");
  std::ofstream(repo / "configs" / "a.textproto") << "trainer { epochs: 1 }\n";
  const std::string git = "git -C " + repo.string() + " ";
  ASSERT_TRUE(Shell(git + "init -q && " + git + "add . && " + git +
                  "-c user.name=t -c user.email=t@t commit -q -m first"));
  const std::string head = Output(git + "rev-parse HEAD");
  ASSERT_EQ(head.size(), 40u);
  EXPECT_EQ(GitRevision((repo / "configs").string()), head);
  // Untracked outputs leave it clean; a changed tracked file does not.
  std::ofstream(repo / "configs" / "output.log") << "x";
  EXPECT_EQ(GitRevision((repo / "configs").string()), head);
  std::ofstream(repo / "configs" / "a.textproto") << "trainer { epochs: 2 }\n";
  EXPECT_EQ(GitRevision((repo / "configs").string()), head + "-dirty");

  const fs::path outside = fs::path(::testing::TempDir()) / "run_info_not_a_repo";
  fs::create_directories(outside);
  if (Output("git -C " + outside.string() + " rev-parse HEAD 2>/dev/null").empty()) {
    EXPECT_EQ(GitRevision(outside.string()), "");
  }
}

TEST(RunInfoTest, IsValidJsonWithTheCommandAndLibraryVersions) {
  RunInfoInputs inputs;
  inputs.command_line = {"train", "--config=a \"quoted\".textproto", "--set=x=1"};
  const std::string json = RunInfoJson(inputs);
  google::protobuf::Struct parsed;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(json, &parsed).ok()) << json;
  const auto& fields = parsed.fields();
  ASSERT_TRUE(fields.count("command"));
  const auto& command = fields.at("command").list_value();
  ASSERT_EQ(command.values_size(), 3);
  EXPECT_EQ(command.values(1).string_value(), "--config=a \"quoted\".textproto");
  ASSERT_TRUE(fields.count("libraries"));
  const auto& libraries = fields.at("libraries").struct_value().fields();
  for (const char* name : {"libtorch", "protobuf", "abseil", "libjpeg_turbo", "libpng", "compiler"}) {
    ASSERT_TRUE(libraries.count(name)) << name;
    EXPECT_FALSE(libraries.at(name).string_value().empty()) << name;
  }
  // The version of the LibTorch headers this test was compiled with: 1.13.x
  // on Debian 12, 2.x on Debian 13 and in CUDA builds.
  EXPECT_THAT(libraries.at("libtorch").string_value(), MatchesRegex("[12]\\.[0-9]+\\.[0-9]+.*"));
  EXPECT_EQ(libraries.at("libtorch").string_value(), kLibTorchVersion);
  EXPECT_EQ(fields.at("cuda_build").bool_value(), kCudaBuild);
  EXPECT_NE(fields.at("torch_config").string_value().find("BLAS"), std::string::npos);
  EXPECT_TRUE(fields.count("git_revision"));
  EXPECT_EQ(fields.at("started").string_value().size(), 20u);
}

}  // namespace
}  // namespace pipeline
