#include "pipeline/trainer/json_object.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"

namespace pipeline {
namespace {

google::protobuf::Struct Parse(const std::string& json) {
  google::protobuf::Struct parsed;
  const auto status = google::protobuf::util::JsonStringToMessage(json, &parsed);
  EXPECT_TRUE(status.ok()) << status.ToString() << " in " << json;
  return parsed;
}

TEST(JsonObjectTest, FieldsInTheOrderAddedOnOneLine) {
  const std::string text = JsonObject()
                               .Add("event", "epoch")
                               .Add("epoch", 3)
                               .Add("step", int64_t{120})
                               .Add("train_loss", 0.25)
                               .Add("validated", true)
                               .Add("resumed", false)
                               .ToString();
  EXPECT_EQ(text,
            "{\"event\":\"epoch\",\"epoch\":3,\"step\":120,\"train_loss\":0.25,"
            "\"validated\":true,\"resumed\":false}");
}

TEST(JsonObjectTest, EmptyObject) { EXPECT_EQ(JsonObject().ToString(), "{}"); }

TEST(JsonObjectTest, StringLiteralIsAStringNotABool) {
  // A const char* would otherwise convert to bool.
  EXPECT_EQ(JsonObject().Add("name", "x").ToString(), "{\"name\":\"x\"}");
}

TEST(JsonObjectTest, NumbersKeepNineSignificantDigits) {
  EXPECT_EQ(JsonObject().Add("v", 1.0 / 3).ToString(), "{\"v\":0.333333333}");
  EXPECT_EQ(JsonObject().Add("v", 123456.789012).ToString(), "{\"v\":123456.789}");
  EXPECT_EQ(JsonObject().Add("v", 0.1).ToString(), "{\"v\":0.1}");
  EXPECT_EQ(JsonObject().Add("v", 2.0).ToString(), "{\"v\":2}");
  // Exponents stay valid JSON.
  const google::protobuf::Struct tiny = Parse(JsonObject().Add("v", 1.5e-12).ToString());
  EXPECT_DOUBLE_EQ(tiny.fields().at("v").number_value(), 1.5e-12);
  const google::protobuf::Struct huge = Parse(JsonObject().Add("v", -2.5e30).ToString());
  EXPECT_DOUBLE_EQ(huge.fields().at("v").number_value(), -2.5e30);
}

TEST(JsonObjectTest, IntegersAreExact) {
  EXPECT_EQ(JsonObject().Add("n", int64_t{9007199254740993}).ToString(),
            "{\"n\":9007199254740993}");
  EXPECT_EQ(JsonObject().Add("n", int64_t{-7}).ToString(), "{\"n\":-7}");
}

TEST(JsonObjectTest, NonFiniteNumbersAreNull) {
  const std::string text = JsonObject()
                               .Add("nan", std::numeric_limits<double>::quiet_NaN())
                               .Add("inf", std::numeric_limits<double>::infinity())
                               .Add("minus_inf", -std::numeric_limits<double>::infinity())
                               .ToString();
  EXPECT_EQ(text, "{\"nan\":null,\"inf\":null,\"minus_inf\":null}");
  const google::protobuf::Struct parsed = Parse(text);
  EXPECT_EQ(parsed.fields().at("nan").kind_case(), google::protobuf::Value::kNullValue);
}

TEST(JsonStringTest, EscapesWhatJsonRequires) {
  EXPECT_EQ(JsonString("plain"), "\"plain\"");
  EXPECT_EQ(JsonString("a\"b"), "\"a\\\"b\"");
  EXPECT_EQ(JsonString("C:\\runs"), "\"C:\\\\runs\"");
  EXPECT_EQ(JsonString("line\nnext\ttab\rcr"), "\"line\\nnext\\ttab\\rcr\"");
  EXPECT_EQ(JsonString(std::string("\x01\x1f", 2)), "\"\\u0001\\u001f\"");
  EXPECT_EQ(JsonString(std::string("nul\0end", 7)), "\"nul\\u0000end\"");
}

TEST(JsonStringTest, Utf8PassesThrough) {
  EXPECT_EQ(JsonString("class_acc/caf\xc3\xa9"), "\"class_acc/caf\xc3\xa9\"");
}

TEST(JsonObjectTest, EscapedKeysAndValuesRoundTrip) {
  const std::string awkward = std::string("quote \" back \\ newline \n ctrl \x02 caf\xc3\xa9");
  const std::string text = JsonObject().Add(awkward, awkward).ToString();
  const google::protobuf::Struct parsed = Parse(text);
  ASSERT_EQ(parsed.fields().count(awkward), 1) << text;
  EXPECT_EQ(parsed.fields().at(awkward).string_value(), awkward);
}

}  // namespace
}  // namespace pipeline
