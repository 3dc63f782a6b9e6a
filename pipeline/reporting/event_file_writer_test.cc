#include "pipeline/reporting/event_file_writer.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "google/protobuf/descriptor.h"
#include "google/protobuf/descriptor.pb.h"
#include "google/protobuf/dynamic_message.h"
#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"
#include "pipeline/util/crc32c.h"
#include "pipeline/testing/temp_path.h"

namespace pipeline {
namespace {

namespace fs = std::filesystem;
using google::protobuf::Message;

// A bit-at-a-time CRC-32C, written apart from the library's table version so
// the reader below checks the writer instead of repeating it.
uint32_t ReferenceCrc32c(std::string_view data) {
  uint32_t crc = 0xFFFFFFFFu;
  for (unsigned char byte : data) {
    crc ^= byte;
    for (int bit = 0; bit < 8; ++bit) crc = (crc & 1u) ? (crc >> 1) ^ 0x82F63B78u : crc >> 1;
  }
  return ~crc;
}

uint32_t ReferenceMask(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + 0xa282ead8u; }

uint64_t LittleEndian(const std::string& bytes, size_t at, int size) {
  uint64_t value = 0;
  for (int i = size - 1; i >= 0; --i) value = value << 8 | static_cast<unsigned char>(bytes[at + i]);
  return value;
}

// Published CRC-32C check values (RFC 3720, appendix B.4, and the usual
// "123456789" check).
TEST(Crc32cTest, MatchesPublishedVectors) {
  EXPECT_EQ(ReferenceCrc32c("123456789"), 0xE3069283u);
  EXPECT_EQ(ReferenceCrc32c(std::string(32, '\0')), 0x8A9136AAu);
  EXPECT_EQ(ReferenceCrc32c(std::string(32, '\xff')), 0x62A8AB43u);
  EXPECT_EQ(Crc32c("123456789"), 0xE3069283u);
  EXPECT_EQ(Crc32c(std::string(32, '\0')), 0x8A9136AAu);
  EXPECT_EQ(Crc32c(std::string(32, '\xff')), 0x62A8AB43u);
  std::string ascending;
  for (int i = 0; i < 32; ++i) ascending.push_back(static_cast<char>(i));
  EXPECT_EQ(Crc32c(ascending), 0x46DD794Eu);
  EXPECT_EQ(Crc32c(""), 0u);
}

TEST(Crc32cTest, MaskIsTfRecordsRotateAndAdd) {
  for (uint32_t crc : {0u, 1u, 0xE3069283u, 0xFFFFFFFFu}) {
    EXPECT_EQ(MaskCrc32c(crc), ReferenceMask(crc));
  }
}

// TensorBoard's Event and Summary messages, only the fields written, built
// at run time so the test parses with protobuf's own decoder.
class EventSchema {
 public:
  EventSchema() {
    google::protobuf::FileDescriptorProto file;
    EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(R"pb(
      name: "event.proto"
      package: "tensorflow"
      syntax: "proto3"
      message_type {
        name: "Event"
        field { name: "wall_time" number: 1 label: LABEL_OPTIONAL type: TYPE_DOUBLE }
        field { name: "step" number: 2 label: LABEL_OPTIONAL type: TYPE_INT64 }
        field { name: "file_version" number: 3 label: LABEL_OPTIONAL type: TYPE_STRING }
        field {
          name: "summary" number: 5 label: LABEL_OPTIONAL type: TYPE_MESSAGE
          type_name: ".tensorflow.Summary"
        }
      }
      message_type {
        name: "Summary"
        field {
          name: "value" number: 1 label: LABEL_REPEATED type: TYPE_MESSAGE
          type_name: ".tensorflow.Summary.Value"
        }
        nested_type {
          name: "Value"
          field { name: "tag" number: 1 label: LABEL_OPTIONAL type: TYPE_STRING }
          field { name: "simple_value" number: 2 label: LABEL_OPTIONAL type: TYPE_FLOAT }
        }
      }
    )pb", &file));
    EXPECT_NE(pool_.BuildFile(file), nullptr);
    event_ = factory_.GetPrototype(pool_.FindMessageTypeByName("tensorflow.Event"));
  }

  std::unique_ptr<Message> Parse(const std::string& bytes) {
    std::unique_ptr<Message> event(event_->New());
    EXPECT_TRUE(event->ParseFromString(bytes));
    // Nothing the schema does not know: every byte was a field TensorBoard reads.
    EXPECT_TRUE(event->GetReflection()->GetUnknownFields(*event).empty());
    return event;
  }

