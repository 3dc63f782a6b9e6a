#include "pipeline/util/json_parser.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace pipeline {
namespace {

using ::testing::HasSubstr;

TEST(JsonParserTest, ReadsEveryKindAndKeepsMembersInOrderWithDuplicates) {
  auto value =
      ParseJson(R"( {"b": [1, -2.5e3, true, false, null], "a": {"x": "y"}, "b": "again"} )");
  ASSERT_TRUE(value.ok()) << value.status();
  ASSERT_EQ(value->kind, JsonValue::Kind::kObject);
  ASSERT_EQ(value->members.size(), 3u);
  EXPECT_EQ(value->members[0].first, "b");
  EXPECT_EQ(value->members[1].first, "a");
  EXPECT_EQ(value->members[2].first, "b");
  const JsonValue& list = value->members[0].second;
  ASSERT_EQ(list.items.size(), 5u);
  EXPECT_EQ(list.items[0].text, "1");
  EXPECT_EQ(list.items[1].text, "-2.5e3");
  EXPECT_TRUE(list.items[2].boolean);
  EXPECT_EQ(list.items[3].kind, JsonValue::Kind::kBool);
  EXPECT_FALSE(list.items[3].boolean);
  EXPECT_EQ(list.items[4].kind, JsonValue::Kind::kNull);
  EXPECT_EQ(value->members[1].second.members[0].second.text, "y");
}

TEST(JsonParserTest, ResolvesEscapesAndSurrogatePairsToUtf8) {
  auto value = ParseJson(R"("a\"b\\c\/\n\t\u00e9\ud83d\ude00")");
  ASSERT_TRUE(value.ok()) << value.status();
  EXPECT_EQ(value->text, "a\"b\\c/\n\t\xC3\xA9\xF0\x9F\x98\x80");
  EXPECT_EQ(ParseJson("\"\xC3\xA9\"")->text, "\xC3\xA9");
}

TEST(JsonParserTest, RefusesWhatRfc8259Refuses) {
  const char* const kBad[] = {
      "",
      "{",
      "{\"a\" 1}",
      "{\"a\":1,}",
      "[1,]",
      "[1 2]",
      "01",
      "1.",
      "-",
      "1e",
      "+1",
      "tru",
      "\"abc",
      "\"\\x\"",
      "\"\\u12\"",
      "\"\\ud800\"",
      "\"\\udc00\"",
      "\"a\nb\"",
      "{} {}",
      "{'a': 1}",
      "\"\xC3\"",
      "\"\xC0\x80\"",
      "\"\xED\xA0\x80\"",
      "\"\xF5\x80\x80\x80\"",
      "\"\xFF\"",
      "NaN",
  };
  for (const char* text : kBad) {
    auto value = ParseJson(text);
    EXPECT_FALSE(value.ok()) << "accepted: " << text;
    if (!value.ok()) {
      EXPECT_THAT(value.status().message(), HasSubstr("invalid JSON at byte "));
    }
  }
}

TEST(JsonParserTest, LimitsNestingDepthAndValueCount) {
  const std::string deep = std::string(10, '[') + std::string(10, ']');
  EXPECT_TRUE(ParseJson(deep, JsonLimits{10}).ok());
  auto value = ParseJson(deep, JsonLimits{9});
  ASSERT_FALSE(value.ok());
  EXPECT_THAT(value.status().message(), HasSubstr("arrays and objects nested more than 9 levels deep"));
  // Far deeper than any stack allows, refused without recursing that far.
  EXPECT_FALSE(ParseJson(std::string(1000000, '[')).ok());

  EXPECT_TRUE(ParseJson("[1, 2, 3]", JsonLimits{64, 4}).ok());  // the array and its three
  value = ParseJson("[1, 2, 3, 4]", JsonLimits{64, 4});
  ASSERT_FALSE(value.ok());
  EXPECT_EQ(value.status().message(), "invalid JSON at byte 10: more than 4 values");
}

TEST(JsonParserTest, JsonUint64TakesOnlyPlainIntegersThatFit) {
  EXPECT_EQ(JsonUint64(*ParseJson("0")), 0u);
  EXPECT_EQ(JsonUint64(*ParseJson("18446744073709551615")), 18446744073709551615u);
  EXPECT_EQ(JsonUint64(*ParseJson("18446744073709551616")), std::nullopt);
  EXPECT_EQ(JsonUint64(*ParseJson("-1")), std::nullopt);
  EXPECT_EQ(JsonUint64(*ParseJson("1.0")), std::nullopt);
  EXPECT_EQ(JsonUint64(*ParseJson("1e3")), std::nullopt);
  EXPECT_EQ(JsonUint64(*ParseJson("\"1\"")), std::nullopt);
}

TEST(JsonParserTest, QuoteEscapesAsSerdeJsonAndParsesBack) {
  const std::string text = "a\"b\\c/\x01\x1f\x7f\b\t\n\f\r\xC3\xA9";
  EXPECT_EQ(JsonQuote(text), "\"a\\\"b\\\\c/\\u0001\\u001f\x7f\\b\\t\\n\\f\\r\xC3\xA9\"");
  EXPECT_EQ(ParseJson(JsonQuote(text))->text, text);
}

}  // namespace
}  // namespace pipeline
