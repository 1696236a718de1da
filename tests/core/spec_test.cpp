// The spec grammar (core/spec.hpp) on families declared here: keyed and positional syntax, required
// keys, defaults, the usage and probe strings built from the declarations, and every error's exact
// text.

#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "fast/core/error.hpp"
#include "fast/core/spec.hpp"

namespace fast::core {
namespace {

std::string spec_error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  ADD_FAILURE() << "accepted";
  return {};
}

const SpecFamily& keyed() {
  static const SpecFamily family(
      "thing", SpecSyntax::keyed,
      {{"plain", "no keys"},
       {"sized",
        "one required key and optional ones",
        {Setting::string("file", "", "a file."), Setting::integer("count", 3, "a count.").at_least(1).at_most(9),
         Setting::number("ratio", 0.5, "a ratio.").greater_than(0).less_than(1),
         Setting::choice("mode", {"a", "b"}, "a", "a mode."), Setting::boolean("flag", false, "a flag.")},
        1}});
  return family;
}

const SpecFamily& positional() {
  static const SpecFamily family(
      "shape", SpecSyntax::positional,
      {{"dot", "no keys"},
       {"grid",
        "rows x cols",
        {Setting::integer("rows", 1, "rows.").at_least(1), Setting::integer("cols", 1, "cols.").at_least(1)},
        0,
        'x'},
       {"path", "one key takes the rest", {Setting::string("to", "", "where.")}, 1}});
  return family;
}

TEST(Spec, KeyedValuesAreCheckedAndDefaultsFilledIn) {
  const ParsedSpec s = keyed().parse("sized:ratio=0.25,file=a=b.txt,flag=true");
  EXPECT_EQ(s.name(), "sized");
  EXPECT_EQ(s.string("file"), "a=b.txt");  // the first '=' separates the key
  EXPECT_DOUBLE_EQ(s.number("ratio"), 0.25);
  EXPECT_TRUE(s.boolean("flag"));
  EXPECT_EQ(s.integer("count"), 3);  // default
  EXPECT_FALSE(s.has("count"));
  EXPECT_EQ(s.string("mode"), "a");
  EXPECT_EQ(s.raw("ratio"), "0.25");
  EXPECT_EQ(keyed().parse("plain").name(), "plain");
  EXPECT_THROW((void)s.integer("ratio"), InvalidUsage);
  EXPECT_THROW((void)s.integer("nope"), InvalidUsage);
}

TEST(Spec, PositionalValuesFollowTheDeclaredOrder) {
  const ParsedSpec g = positional().parse("grid:2x5");
  EXPECT_EQ(g.integer("rows"), 2);
  EXPECT_EQ(g.integer("cols"), 5);
  const ParsedSpec r = positional().parse("grid:4");
  EXPECT_TRUE(r.has("rows"));
  EXPECT_FALSE(r.has("cols"));
  EXPECT_EQ(positional().parse("path:a:b;c x").string("to"), "a:b;c x");  // one key: the whole rest
  EXPECT_FALSE(positional().parse("grid").has("rows"));
}

TEST(Spec, ErrorsNameTheSpecTheKeyWhatItAcceptsAndTheValue) {
  const auto k = [](const char* text) { return spec_error_of([&] { (void)keyed().parse(text); }); };
  const auto p = [](const char* text) { return spec_error_of([&] { (void)positional().parse(text); }); };
  EXPECT_EQ(k("big"), "thing spec 'big': unknown name 'big', expected one of: plain, sized");
  EXPECT_EQ(k("sized:file=f,count=10"),
            "thing spec 'sized:file=f,count=10': key 'count' expects an integer in [1, 9], got '10'");
  EXPECT_EQ(k("sized:file=f,count=2.5"),
            "thing spec 'sized:file=f,count=2.5': key 'count' expects an integer in [1, 9], got '2.5'");
  EXPECT_EQ(k("sized:file=f,ratio=1"),
            "thing spec 'sized:file=f,ratio=1': key 'ratio' expects a number in (0, 1), got '1'");
  EXPECT_EQ(k("sized:file=f,mode=c"), "thing spec 'sized:file=f,mode=c': key 'mode' expects one of: a, b, got 'c'");
  EXPECT_EQ(k("sized:file=f,flag=1"), "thing spec 'sized:file=f,flag=1': key 'flag' expects true or false, got '1'");
  EXPECT_EQ(k("sized:count=2"),
            "thing spec 'sized:count=2': sized needs file "
            "(sized:file=FILE[,count=COUNT,ratio=RATIO,mode=a|b,flag=true|false])");
  EXPECT_EQ(
      k("sized:file=f,size=2"),
      "thing spec 'sized:file=f,size=2': unknown key 'size' of sized, expected one of: file, count, ratio, mode, flag");
  EXPECT_EQ(k("plain:x=1"), "thing spec 'plain:x=1': unknown key 'x': plain takes no keys");
  EXPECT_EQ(k("sized:file=f,file=g"), "thing spec 'sized:file=f,file=g': key 'file' given twice");
  EXPECT_EQ(k("sized:file=f,"), "thing spec 'sized:file=f,': item '' is not KEY=VALUE");
  EXPECT_EQ(k("sized:"), "thing spec 'sized:': item '' is not KEY=VALUE");
  EXPECT_EQ(k("sized:file"), "thing spec 'sized:file': item 'file' is not KEY=VALUE");
  EXPECT_EQ(p("dot:1"), "shape spec 'dot:1': dot takes no parameters, got '1'");
  EXPECT_EQ(p("grid:1x2x3"), "shape spec 'grid:1x2x3': grid takes at most 2 values (grid[:ROWS[xCOLS]]), got '1x2x3'");
  EXPECT_EQ(p("grid:0x2"), "shape spec 'grid:0x2': ROWS (value 1 of grid[:ROWS[xCOLS]]) expects an integer >= 1, got '0'");
  EXPECT_EQ(p("grid:2x"), "shape spec 'grid:2x': COLS (value 2 of grid[:ROWS[xCOLS]]) expects an integer >= 1, got ''");
  EXPECT_EQ(p("path"), "shape spec 'path': path needs to (path:TO)");
  EXPECT_EQ(p("path:"), "shape spec 'path:': path expects values after ':' (path:TO)");
  EXPECT_EQ(p("grid:"), "shape spec 'grid:': grid expects values after ':' (grid[:ROWS[xCOLS]])");
}

TEST(Spec, UsageAndProbesComeFromTheDeclarations) {
  EXPECT_EQ(keyed().usages(), "plain, sized:file=FILE[,count=COUNT,ratio=RATIO,mode=a|b,flag=true|false]");
  EXPECT_EQ(positional().usages(), "dot, grid[:ROWS[xCOLS]], path:TO");
  const SpecForm& sized = *keyed().find("sized");
  EXPECT_EQ(keyed().compose(sized, "count", "7"), "sized:count=7,file=");  // the probed key is read first
  const SpecForm& grid = *positional().find("grid");
  EXPECT_EQ(positional().compose(grid, "rows", "3"), "grid:3");
  EXPECT_EQ(positional().compose(grid, "cols", "3"), "grid:1x3");
}

TEST(Spec, InvalidTextLiesOutsideEachDeclaredRange) {
  EXPECT_EQ(invalid_text(Setting::integer("a", 1, "h.").at_least(1).at_most(9)), "10");
  EXPECT_EQ(invalid_text(Setting::integer("a", 1, "h.").at_least(1)), "-1");
  EXPECT_EQ(invalid_text(Setting::integer("a", 1, "h.")), "x");
  EXPECT_EQ(invalid_text(Setting::number("a", 0.5, "h.").greater_than(0).less_than(1)), "1");
  EXPECT_EQ(invalid_text(Setting::number("a", 0.5, "h.").greater_than(0)), "0");
  EXPECT_EQ(invalid_text(Setting::number("a", 1, "h.").at_least(0).at_most(3.4e38)), "6.8e+38");
  EXPECT_EQ(invalid_text(Setting::boolean("a", true, "h.")), "maybe");
  EXPECT_EQ(invalid_text(Setting::string("a", "", "h.")), std::nullopt);
  EXPECT_EQ(invalid_text(Setting::string("a", "", "h.").accepts("a form")), "!");
}

TEST(Spec, NameIsTheTextBeforeTheFirstColon) {
  EXPECT_EQ(spec_name("torus2d:2x4"), "torus2d");
  EXPECT_EQ(spec_name("multi-krum:1:3"), "multi-krum");
  EXPECT_EQ(spec_name("ring"), "ring");
  EXPECT_EQ(spec_name("star:"), "star");
  EXPECT_EQ(spec_name(":2x4"), "");
  EXPECT_EQ(spec_name(""), "");
}

}  // namespace
}  // namespace fast::core
