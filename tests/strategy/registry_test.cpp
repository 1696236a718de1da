// The strategy registry and its option declarations (fast/strategy/registry.hpp, option.hpp).

#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "common/error_message.hpp"
#include "fast/core/error.hpp"
#include "fast/strategy/registry.hpp"

namespace fast::strategy {
namespace {

using fast::testing::expect_error;

const DeclaredOption& declared(const std::vector<DeclaredOption>& all, const std::string& name) {
  for (const DeclaredOption& d : all)
    if (d.option.name() == name) return d;
  ADD_FAILURE() << "option " << name << " is not declared";
  return all.front();
}

TEST(StrategyRegistry, BuiltInStrategiesInDocumentationOrder) {
  EXPECT_EQ(strategy_names(),
            (std::vector<std::string>{"allreduce", "ps", "local-sgd", "easgd", "dpsgd", "adpsgd", "gosgd", "acid"}));
  for (const auto& [name, summary] : strategy_summaries()) EXPECT_FALSE(summary.empty()) << name;
}

TEST(StrategyRegistry, SharedOptionsNameEveryStrategyThatDeclaresThem) {
  const std::vector<DeclaredOption> all = declared_options();
  EXPECT_EQ(declared(all, "topology").strategies, (std::vector<std::string>{"dpsgd", "adpsgd", "gosgd", "acid"}));
  EXPECT_EQ(declared(all, "consensus_step").strategies, (std::vector<std::string>{"dpsgd", "acid"}));
  EXPECT_EQ(declared(all, "dgc").strategies, (std::vector<std::string>{"allreduce", "ps"}));
  EXPECT_EQ(declared(all, "period").strategies, (std::vector<std::string>{"local-sgd"}));
  EXPECT_TRUE(declared(all, "compress").strategies.empty());  // common
  for (const DeclaredOption& d : all)                         // each name once
    EXPECT_EQ(std::count_if(all.begin(), all.end(),
                            [&](const DeclaredOption& o) { return o.option.name() == d.option.name(); }),
              1)
        << d.option.name();
}

// A bound option's default is its field's initializer, and its text reads back to the same value.
TEST(StrategyRegistry, DefaultsAreTheTypedViewsAndRoundTripThroughText) {
  const StrategyOptions defaults;
  EXPECT_EQ(find_option("period")->default_value(), OptionValue(std::int64_t{8}));
  EXPECT_EQ(find_option("mode")->default_value(), OptionValue(std::string("async")));
  EXPECT_EQ(find_option("dgc_masking")->default_value(), OptionValue(std::string("off")));
  EXPECT_EQ(find_option("dgc_local_view")->default_value(), OptionValue(std::string("on")));
  EXPECT_EQ(find_option("non_finite")->default_value(), OptionValue(std::string("skip")));
  for (const DeclaredOption& d : declared_options()) {
    const OptionValue v = d.option.load(defaults);
    EXPECT_EQ(v, d.option.default_value()) << d.option.name();
    EXPECT_EQ(d.option.parse(d.option.text(v)), v) << d.option.name();
  }
}

TEST(StrategyRegistry, GettersAndSetReadAndWriteTheTypedView) {
  StrategyOptions o;
  o.set("period", std::int64_t{3});
  EXPECT_EQ(o.period, 3);
  EXPECT_EQ(o.get_integer("period"), 3);
  o.set("dgc_masking", std::string("off"));
  EXPECT_FALSE(o.dgc_masking);
  EXPECT_EQ(o.get_string("dgc_masking"), "off");
  o.set("non_finite", std::string("error"));
  EXPECT_EQ(o.non_finite, NonFinitePolicy::error);
  o.alpha = 0.3;
  EXPECT_EQ(o.get_number("alpha"), 0.3);
  EXPECT_TRUE(o.values.empty());  // built-in options live in their fields
}

TEST(StrategyRegistry, BadValuesNameTheOptionTheExpectationAndTheValue) {
  StrategyOptions o;
  expect_error<core::InvalidArgument>([&] { o.set("period", std::int64_t{0}); },
                                      {"period: expected an integer >= 1, got 0"});
  expect_error<core::InvalidArgument>([&] { o.set("mode", std::string("eventual")); },
                                      {"mode: unknown value 'eventual'; expected one of: sync, async, ssp"});
  expect_error<core::InvalidArgument>([&] { o.set("alpha", std::string("big")); },
                                      {"alpha: expected a number in (0, 1), got a value of another type"});
  expect_error<core::InvalidArgument>([&] { o.set("compress", std::string("zip")); },
                                      {"codec spec 'zip': unknown name 'zip'"});
  // A topology name of neither kind: the graphs and, for gosgd, the schedules.
  expect_error<core::InvalidArgument>(
      [&] { o.set("topology", std::string("ringg")); },
      {"topology spec 'ringg': unknown name 'ringg' (did you mean 'ring'?); expected a graph, one of: ring, torus2d,",
       "; or, for gosgd, a time-varying schedule, one of: exponential-peer, random-matching, random-peer, cycle"});
  expect_error<core::InvalidArgument>([&] { (void)o.get_string("period"); },
                                      {"strategy option 'period': get_string does not read its type (integer)"});
  expect_error<core::InvalidArgument>([&] { (void)o.get_number("colour"); },
                                      {"strategy option 'colour' is not declared by any strategy"});
  expect_error<core::InvalidArgument>([&] { (void)find_option("dgc_warmup_ratio")->parse("0"); },
                                      {"dgc_warmup_ratio: expected a number in (0, 1], got 0"});
  expect_error<core::InvalidArgument>([&] { (void)find_option("chunk_bytes")->parse("1e3"); },
                                      {"chunk_bytes: expected an integer, got '1e3'"});
  EXPECT_EQ(o.period, 8);  // nothing refused was stored
  EXPECT_EQ(o.mode, "async");
}

// Every range check of a strategy option is its declaration's: check_strategy_options (and
// make_strategy) refuse a value out of its declared range with the strategy, the key, the range as
// declared and the value, and the declaration's words are the docs' "accepts" column.
TEST(StrategyRegistry, DeclaredRangesAreTheOnlyRangeChecks) {
  struct Case {
    StrategyOptions options;
    std::string key;
    std::string value;
  };
  const std::vector<Case> cases{
      {{.name = "easgd", .alpha = 1.0}, "alpha", "1"},
      {{.name = "easgd", .alpha = 0.0}, "alpha", "0"},
      {{.name = "easgd", .tau = 0}, "tau", "0"},
      {{.name = "local-sgd", .period = 0}, "period", "0"},
      {{.name = "local-sgd", .sync_warmup = -1}, "sync_warmup", "-1"},
      {{.name = "gosgd", .gossip_probability = 1.5}, "gossip_probability", "1.5"},
      {{.name = "dpsgd", .consensus_step = 1.5}, "consensus_step", "1.5"},
      {{.name = "acid", .comm_rate = 65}, "comm_rate", "65"},
      {{.name = "acid", .acid_eta = -0.5}, "acid_eta", "-0.5"},
      {{.name = "acid", .acid_alpha_tilde = -2}, "acid_alpha_tilde", "-2"},
      {{.name = "ps", .staleness = -1}, "staleness", "-1"},
      {{.name = "ps", .servers = 0}, "servers", "0"},
      {{.name = "ps", .dgc_clip = -1}, "dgc_clip", "-1"},
      {{.name = "allreduce", .dgc_warmup_ratio = 0}, "dgc_warmup_ratio", "0"},
      {{.name = "dpsgd", .chunk_bytes = 8}, "chunk_bytes", "8"},
  };
  for (const Case& c : cases) {
    const std::string expected = fmt::format("strategy '{}': option '{}': expected {}, got {}", c.options.name, c.key,
                                             find_option(c.key)->expected(), c.value);
    expect_error<core::InvalidArgument>([&] { check_strategy_options(c.options, 4); }, {expected});
  }
  // Options a strategy does not read are not its concern.
  EXPECT_NO_THROW(check_strategy_options({.name = "allreduce", .alpha = 5, .comm_rate = -1}, 4));
  // The sentinels and the bounds as declared.
  EXPECT_EQ(find_option("alpha")->expected(), "a number in (0, 1)");
  EXPECT_EQ(find_option("acid_eta")->expected(), "a number >= 0, or -1");
  EXPECT_EQ(find_option("consensus_step")->expected(), "a number in (0, 1], or 0");
  EXPECT_NO_THROW(check_strategy_options({.name = "acid", .acid_eta = -1, .consensus_step = 0}, 4));
}

TEST(StrategyRegistry, TraitsComeFromTheRegistrations) {
  EXPECT_EQ(strategies_with(&StrategyRegistration::sends_gradients), "allreduce and ps");
  EXPECT_EQ(strategies_with(&StrategyRegistration::robust_aggregate), "allreduce and ps with mode = sync");
  EXPECT_EQ(strategies_with(&StrategyRegistration::external_optimizer), "allreduce");
  EXPECT_EQ(strategies_with(&StrategyRegistration::asynchronous)
                .find("ps with mode = async or ssp, easgd, adpsgd, gosgd"
                      " and acid"),
            0u);
  EXPECT_FALSE(find_registration("ps").asynchronous.holds({.name = "ps", .mode = "sync"}));
  EXPECT_TRUE(find_registration("ps").asynchronous.holds({.name = "ps", .mode = "ssp"}));
  EXPECT_TRUE(find_registration("acid").asynchronous.holds({.name = "acid"}));
  EXPECT_FALSE(find_registration("dpsgd").asynchronous.holds({.name = "dpsgd"}));
  expect_error<core::InvalidArgument>([] { (void)find_registration("pushsum"); },
                                      {"strategy: unknown name 'pushsum'; expected one of: allreduce, ps"});
}

// A run too short for a step-counted option is named; the local-sgd case against the rule of its
// step() (an average at step s when s >= sync_warmup and (s + 1) % period == 0), by enumeration.
TEST(StrategyRegistry, ShortRunWarningsNameWhatTheRunMisses) {
  for (const std::int64_t period : {1, 3, 8})
    for (const std::int64_t warmup : {0, 2, 7, 9})
      for (const std::int64_t total : {1, 5, 8, 10, 30}) {
        bool averages = false, all_warmup = true;
        for (std::int64_t s = 0; s < total; ++s) {
          averages = averages || (s >= warmup && (s + 1) % period == 0);
          all_warmup = all_warmup && s < warmup;
        }
        const std::vector<std::string> got =
            short_run_warnings({.name = "local-sgd", .period = period, .sync_warmup = warmup}, total);
        const std::string where = fmt::format("period {} warmup {} total {}", period, warmup, total);
        if (all_warmup) {
          ASSERT_EQ(got.size(), 1u) << where;
          EXPECT_EQ(got[0], fmt::format("sync_warmup = {}: covers the run's {} steps per worker: every step averages "
                                        "gradients, as allreduce",
                                        warmup, total));
        } else if (!averages) {
          ASSERT_EQ(got.size(), 1u) << where;
          EXPECT_EQ(
              got[0].find(fmt::format("period = {}: the first average of the models would come at step ", period)), 0u)
              << got[0];
        } else {
          EXPECT_TRUE(got.empty()) << where << ": " << got[0];
        }
      }
  EXPECT_EQ(short_run_warnings({.name = "local-sgd", .period = 8}, 5),
            (std::vector<std::string>{"period = 8: the first average of the models would come at step 8, after the "
                                      "run's 5 steps per worker: the replicas train apart for the whole run"}));
  EXPECT_EQ(short_run_warnings({.name = "easgd", .tau = 6}, 5),
            (std::vector<std::string>{"tau = 6: a worker's first exchange with the centre would come at its step 6, "
                                      "after the run's 5 steps per worker: the replicas train apart"}));
  EXPECT_TRUE(short_run_warnings({.name = "easgd", .tau = 5}, 5).empty());         // the exchange at step 5
  EXPECT_TRUE(short_run_warnings({.name = "local-sgd", .period = 8}, 0).empty());  // length unknown
  EXPECT_TRUE(short_run_warnings({.name = "allreduce", .period = 8}, 5).empty());  // allreduce reads no period
}

TEST(StrategyOption, ExclusiveBoundsAndSentinels) {
  StrategyOption open = StrategyOption::number("x", 0.5, "h.").greater_than(0).less_than(1);
  EXPECT_EQ(open.expected(), "a number in (0, 1)");
  expect_error<core::InvalidArgument>([&] { (void)open.parse("1"); }, {"x: expected a number in (0, 1), got 1"});
  EXPECT_EQ(std::get<double>(open.parse("0.999")), 0.999);
  StrategyOption below = StrategyOption::integer("n", 1, "h.").less_than(10);
  EXPECT_EQ(below.expected(), "an integer < 10");
  StrategyOption sentinel = StrategyOption::number("y", -1, "h.").at_least(0).or_exactly(-1);
  EXPECT_EQ(sentinel.expected(), "a number >= 0, or -1");
  EXPECT_EQ(std::get<double>(sentinel.parse("-1")), -1.0);
  expect_error<core::InvalidArgument>([&] { (void)sentinel.parse("-0.5"); },
                                      {"y: expected a number >= 0, or -1, got -0.5"});
  // A bound's openness and the sentinel are part of the setting.
  EXPECT_FALSE(open.same_setting(StrategyOption::number("x", 0.5, "h.").greater_than(0).at_most(1)));
  EXPECT_FALSE(sentinel.same_setting(StrategyOption::number("y", -1, "h.").at_least(0).or_exactly(-2)));
}

}  // namespace
}  // namespace fast::strategy
