#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pipeline/image/test_images.h"
#include "pipeline/testing/temp_path.h"
#include "pipeline/data/shard_index.h"
#include "pipeline/data/tar_reader.h"
#include "pipeline/data/tar_writer.h"
#include "pipeline/data/webdataset_writer.h"
#include "pipeline/image/image_codec.h"
#include "pipeline/interfaces/dataset.h"
#include "pipeline/testing/plugin_test_util.h"
#include "plugins/datasets/webdataset/brace_expand.h"

namespace pipeline {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;
using webdataset_internal::ExpandBraces;

// ---- Helpers ---------------------------------------------------------------

fs::path TempRoot(const std::string& name) {
  const fs::path root = fs::path(::testing::TempDir()) / ("webdataset_" + name);
  fs::remove_all(root);
  fs::create_directories(root);
  return root;
}

std::string ReadFile(const fs::path& path) {
  std::ifstream file(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
}

using testing::WriteFile;

// A small image whose pixels depend on `seed`.
Image Pattern(int height, int width, int channels, int seed) {
  std::vector<uint8_t> pixels(static_cast<size_t>(height) * width * channels);
  for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<uint8_t>(i * 7 + seed * 31);
  return testing::U8Image(height, width, channels, std::move(pixels));
}

std::string Png(int seed) {
  return *EncodePng(Pattern(3 + seed % 5, 4 + seed % 3, seed % 2 ? 3 : 1, seed));
}

// A tar of these members, written with the project's writer.
void WriteTar(const fs::path& path,
              const std::vector<std::pair<std::string, std::string>>& members) {
  TarWriter tar(path.string(), path.string());
  for (const auto& [name, data] : members) ASSERT_TRUE(tar.Add(name, data).ok()) << name;
  ASSERT_TRUE(tar.Finish().ok());
}

std::string Config(const std::string& options) {
  return testing::PluginText("webdataset", "WebDatasetOptions", options);
}

absl::StatusOr<std::unique_ptr<Dataset>> Make(const std::string& options) {
  return testing::CreatePlugin<Dataset>(Config(options));
}

// The message of the error making the dataset gives, after the registry's
// "dataset \"webdataset\": " ("" when it is made).
std::string MakeError(const std::string& options) {
  absl::StatusOr<std::unique_ptr<Dataset>> dataset = Make(options);
  if (dataset.ok()) return "";
  const std::string prefix = "dataset \"webdataset\": ";
  std::string message(dataset.status().message());
  EXPECT_EQ(message.substr(0, prefix.size()), prefix);
  return message.substr(std::min(prefix.size(), message.size()));
}

std::string Shards(const fs::path& root, const std::string& pattern) {
  return "shards: \"" + (root / pattern).string() + "\"";
}

// `count` samples in shards of at most `per_shard`, as prepare_data writes
// them; sample i is Png(i) labelled i % 3, key "s/<i>".
std::vector<std::string> WriteSamples(const fs::path& root, int count, int per_shard) {
  WebDatasetWriterOptions options;
  options.folder = root.string();
  options.max_samples_per_shard = per_shard;
  WebDatasetWriter writer(options);
  for (int i = 0; i < count; ++i) {
    EXPECT_TRUE(writer.Add("s/" + std::to_string(i), "png", Png(i), i % 3).ok());
  }
  absl::StatusOr<std::vector<std::string>> shards = writer.Finish();
  EXPECT_TRUE(shards.ok()) << shards.status();
  return shards.ok() ? *shards : std::vector<std::string>{};
}

void SetMtime(const fs::path& path, int64_t seconds) {
  const struct timespec times[2] = {{seconds, 0}, {seconds, 0}};
  ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), times, 0), 0) << path;
}

bool HavePython() { return std::system("python3 -c 'import tarfile' >/dev/null 2>&1") == 0; }

// ---- Brace patterns --------------------------------------------------------

std::vector<std::string> Expand(const std::string& pattern) {
  absl::StatusOr<std::vector<std::string>> names = ExpandBraces(pattern);
  EXPECT_TRUE(names.ok()) << pattern << ": " << names.status();
  return names.ok() ? *names : std::vector<std::string>{};
}

