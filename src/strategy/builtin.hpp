#pragma once
// The built-in strategies' registration functions, one per strategy file, and the declarations of
// the options several of them share. registry.cpp registers them, in documentation order, the
// first time the registry is used (a static library would drop self-registering objects).

#include <string>
#include <string_view>
#include <vector>

#include "fast/strategy/registry.hpp"

namespace fast::strategy::builtin {

StrategyRegistration allreduce_registration();  // allreduce.cpp
StrategyRegistration ps_registration();         // ps.cpp
StrategyRegistration local_sgd_registration();  // local_sgd.cpp
StrategyRegistration easgd_registration();      // easgd.cpp
StrategyRegistration dpsgd_registration();      // dpsgd.cpp
StrategyRegistration adpsgd_registration();     // adpsgd.cpp
StrategyRegistration gosgd_registration();      // gosgd.cpp
StrategyRegistration acid_registration();       // acid.cpp

// shared_options.cpp: the options every strategy takes (chunk_bytes, non_finite, compress,
// aggregate, fault_inject) ...
std::vector<StrategyOption> common_options();
// ... and those some strategies share.
StrategyOption topology_option();          // dpsgd, adpsgd, gosgd, acid
StrategyOption consensus_step_option();    // dpsgd, acid
StrategyOption sparse_allreduce_option();  // allreduce, local-sgd
std::vector<StrategyOption>
dgc_options();  // allreduce, ps: dgc, dgc_clip, dgc_masking, dgc_local_view, dgc_warmup_ratio

// strategy.cpp: the checks of the common options (aggregate, fault_inject) for a world of
// `workers` and the strategy's traits; InvalidArgument naming the option.
void check_common(const StrategyOptions& options, int workers);
// strategy.cpp: the rejoin check (StrategyRegistration::rejoin) of the built-in asynchronous
// strategies: a worker can rejoin without a codec (with one, the links' codec references of the
// others would not match the newcomer's).
std::string rejoin_without_codec(const StrategyOptions& options, int rank);
// strategy.cpp: the elastic checks (StrategyRegistration::elastic) of the built-in synchronous
// strategies that send gradients. elastic_with_mean: a robust aggregate is sized for the whole
// world's gradients (allreduce, whose codec and dgc state starts afresh in forget_own_state()).
// elastic_without_world_state: that, and dgc and a codec, whose state is kept per link; `dgc_keeps`,
// `codec_keeps`: what the strategy keeps with them, as a clause ("keeps ...").
std::string elastic_with_mean(const StrategyOptions& options);
std::string elastic_without_world_state(const StrategyOptions& options, std::string_view dgc_keeps,
                                        std::string_view codec_keeps);
// strategy.cpp: the periodic checkpoint check (StrategyRegistration::save_during_run) of the
// built-in asynchronous strategies: a worker saves alone during the run without a codec or dgc
// (their links' state changes with every exchange, on both sides).
std::string save_during_run_without_codec(const StrategyOptions& options);

}  // namespace fast::strategy::builtin
