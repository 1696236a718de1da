// make_codec: "NAME[:key=value,...]" to a codec.

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "codecs.hpp"
#include "fast/compress/codec.hpp"
#include "fast/core/error.hpp"
#include "fast/core/spec.hpp"

namespace fast::compress {

namespace {

using core::ParsedSpec;
using core::Setting;

using Make = std::unique_ptr<Codec> (*)(const ParsedSpec&, std::uint64_t, const core::Layout*);

// topk and randk: ratio or k (not both; neither: the codec's default).
KeepCount parse_keep(const ParsedSpec& s) {
  if (s.has("ratio") && s.has("k"))
    FAST_THROW(InvalidArgument, "codec spec '{}': keys ratio and k are exclusive, got both", s.text());
  KeepCount keep;
  if (s.has("ratio")) keep.ratio = s.number("ratio");
  if (s.has("k")) keep.k = static_cast<std::uint64_t>(s.integer("k"));
  return keep;
}

Setting ratio_key() {
  return Setting::number("ratio", KeepCount{}.ratio, "fraction of the elements kept (exclusive with k).")
      .greater_than(0)
      .at_most(1);
}
Setting k_key() {
  return Setting::integer("k", 1, "number of elements kept (exclusive with ratio).").at_least(1).default_shown("ratio");
}

// The codecs, in registry order: their declarations and their makers (same index).
struct Codecs {
  core::SpecFamily family;
  std::vector<Make> makes;
};

const Codecs& codecs() {
  static const Codecs table = [] {
    std::vector<core::SpecForm> forms;
    std::vector<Make> makes;
    const auto add = [&](core::SpecForm form, Make make) {
      forms.push_back(std::move(form));
      makes.push_back(make);
    };
    add({"none", "float32 copy (lossless)"},
        [](const ParsedSpec&, std::uint64_t, const core::Layout*) { return make_none(); });
    add({"fp16", "IEEE binary16"}, [](const ParsedSpec&, std::uint64_t, const core::Layout*) { return make_fp16(); });
    add({"bf16", "bfloat16"}, [](const ParsedSpec&, std::uint64_t, const core::Layout*) { return make_bf16(); });
    add({"int8",
         "stochastic rounding to levels per bucket's norm (QSGD)",
         {Setting::integer("levels", 127, "quantisation levels per sign.").at_least(1).at_most(127),
          Setting::integer("bucket", 512, "elements per norm.").at_least(1).at_most(4294967295.0)}},
        [](const ParsedSpec& s, std::uint64_t seed, const core::Layout*) {
          return make_int8(static_cast<int>(s.integer("levels")), static_cast<std::uint64_t>(s.integer("bucket")),
                           seed);
        });
    add({"sign", "signs and one scale (signSGD)"},
        [](const ParsedSpec&, std::uint64_t, const core::Layout*) { return make_sign(); });
    add({"topk",
         "the largest magnitudes",
         {ratio_key(), k_key(),
          Setting::choice("scope", {"global", "tensor"}, "global",
                          "the k largest of the whole buffer, or of each tensor.")}},
        [](const ParsedSpec& s, std::uint64_t, const core::Layout* layout) {
          return make_topk(parse_keep(s), s.string("scope") == "tensor", layout);
        });
    add({"randk", "uniformly random elements", {ratio_key(), k_key()}},
        [](const ParsedSpec& s, std::uint64_t seed, const core::Layout*) { return make_randk(parse_keep(s), seed); });
    add({"threshold",
         "the elements of magnitude at least the threshold",
         {Setting::number("value", 0, "the threshold.").at_least(0).at_most(3.4e38)},
         1},
        [](const ParsedSpec& s, std::uint64_t, const core::Layout*) {
          return make_threshold(static_cast<float>(s.number("value")));
        });
    add({"powersgd",
         "low-rank factors of each matrix",
         {Setting::integer("rank", static_cast<std::int64_t>(PowerSgdOptions{}.rank), "rank of the factors.")
              .at_least(1)
              .at_most(1024),
          Setting::boolean("warm_start", PowerSgdOptions{}.warm_start, "start each power step from the last Q.")}},
        [](const ParsedSpec& s, std::uint64_t seed, const core::Layout* layout) {
          PowerSgdOptions opt;
          opt.seed = seed;
          opt.rank = static_cast<decltype(opt.rank)>(s.integer("rank"));
          opt.warm_start = s.boolean("warm_start");
          return make_powersgd(opt, layout);
        });
    return Codecs{core::SpecFamily("codec", core::SpecSyntax::keyed, std::move(forms)), std::move(makes)};
  }();
  return table;
}

}  // namespace

const core::SpecFamily& codec_family() { return codecs().family; }

std::vector<std::string> codec_names() { return codec_family().names(); }

std::vector<std::string> codec_specs() {
  std::vector<std::string> specs;
  for (const core::SpecForm& f : codec_family().forms()) specs.push_back(codec_family().usage(f));
  return specs;
}

std::unique_ptr<Codec> make_codec(std::string_view spec, std::uint64_t seed, const core::Layout* layout) {
  const Codecs& c = codecs();
  const ParsedSpec parsed = c.family.parse(std::string(spec));
  const auto index = static_cast<std::size_t>(&parsed.form() - c.family.forms().data());
  return c.makes[index](parsed, seed, layout);
}

}  // namespace fast::compress