TEST(BraceExpandTest, ExpandsAsBraceexpandDoes) {
  EXPECT_THAT(Expand("train-{000000..000002}.tar"),
              ElementsAre("train-000000.tar", "train-000001.tar", "train-000002.tar"));
  EXPECT_THAT(Expand("plain.tar"), ElementsAre("plain.tar"));
  EXPECT_THAT(Expand("{8..11}"), ElementsAre("8", "9", "10", "11"));
  EXPECT_THAT(Expand("{08..10}"), ElementsAre("08", "09", "10"));
  EXPECT_THAT(Expand("{0..10..5}"), ElementsAre("0", "5", "10"));
  EXPECT_THAT(Expand("{9..7}"), ElementsAre("9", "8", "7"));
  EXPECT_THAT(Expand("{-1..1}"), ElementsAre("-1", "0", "1"));
  EXPECT_THAT(Expand("{-01..1}"), ElementsAre("-01", "000", "001"));
  EXPECT_THAT(Expand("{a..c}"), ElementsAre("a", "b", "c"));
  EXPECT_THAT(Expand("{Y..b}"), ElementsAre("Y", "Z", "a", "b"));
  EXPECT_THAT(Expand("{c..a}"), ElementsAre("c", "b", "a"));
  EXPECT_THAT(Expand("{a..e..2}"), ElementsAre("a", "c", "e"));
  EXPECT_THAT(Expand("{train,val}-{0..1}.tar"),
              ElementsAre("train-0.tar", "train-1.tar", "val-0.tar", "val-1.tar"));
  EXPECT_THAT(Expand("{x,{a..b}}y"), ElementsAre("xy", "ay", "by"));
  EXPECT_THAT(Expand("a{,b}c"), ElementsAre("ac", "abc"));
  EXPECT_THAT(Expand("{x}"), ElementsAre("{x}"));
  EXPECT_THAT(Expand("{}"), ElementsAre("{}"));
  EXPECT_THAT(Expand("{x}{1..2}"), ElementsAre("{x}1", "{x}2"));
  EXPECT_THAT(Expand("\\{0..1\\}"), ElementsAre("{0..1}"));
  EXPECT_THAT(Expand("{1..2}{a,b}"), ElementsAre("1a", "1b", "2a", "2b"));
}

TEST(BraceExpandTest, MalformedPatternsSayWhere) {
  auto error = [](const std::string& pattern, size_t max = 1000000) {
    absl::StatusOr<std::vector<std::string>> names = ExpandBraces(pattern, max);
    return names.ok() ? "" : std::string(names.status().message());
  };
  EXPECT_EQ(error("train-{0..3.tar"),
            "brace pattern \"train-{0..3.tar\" is malformed: the '{' at column 7 is never closed");
  EXPECT_EQ(error("a}b"), "brace pattern \"a}b\" is malformed: the '}' at column 2 closes no '{'");
  EXPECT_EQ(error("{a,{b}"),
            "brace pattern \"{a,{b}\" is malformed: the '{' at column 1 is never closed");
  EXPECT_EQ(error("{0..99999999999999999999}"),
            "brace pattern \"{0..99999999999999999999}\" is malformed: a number in the range at "
            "column 2 is too large");
  EXPECT_EQ(error("{0..9}{0..9}", 50),
            "brace pattern \"{0..9}{0..9}\" stands for more than 50 names");
  EXPECT_EQ(error("{0..100}", 50), "brace pattern \"{0..100}\" stands for more than 50 names");
}

TEST(WebDatasetOptionsTest, ValidationNamesTheField) {
  EXPECT_EQ(testing::ValidationMessage<Dataset>(Config("shards: \"x-{0..3.tar\"")),
            "options: shards[0]: brace pattern \"x-{0..3.tar\" is malformed: the "
            "'{' at column 3 is never closed");
  EXPECT_THAT(testing::ValidationMessage<Dataset>(Config("")),
              HasSubstr("no shards: neither shards nor shard_list is set"));
  EXPECT_THAT(testing::ValidationMessage<Dataset>(Config("shards: \"a\" shard_list: \"b\"")),
              HasSubstr("shards and shard_list are both set"));
  EXPECT_THAT(testing::ValidationMessage<Dataset>(Config("shards: \"a\" class_names: \"x\" "
                                                         "class_names: \"x\"")),
              HasSubstr("class_names: \"x\" is listed twice"));
  EXPECT_EQ(testing::ValidationMessage<Dataset>(Config("shards: \"a-{0..3}.tar\"")), "");
}