 private:
  google::protobuf::DescriptorPool pool_;
  google::protobuf::DynamicMessageFactory factory_;
  const Message* event_ = nullptr;
};

// Splits a TFRecord file, checking both masked CRCs of every record.
std::vector<std::string> ReadRecords(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  std::stringstream buffer;
  buffer << file.rdbuf();
  const std::string bytes = buffer.str();
  std::vector<std::string> records;
  size_t at = 0;
  while (at < bytes.size()) {
    EXPECT_LE(at + 12, bytes.size());
    const uint64_t length = LittleEndian(bytes, at, 8);
    EXPECT_EQ(LittleEndian(bytes, at + 8, 4), ReferenceMask(ReferenceCrc32c(bytes.substr(at, 8))))
        << "length CRC of record " << records.size();
    EXPECT_LE(at + 12 + length + 4, bytes.size());
    const std::string data = bytes.substr(at + 12, length);
    EXPECT_EQ(LittleEndian(bytes, at + 12 + length, 4), ReferenceMask(ReferenceCrc32c(data)))
        << "data CRC of record " << records.size();
    records.push_back(data);
    at += 12 + length + 4;
  }
  return records;
}

TEST(EventFileWriterTest, TensorBoardCanReadTheFile) {
  const fs::path dir = fs::path(testing::TempPath("events"));
  fs::create_directories(dir);
  auto writer = EventFileWriter::Create(dir.string());
  ASSERT_TRUE(writer.ok()) << writer.status();
  const std::string name = fs::path((*writer)->path()).filename().string();
  EXPECT_EQ(name.rfind("events.out.tfevents.", 0), 0u) << name;
  // events.out.tfevents.<10-digit seconds>.<host>
  EXPECT_GT(name.size(), std::string("events.out.tfevents.0123456789.").size());
  EXPECT_EQ(name[30], '.') << name;

  ASSERT_TRUE((*writer)->Write(50, {{"train/loss", 0.75f}, {"train/accuracy", 0.5f}}).ok());
  ASSERT_TRUE((*writer)->Write(1LL << 40, {{"validation/loss", 1.25f}}).ok());

  const std::vector<std::string> records = ReadRecords((*writer)->path());
  ASSERT_EQ(records.size(), 3u);
  EventSchema schema;
  auto first = schema.Parse(records[0]);
  const auto* event_type = first->GetDescriptor();
  const auto* reflection = first->GetReflection();
  EXPECT_EQ(reflection->GetString(*first, event_type->FindFieldByName("file_version")),
            "brain.Event:2");
  const double wall_time = reflection->GetDouble(*first, event_type->FindFieldByName("wall_time"));
  EXPECT_GT(wall_time, 1.6e9);  // seconds since 1970, not milliseconds or 0

  auto second = schema.Parse(records[1]);
  EXPECT_EQ(reflection->GetInt64(*second, event_type->FindFieldByName("step")), 50);
  EXPECT_GE(reflection->GetDouble(*second, event_type->FindFieldByName("wall_time")), wall_time);
  const Message& summary =
      reflection->GetMessage(*second, event_type->FindFieldByName("summary"));
  const auto* value_field = summary.GetDescriptor()->FindFieldByName("value");
  ASSERT_EQ(summary.GetReflection()->FieldSize(summary, value_field), 2);
  const Message& value = summary.GetReflection()->GetRepeatedMessage(summary, value_field, 1);
  EXPECT_EQ(value.GetReflection()->GetString(value, value.GetDescriptor()->FindFieldByName("tag")),
            "train/accuracy");
  EXPECT_EQ(value.GetReflection()->GetFloat(
                value, value.GetDescriptor()->FindFieldByName("simple_value")),
            0.5f);

  auto third = schema.Parse(records[2]);
  EXPECT_EQ(reflection->GetInt64(*third, event_type->FindFieldByName("step")), 1LL << 40);
}

TEST(EventFileWriterTest, MissingFolderIsAnError) {
  auto writer = EventFileWriter::Create("/nonexistent/folder");
  ASSERT_FALSE(writer.ok());
  EXPECT_NE(writer.status().message().find("/nonexistent/folder/events.out.tfevents."),
            std::string::npos)
      << writer.status();
}

}  // namespace
}  // namespace pipeline
