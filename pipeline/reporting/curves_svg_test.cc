#include "pipeline/reporting/curves_svg.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pipeline/testing/temp_path.h"

namespace pipeline {
namespace {

using ::testing::HasSubstr;

// A small XML well-formedness check: one root, every element closed in
// order, attributes quoted, no stray '<' or '&'. Enough for generated SVG.
std::string CheckWellFormed(const std::string& xml) {
  std::vector<std::string> open;
  size_t at = 0;
  int roots = 0;
  while ((at = xml.find_first_of("<&", at)) != std::string::npos) {
    if (xml[at] == '&') {
      const size_t end = xml.find(';', at);
      const std::string entity = xml.substr(at, end == std::string::npos ? 0 : end - at + 1);
      if (entity != "&amp;" && entity != "&lt;" && entity != "&gt;" && entity != "&quot;") {
        return "bad entity at " + std::to_string(at);
      }
      at = end;
      continue;
    }
    const size_t end = xml.find('>', at);
    if (end == std::string::npos) return "unclosed tag at " + std::to_string(at);
    const std::string tag = xml.substr(at + 1, end - at - 1);
    at = end + 1;
    if (tag.empty()) return "empty tag";
    if (tag[0] == '?') continue;  // the XML declaration
    if (tag.find('<') != std::string::npos) return "'<' inside a tag: " + tag;
    if (std::count(tag.begin(), tag.end(), '"') % 2 != 0) return "unbalanced quotes: " + tag;
    if (tag[0] == '/') {
      const std::string name = tag.substr(1);
      if (open.empty() || open.back() != name) return "</" + name + "> closes nothing open";
      open.pop_back();
      continue;
    }
    if (open.empty() && ++roots > 1) return "more than one root element";
    if (tag.back() == '/') continue;
    open.push_back(tag.substr(0, tag.find_first_of(" \n")));
  }
  if (!open.empty()) return "<" + open.back() + "> is never closed";
  return roots == 1 ? "" : "no root element";
}

int Count(const std::string& text, const std::string& part) {
  int count = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++count;
  return count;
}

std::vector<EpochPoint> ThreeEpochs() {
  return {{1, 0.9, 0.70, 0.80, 0.75}, {2, 0.5, 0.85, 0.55, 0.83}, {3, 0.3125, 0.9, 0.45, 0.875}};
}

TEST(CurvesSvgTest, IsWellFormedSvgWithEveryPoint) {
  const std::string svg = RenderCurvesSvg(ThreeEpochs(), "small_cnn on <synthetic> & co");
  EXPECT_EQ(CheckWellFormed(svg), "") << svg;
  EXPECT_THAT(svg, HasSubstr("<svg xmlns=\"http://www.w3.org/2000/svg\""));
  EXPECT_THAT(svg, HasSubstr("small_cnn on &lt;synthetic&gt; &amp; co"));
  // Four series of three points, each point carrying its value.
  EXPECT_EQ(Count(svg, "<circle"), 12);
  EXPECT_EQ(Count(svg, "<polyline"), 4);
  EXPECT_THAT(svg, HasSubstr("<title>train loss, epoch 1: 0.9000</title>"));
  EXPECT_THAT(svg, HasSubstr("<title>train loss, epoch 3: 0.3125</title>"));
  EXPECT_THAT(svg, HasSubstr("<title>validation loss, epoch 2: 0.5500</title>"));
  EXPECT_THAT(svg, HasSubstr("<title>train accuracy, epoch 2: 85.00%</title>"));
  EXPECT_THAT(svg, HasSubstr("<title>validation accuracy, epoch 3: 87.50%</title>"));
  // Axes labelled, epochs ticked, a legend naming the series.
  EXPECT_THAT(svg, HasSubstr(">epoch</text>"));
  EXPECT_THAT(svg, HasSubstr(">cross-entropy loss</text>"));
  EXPECT_THAT(svg, HasSubstr(">accuracy (%)</text>"));
  EXPECT_THAT(svg, HasSubstr(">3</text>"));
  EXPECT_EQ(Count(svg, "<g class=\"legend\">"), 4);
  EXPECT_THAT(svg, HasSubstr(">validation accuracy</text>"));
}

TEST(CurvesSvgTest, PointsLieWhereTheirValuesAre) {
  // The loss axis starts at 0: a loss of 0 would sit on the x axis, and a
  // smaller loss is drawn lower than a larger one.
  const std::string svg = RenderCurvesSvg(ThreeEpochs(), "");
  auto cy_of = [&](const std::string& title) {
    const size_t at = svg.rfind("cy=\"", svg.find(title));
    return std::stod(svg.substr(at + 4));
  };
  EXPECT_LT(cy_of("train loss, epoch 1:"), cy_of("train loss, epoch 3:"));
  EXPECT_GT(cy_of("train accuracy, epoch 1:"), cy_of("train accuracy, epoch 3:"));
}

TEST(CurvesSvgTest, OneEpochAndMissingValidation) {
  std::vector<EpochPoint> points = {{1, 2.0, 0.1, std::nullopt, std::nullopt}};
  const std::string svg = RenderCurvesSvg(points, "one");
  EXPECT_EQ(CheckWellFormed(svg), "") << svg;
  EXPECT_EQ(Count(svg, "<circle"), 2);
  EXPECT_EQ(svg.find("nan"), std::string::npos) << svg;
  EXPECT_EQ(svg.find("inf"), std::string::npos) << svg;
  EXPECT_EQ(svg.find("validation"), std::string::npos);
}

TEST(CurvesSvgTest, WritesTheFile) {
  const std::string path = testing::TempPath("curves.svg");
  ASSERT_TRUE(WriteCurvesSvg(path, ThreeEpochs(), "t").ok());
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  EXPECT_EQ(text.str(), RenderCurvesSvg(ThreeEpochs(), "t"));
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
  EXPECT_FALSE(WriteCurvesSvg("/nonexistent/curves.svg", ThreeEpochs(), "t").ok());
}

}  // namespace
}  // namespace pipeline