// ---- The tar reader and writer ---------------------------------------------

std::vector<TarMember> ReadMembers(const fs::path& path, absl::Status* status = nullptr) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  TarReader reader(fd, path.string(), fs::file_size(path));
  std::vector<TarMember> members;
  while (true) {
    absl::StatusOr<std::optional<TarMember>> member = reader.Next();
    if (!member.ok() || !*member) {
      if (status != nullptr) *status = member.status();
      EXPECT_TRUE(status != nullptr || member.ok()) << member.status();
      break;
    }
    members.push_back(**member);
  }
  ::close(fd);
  return members;
}

TEST(TarTest, WriterHeadersAreUstarWithAChecksumAndTheEndBlocks) {
  const fs::path path = TempRoot("tar_writer") / "a.tar";
  WriteTar(path, {{"k/a.txt", "hello"}, {"k/a.cls", "7"}});
  const std::string bytes = ReadFile(path);
  ASSERT_EQ(bytes.size(), 4 * 512 + 1024u);
  EXPECT_EQ(bytes.substr(0, 8), std::string("k/a.txt\0", 8));
  EXPECT_EQ(bytes.substr(100, 8), std::string("0000644\0", 8));
  EXPECT_EQ(bytes.substr(124, 12), std::string("00000000005\0", 12));
  EXPECT_EQ(bytes.substr(136, 12), std::string("07033241600\0", 12));  // 2000-01-01
  EXPECT_EQ(bytes[156], '0');
  EXPECT_EQ(bytes.substr(257, 8), std::string("ustar\0"
                                              "00",
                                              8));
  EXPECT_TRUE(TarChecksumMatches(bytes.data()));
  EXPECT_EQ(bytes.substr(512, 5), "hello");
  EXPECT_EQ(bytes.substr(2048), std::string(1024, '\0'));
  const std::vector<TarMember> members = ReadMembers(path);
  ASSERT_EQ(members.size(), 2u);
  EXPECT_EQ(members[0].name, "k/a.txt");
  EXPECT_EQ(members[0].data_offset, 512u);
  EXPECT_EQ(members[0].size, 5u);
  EXPECT_EQ(members[1].name, "k/a.cls");
  EXPECT_EQ(members[1].header_offset, 1024u);

  // The same members give the same bytes.
  WriteTar(path.string() + "2", {{"k/a.txt", "hello"}, {"k/a.cls", "7"}});
  EXPECT_EQ(ReadFile(path.string() + "2"), bytes);
}

// A header of `type` for `name` (truncated to 100 bytes), checksum redone.
std::string RawHeader(const std::string& name, uint64_t size, char type) {
  std::string header = *UstarHeader(name.substr(0, std::min<size_t>(name.size(), 100)), size);
  header[156] = type;
  std::fill(header.begin() + 148, header.begin() + 156, ' ');
  unsigned sum = 0;
  for (char c : header) sum += static_cast<unsigned char>(c);
  std::snprintf(header.data() + 148, 8, "%06o", sum);
  return header;
}

std::string Padded(const std::string& data) {
  return data + std::string(TarPaddedSize(data.size()) - data.size(), '\0');
}

TEST(TarTest, ReaderTakesLongNamesFromThePrefixGnuAndPaxRecords) {
  const fs::path root = TempRoot("tar_names");
  const std::string deep = std::string(120, 'd') + "/" + std::string(60, 'f') + ".png";
  const std::string gnu = std::string(150, 'g') + ".png";
  const std::string pax = std::string(130, 'p') + ".cls";
  std::string bytes = *UstarHeader(deep, 3) + Padded("abc");  // the prefix field
  bytes += RawHeader("././@LongLink", gnu.size() + 1, 'L') + Padded(gnu + '\0');
  bytes += RawHeader(gnu, 2, '0') + Padded("xy");
  const std::string record = "144 path=" + pax + "\n";  // 4 + 5 + 134 + 1
  ASSERT_EQ(record.size(), 144u);
  bytes += RawHeader("PaxHeaders/x", record.size(), 'x') + Padded(record);
  bytes += RawHeader(pax, 1, '0') + Padded("5");
  bytes += RawHeader("dir/", 0, '5');  // a folder: skipped by the dataset, listed here
  bytes += std::string(1024, '\0');
  WriteFile(root / "names.tar", bytes);
  const std::vector<TarMember> members = ReadMembers(root / "names.tar");
  ASSERT_EQ(members.size(), 4u);
  EXPECT_EQ(members[0].name, deep);
  EXPECT_EQ(members[0].size, 3u);
  EXPECT_EQ(members[1].name, gnu);
  EXPECT_EQ(members[1].size, 2u);
  EXPECT_EQ(members[2].name, pax);
  EXPECT_EQ(members[2].data_offset, bytes.size() - 1024 - 512 - 512);
  EXPECT_FALSE(members[3].IsRegularFile());
}

// ---- Reading shards --------------------------------------------------------

TEST(WebDatasetTest, ReadsBackWhatTheWriterWroteThroughTheIndexOrAScan) {
  const fs::path root = TempRoot("read_back");
  const std::vector<std::string> shards = WriteSamples(root, 25, 10);
  ASSERT_EQ(shards.size(), 3u);
  EXPECT_EQ(shards[2], (root / "train-000002.tar").string());
  for (const std::string& shard : shards) EXPECT_TRUE(fs::exists(shard + ".idx")) << shard;
  for (const char* use_index : {"true", "false"}) {
    absl::StatusOr<std::unique_ptr<Dataset>> dataset =
        Make(Shards(root, "train-{000000..000002}.tar") + " use_index: " + use_index);
    ASSERT_TRUE(dataset.ok()) << dataset.status();
    ASSERT_EQ((*dataset)->size(), 25);
    EXPECT_THAT((*dataset)->class_names(), ElementsAre("0", "1", "2"));  // no classes.txt
    for (int i = 0; i < 25; ++i) {
      absl::StatusOr<Sample> sample = (*dataset)->Get(i);
      ASSERT_TRUE(sample.ok()) << sample.status();
      const Image expected = Pattern(3 + i % 5, 4 + i % 3, i % 2 ? 3 : 1, i);
      EXPECT_EQ(sample->image.u8, expected.u8) << i;
      EXPECT_EQ(sample->image.ShapeString(), expected.ShapeString()) << i;
      EXPECT_EQ(sample->label, i % 3) << i;
    }
    EXPECT_EQ((*dataset)->SampleName(12), shards[1] + ":s/12.png");
  }
}

TEST(WebDatasetTest, ClassNamesFromTheOptionOrClassesTxt) {
  const fs::path root = TempRoot("classes");
  WriteSamples(root, 6, 0);
  WriteFile(root / "classes.txt", "cat\ndog\r\nbird\n\n");
  auto dataset = Make(Shards(root, "train-000000.tar"));
  ASSERT_TRUE(dataset.ok()) << dataset.status();
  EXPECT_THAT((*dataset)->class_names(), ElementsAre("cat", "dog", "bird"));
  dataset = Make(Shards(root, "train-000000.tar") +
                 " class_names: \"a\" class_names: \"b\" class_names: \"c\" class_names: \"d\"");
  ASSERT_TRUE(dataset.ok()) << dataset.status();
  EXPECT_THAT((*dataset)->class_names(), ElementsAre("a", "b", "c", "d"));

  WriteFile(root / "classes.txt", "cat\ndog\n");
  EXPECT_EQ(MakeError(Shards(root, "train-000000.tar")),
            (root / "train-000000.tar").string() +
                ": sample \"s/2\" has label 2, out of range "
                "of the 2 class names (from " +
                (root / "classes.txt").string() + ")");
  EXPECT_THAT(MakeError(Shards(root, "train-000000.tar") + " class_names: \"x\""),
              HasSubstr("sample \"s/1\" has label 1, out of range of the 1 class names (from "
                        "class_names)"));
  WriteFile(root / "classes.txt", "cat\n\ndog\n");
  EXPECT_THAT(MakeError(Shards(root, "train-000000.tar")),
              HasSubstr("classes.txt: line 2 is empty"));
}

TEST(WebDatasetTest, ShardListPathsAreRelativeToTheListsFolder) {
  const fs::path root = TempRoot("list");
  fs::create_directories(root / "shards");
  const std::vector<std::string> shards = WriteSamples(root / "shards", 9, 4);
  ASSERT_EQ(shards.size(), 3u);
  fs::create_directories(root / "lists");
  WriteFile(root / "lists/train.txt",
            "# the shards\n../shards/train-000002.tar\n\n  ../shards/train-000000.tar  \n" +
                shards[1] + "\n");
  auto dataset = Make("shard_list: \"" + (root / "lists/train.txt").string() + "\"");
  ASSERT_TRUE(dataset.ok()) << dataset.status();
  ASSERT_EQ((*dataset)->size(), 9);
  EXPECT_EQ((*dataset)->SampleName(0),
            (root / "lists/../shards/train-000002.tar").string() + ":s/8.png");
  EXPECT_EQ((*dataset)->Get(1)->label, 0);  // s/0

  WriteFile(root / "lists/empty.txt", "# nothing yet\n\n");
  EXPECT_EQ(MakeError("shard_list: \"" + (root / "lists/empty.txt").string() + "\""),
            "shard_list: " + (root / "lists/empty.txt").string() +
                " names no shards (one path per line, relative to its folder)");
  EXPECT_THAT(MakeError("shard_list: \"" + (root / "lists/none.txt").string() + "\""),
              HasSubstr("none.txt: cannot read the file"));
  WriteFile(root / "lists/twice.txt", "../shards/train-000000.tar\n../shards/./train-000000.tar\n");
  EXPECT_THAT(
      MakeError("shard_list: \"" + (root / "lists/twice.txt").string() + "\""),
      HasSubstr("is named twice (shard_list " + (root / "lists/twice.txt").string() +
                " line 1 and shard_list " + (root / "lists/twice.txt").string() + " line 2)"));
}

TEST(WebDatasetTest, JsonLabelsByFieldClsFirst) {
  const fs::path root = TempRoot("json");
  const std::string jpeg = *EncodeJpeg(Pattern(8, 8, 3, 1), 90);
  const std::string json_at = std::to_string(512 + TarPaddedSize(jpeg.size()));
  WriteTar(root / "a.tar", {{"x/0.jpg", jpeg},
                            {"x/0.json", "{\"label\": 2, \"meta\": {\"name\": \"dog\"}}"},
                            {"x/1.png", Png(1)},
                            {"x/1.json", "{\"label\": 9}"},
                            {"x/1.cls", "1\n"},
                            {"x/1.txt", "a caption"},
                            {"x/2.PNG", Png(2)},
                            {"x/2.json", "{\"label\": 0, \"meta\": {\"name\": \"cat\"}}"}});
  auto dataset = Make(Shards(root, "a.tar"));
  ASSERT_TRUE(dataset.ok()) << dataset.status();
  ASSERT_EQ((*dataset)->size(), 3);
  EXPECT_EQ((*dataset)->Get(0)->label, 2);
  EXPECT_EQ((*dataset)->Get(1)->label, 1);  // .cls, not the .json's 9
  EXPECT_EQ((*dataset)->Get(2)->label, 0);
  EXPECT_THAT((*dataset)->class_names(), ElementsAre("0", "1", "2"));

  dataset = Make(Shards(root, "a.tar") +
                 " json_label_field: \"meta.name\" class_names: \"cat\" "
                 "class_names: \"dog\"");
  ASSERT_TRUE(dataset.ok()) << dataset.status();
  EXPECT_EQ((*dataset)->Get(0)->label, 1);
  EXPECT_EQ((*dataset)->Get(1)->label, 1);
  EXPECT_EQ((*dataset)->Get(2)->label, 0);

  EXPECT_EQ(MakeError(Shards(root, "a.tar") + " json_label_field: \"meta.name\""),
            (root / "a.tar").string() + ": label member \"x/0.json\" (byte " + json_at +
                "): label \"dog\" is "
                "not one of the 0 class names (a name needs class_names or classes.txt)");
  EXPECT_EQ(MakeError(Shards(root, "a.tar") + " json_label_field: \"cls\""),
            (root / "a.tar").string() + ": label member \"x/0.json\" (byte " + json_at +
                "): no field \"cls\" "
                "(set json_label_field to the field that holds the label)");
}

TEST(WebDatasetTest, TarsWrittenByPythonsTarfileReadTheSame) {
  if (!HavePython()) GTEST_SKIP() << "python3 with tarfile is not installed";
  const fs::path root = TempRoot("python");
  WriteFile(root / "0.png", Png(0));
  WriteFile(root / "1.png", Png(1));
  const std::string long_key = "long/" + std::string(140, 'k');
  // GNU long names ('L' records) and pax ('x' records, tarfile's default).
  const std::string script =
      "import io, sys, tarfile\n"
      "root, key = sys.argv[1], sys.argv[2]\n"
      "for fmt, name in ((tarfile.GNU_FORMAT, 'gnu.tar'), (tarfile.PAX_FORMAT, 'pax.tar')):\n"
      "    with tarfile.open(root + '/' + name, 'w', format=fmt) as t:\n"
      "        for k, png, cls in (('a/0', '0.png', b'2'), (key, '1.png', b'1')):\n"
      "            t.add(root + '/' + png, arcname=k + '.png')\n"
      "            i = tarfile.TarInfo(k + '.cls'); i.size = len(cls)\n"
      "            t.addfile(i, io.BytesIO(cls))\n";
  WriteFile(root / "write.py", script);
  ASSERT_EQ(
      std::system(("python3 " + (root / "write.py").string() + " " + root.string() + " " + long_key)
                      .c_str()),
      0);
  for (const char* name : {"gnu.tar", "pax.tar"}) {
    auto dataset = Make(Shards(root, name));
    ASSERT_TRUE(dataset.ok()) << name << ": " << dataset.status();
    ASSERT_EQ((*dataset)->size(), 2) << name;
    EXPECT_EQ((*dataset)->Get(0)->label, 2);
    EXPECT_EQ((*dataset)->Get(1)->label, 1);
    EXPECT_EQ((*dataset)->Get(1)->image.u8, Pattern(4, 5, 3, 1).u8) << name;
    EXPECT_THAT((*dataset)->SampleName(0), ::testing::EndsWith(":a/0.png"));
  }
}

TEST(WebDatasetTest, TheIndexIsReadWhenCurrentElseTheShardIsScanned) {
  const fs::path root = TempRoot("index");
  const std::vector<std::string> shards = WriteSamples(root, 4, 0);
  // An index that says every label is 5: read, it shows.
  const std::string index_path = ShardIndexPath(shards[0]);
  absl::StatusOr<ShardIndex> index = ParseShardIndex(ReadFile(index_path), index_path);
  ASSERT_TRUE(index.ok()) << index.status();
  ASSERT_EQ(index->samples.size(), 4u);
  for (IndexedSample& sample : index->samples) sample.label = 5;
  WriteFile(index_path, SerializeShardIndex(*index));
  SetMtime(shards[0], 1000);
  SetMtime(index_path, 1000);  // as new as the shard: current
  EXPECT_EQ((*Make(Shards(root, "train-000000.tar")))->Get(0)->label, 5);
  EXPECT_EQ((*Make(Shards(root, "train-000000.tar") + " use_index: false"))->Get(0)->label, 0);
  SetMtime(index_path, 999);  // older than the shard: scanned
  EXPECT_EQ((*Make(Shards(root, "train-000000.tar")))->Get(0)->label, 0);

  // Current, but for another size of the shard: scanned.
  SetMtime(index_path, 2000);
  index->shard_bytes += 512;
  WriteFile(index_path, SerializeShardIndex(*index));
  SetMtime(index_path, 2000);
  EXPECT_EQ((*Make(Shards(root, "train-000000.tar")))->Get(0)->label, 0);

  WriteFile(index_path, "not an index");
  SetMtime(index_path, 2000);
  EXPECT_EQ(MakeError(Shards(root, "train-000000.tar")),
            index_path +
                ": not a webdataset index (no \"webdataset-idx1\" header); delete it "
                "to have the shard scanned instead");
}

// ---- Errors ----------------------------------------------------------------

TEST(WebDatasetErrorsTest, EachNamesTheShardAndTheMemberOrByte) {
  const fs::path root = TempRoot("errors");
  WriteSamples(root, 3, 0);
  const std::string good = (root / "train-000000.tar").string();
  const std::string bytes = ReadFile(good);  // 3 x (png, cls) + end blocks
  const std::string png0 = Png(0);

  EXPECT_EQ(
      MakeError(Shards(root, "train-{000000..000001}.tar")),
      "shard " + (root / "train-000001.tar").string() + ": cannot open: No such file or directory");

  WriteFile(root / "cut.tar", bytes.substr(0, 552));
  EXPECT_EQ(MakeError(Shards(root, "cut.tar")),
            (root / "cut.tar").string() +
                ": truncated: member \"s/0.png\" (header at byte 0) has " +
                std::to_string(png0.size()) + " bytes of data, but the file ends at byte 552");
  WriteFile(root / "no_end.tar", bytes.substr(0, bytes.size() - 1024));
  EXPECT_EQ(MakeError(Shards(root, "no_end.tar")),
            (root / "no_end.tar").string() + ": truncated: the file ends at byte " +
                std::to_string(bytes.size() - 1024) +
                ", after member \"s/2.cls\", without the end-of-archive block (two 512-byte zero "
                "blocks)");
  WriteFile(root / "mid_header.tar", bytes.substr(0, 1024 + 100));
  EXPECT_THAT(
      MakeError(Shards(root, "mid_header.tar")),
      HasSubstr("truncated: the file ends at byte 1124, inside the tar header at byte 1024"));

  std::string bad_sum = bytes;
  const size_t second = 512 + TarPaddedSize(png0.size());
  bad_sum[second + 2] ^= 0x20;
  WriteFile(root / "checksum.tar", bad_sum);
  EXPECT_EQ(MakeError(Shards(root, "checksum.tar")),
            (root / "checksum.tar").string() + ": bad tar header checksum at byte " +
                std::to_string(second) + " (after member \"s/0.png\")");
  WriteFile(root / "text.tar", std::string(600, 'x'));
  EXPECT_EQ(MakeError(Shards(root, "text.tar")),
            (root / "text.tar").string() +
                ": bad tar header checksum at byte 0 (the first header: not a tar file?)");
  WriteFile(root / "gz.tar", "\x1f\x8b" + std::string(1022, '\0') + "x");
  EXPECT_THAT(MakeError(Shards(root, "gz.tar")), HasSubstr("gz.tar: is gzip-compressed"));

  WriteTar(root / "no_image.tar",
           {{"a.png", png0}, {"a.cls", "0"}, {"b.cls", "1"}, {"b.txt", "t"}});
  EXPECT_EQ(MakeError(Shards(root, "no_image.tar")),
            (root / "no_image.tar").string() + ": sample \"b\" (from byte " +
                std::to_string(second + 1024) +
                "; members b.cls, b.txt) has no image member "
                "(.jpg, .jpeg or .png); the members of a sample must be adjacent in the tar");
  WriteTar(root / "no_label.tar", {{"a.png", png0}, {"b.png", png0}, {"b.cls", "1"}});
  EXPECT_EQ(
      MakeError(Shards(root, "no_label.tar")),
      (root / "no_label.tar").string() +
          ": sample \"a\" (from byte 0; members a.png) has "
          "no label member (.cls, or .json with the field \"label\"); the members of a sample "
          "must be adjacent in the tar");
  WriteTar(root / "two.tar", {{"a.png", png0}, {"a.jpg", png0}, {"a.cls", "1"}});
  EXPECT_THAT(MakeError(Shards(root, "two.tar")),
              HasSubstr("two.tar: sample \"a\" has two images: \"a.png\" and \"a.jpg\" (byte " +
                        std::to_string(second) + ")"));
  WriteTar(root / "bad_cls.tar", {{"a.png", png0}, {"a.cls", "seven"}});
  EXPECT_EQ(MakeError(Shards(root, "bad_cls.tar")),
            (root / "bad_cls.tar").string() + ": label member \"a.cls\" (byte " +
                std::to_string(second) +
                "): label \"seven\" is not a class index (a decimal "
                "number below 2^31)");
  WriteTar(root / "negative.tar", {{"a.png", png0}, {"a.cls", "-3"}});
  EXPECT_THAT(MakeError(Shards(root, "negative.tar")), HasSubstr("label \"-3\" is negative"));

  WriteTar(root / "empty.tar", {{"readme", "no samples"}});
  EXPECT_EQ(MakeError(Shards(root, "empty.tar")),
            "the 1 shard holds no samples (members named <key>.<jpg|jpeg|png> with "
            "<key>.<cls|json>), starting with " +
                (root / "empty.tar").string());
  EXPECT_THAT(MakeError("shards: \"" + good + "\" shards: \"" + good + "\""),
              HasSubstr("is named twice (shards[0] and shards[1])"));
}

TEST(WebDatasetErrorsTest, ACorruptImageFailsItsGetOnly) {
  const fs::path root = TempRoot("corrupt_image");
  WriteTar(root / "a.tar",
           {{"a.png", "not a png at all"}, {"a.cls", "0"}, {"b.png", Png(1)}, {"b.cls", "1"}});
  auto dataset = Make(Shards(root, "a.tar"));
  ASSERT_TRUE(dataset.ok()) << dataset.status();
  absl::StatusOr<Sample> bad = (*dataset)->Get(0);
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr((root / "a.tar").string() + ":a.png"));
  ImageRegion region;
  EXPECT_FALSE((*dataset)
                   ->GetRegion(
                       0,
                       [](int h, int w) {
                         return ImageRegion{0, 0, h, w};
                       },
                       &region)
                   .ok());
  EXPECT_TRUE((*dataset)->Get(1).ok());
}

TEST(WebDatasetErrorsTest, AShardRewrittenAfterIndexingIsAnErrorAtGet) {
  const fs::path root = TempRoot("rewritten");
  WriteSamples(root, 2, 0);
  const fs::path shard = root / "train-000000.tar";
  auto dataset = Make(Shards(root, "train-000000.tar"));
  ASSERT_TRUE(dataset.ok()) << dataset.status();
  std::string bytes = ReadFile(shard);
  const size_t second = 1536 + TarPaddedSize(Png(0).size());
  bytes[second + 124 + 10] ^= 1;  // the second image's size field
  WriteFile(shard, bytes);
  EXPECT_TRUE((*dataset)->Get(0).ok());
  absl::StatusOr<Sample> sample = (*dataset)->Get(1);
  ASSERT_FALSE(sample.ok());
  EXPECT_THAT(sample.status().message(),
              HasSubstr(shard.string() + ": byte " + std::to_string(second) +
                        " no longer holds the header of the "));
}

// Damaged shards: any error, never a crash or a hang.
TEST(WebDatasetErrorsTest, RandomDamageIsAnErrorOrReadsNotACrash) {
  const fs::path root = TempRoot("damage");
  WriteSamples(root, 4, 0);
  const std::string bytes = ReadFile(root / "train-000000.tar");
  std::mt19937 random(7);
  for (int trial = 0; trial < 60; ++trial) {
    std::string damaged = bytes;
    for (int i = 0; i < 1 + trial % 8; ++i) {
      damaged[random() % damaged.size()] = static_cast<char>(random());
    }
    if (trial % 5 == 0) damaged.resize(random() % damaged.size());
    WriteFile(root / "d.tar", damaged);
    absl::StatusOr<std::unique_ptr<Dataset>> dataset = Make(Shards(root, "d.tar"));
    if (!dataset.ok()) continue;
    for (int64_t i = 0; i < (*dataset)->size(); ++i) {
      (void)(*dataset)->Get(i);
      (void)(*dataset)->SampleName(i);
    }
  }
}

}  // namespace
}  // namespace pipeline
