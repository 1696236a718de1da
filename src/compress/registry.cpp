// make_codec: "NAME[:key=value,...]" to a codec.

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <map>
#include <string>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "codecs.hpp"
#include "fast/compress/codec.hpp"
#include "fast/core/error.hpp"

namespace fast::compress {

namespace {

using Options = std::map<std::string, std::string, std::less<>>;

struct Entry {
  std::string_view name;
  std::string_view usage;                // its options in a spec, for help texts ("" none): "[:levels=S]"
  std::array<std::string_view, 3> keys;  // allowed option keys ("" = unused slot)
  std::unique_ptr<Codec> (*make)(const Options&, std::uint64_t, const core::Layout*);
};

double parse_double(std::string_view codec, std::string_view key, const std::string& text) {
  double v = 0;
  const auto* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, v);
  FAST_ENFORCE(ec == std::errc() && ptr == end && std::isfinite(v), "codec '{}': option {}='{}' is not a finite number",
               codec, key, text);
  return v;
}

std::uint64_t parse_count(std::string_view codec, std::string_view key, const std::string& text) {
  std::uint64_t v = 0;
  const auto* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, v);
  FAST_ENFORCE(ec == std::errc() && ptr == end, "codec '{}': option {}='{}' is not a non-negative integer", codec, key,
               text);
  return v;
}

KeepCount parse_keep(std::string_view codec, const Options& o) {
  KeepCount keep;
  const auto r = o.find("ratio");
  const auto k = o.find("k");
  FAST_ENFORCE(r == o.end() || k == o.end(), "codec '{}': options ratio and k are exclusive, got both", codec);
  if (r != o.end()) {
    keep.ratio = parse_double(codec, "ratio", r->second);
    FAST_ENFORCE(keep.ratio > 0 && keep.ratio <= 1, "codec '{}': option ratio expected in (0, 1], got {}", codec,
                 keep.ratio);
  }
  if (k != o.end()) {
    keep.k = parse_count(codec, "k", k->second);
    FAST_ENFORCE(keep.k >= 1, "codec '{}': option k expected >= 1, got {}", codec, keep.k);
  }
  return keep;
}

const std::array kRegistry{
    Entry{"none", "", {}, [](const Options&, std::uint64_t, const core::Layout*) { return make_none(); }},
    Entry{"fp16", "", {}, [](const Options&, std::uint64_t, const core::Layout*) { return make_fp16(); }},
    Entry{"bf16", "", {}, [](const Options&, std::uint64_t, const core::Layout*) { return make_bf16(); }},
    Entry{"int8",
          "[:levels=S,bucket=B]",
          {"levels", "bucket"},
          [](const Options& o, std::uint64_t seed, const core::Layout*) {
            std::uint64_t levels = 127, bucket = 512;
            if (auto it = o.find("levels"); it != o.end()) levels = parse_count("int8", "levels", it->second);
            FAST_ENFORCE(levels >= 1 && levels <= 127, "codec 'int8': option levels expected in 1..127, got {}",
                         levels);
            if (auto it = o.find("bucket"); it != o.end()) bucket = parse_count("int8", "bucket", it->second);
            FAST_ENFORCE(bucket >= 1 && bucket <= 0xFFFFFFFFu,
                         "codec 'int8': option bucket (elements per norm) expected in 1..4294967295, got {}", bucket);
            return make_int8(static_cast<int>(levels), bucket, seed);
          }},
    Entry{"sign", "", {}, [](const Options&, std::uint64_t, const core::Layout*) { return make_sign(); }},
    Entry{"topk",
          "[:ratio=R|k=K,scope=global|tensor]",
          {"ratio", "k", "scope"},
          [](const Options& o, std::uint64_t, const core::Layout* layout) {
            bool per_tensor = false;
            if (auto it = o.find("scope"); it != o.end()) {
              FAST_ENFORCE(it->second == "global" || it->second == "tensor",
                           "codec 'topk': option scope expected global or tensor, got '{}'", it->second);
              per_tensor = it->second == "tensor";
            }
            return make_topk(parse_keep("topk", o), per_tensor, layout);
          }},
    Entry{"randk",
          "[:ratio=R|k=K]",
          {"ratio", "k"},
          [](const Options& o, std::uint64_t seed, const core::Layout*) {
            return make_randk(parse_keep("randk", o), seed);
          }},
    Entry{"threshold",
          ":value=T",
          {"value"},
          [](const Options& o, std::uint64_t, const core::Layout*) {
            const auto it = o.find("value");
            FAST_ENFORCE(it != o.end(), "codec 'threshold': option value is required (threshold:value=T)");
            const double t = parse_double("threshold", "value", it->second);
            FAST_ENFORCE(t >= 0 && t <= 3.4e38, "codec 'threshold': option value expected in [0, 3.4e38], got {}", t);
            return make_threshold(static_cast<float>(t));
          }},
    Entry{"powersgd",
          "[:rank=R,warm_start=true|false]",
          {"rank", "warm_start"},
          [](const Options& o, std::uint64_t seed, const core::Layout* layout) {
            PowerSgdOptions opt;
            opt.seed = seed;
            if (auto it = o.find("rank"); it != o.end()) opt.rank = parse_count("powersgd", "rank", it->second);
            FAST_ENFORCE(opt.rank >= 1 && opt.rank <= 1024, "codec 'powersgd': option rank expected in 1..1024, got {}",
                         opt.rank);
            if (auto it = o.find("warm_start"); it != o.end()) {
              FAST_ENFORCE(it->second == "true" || it->second == "false",
                           "codec 'powersgd': option warm_start expected true or false, got '{}'", it->second);
              opt.warm_start = it->second == "true";
            }
            return make_powersgd(opt, layout);
          }},
};

}  // namespace

std::vector<std::string> codec_names() {
  std::vector<std::string> names;
  for (const Entry& e : kRegistry) names.emplace_back(e.name);
  return names;
}

std::vector<std::string> codec_specs() {
  std::vector<std::string> specs;
  for (const Entry& e : kRegistry) specs.push_back(std::string(e.name) + std::string(e.usage));
  return specs;
}

std::unique_ptr<Codec> make_codec(std::string_view spec, std::uint64_t seed, const core::Layout* layout) {
  const auto colon = spec.find(':');
  const std::string_view name = spec.substr(0, colon);
  const Entry* entry = nullptr;
  for (const Entry& e : kRegistry)
    if (e.name == name) entry = &e;
  if (entry == nullptr)
    FAST_THROW(InvalidArgument, "codec spec '{}': unknown codec '{}', expected one of {}", spec, name,
               fmt::join(codec_names(), ", "));
  std::vector<std::string_view> allowed;
  for (auto k : entry->keys)
    if (!k.empty()) allowed.push_back(k);
  Options options;
  if (colon != std::string_view::npos) {
    std::string_view rest = spec.substr(colon + 1);
    for (;;) {
      const auto comma = rest.find(',');
      const std::string_view item = rest.substr(0, comma);
      const auto eq = item.find('=');
      FAST_ENFORCE(eq != std::string_view::npos && eq > 0 && eq + 1 < item.size(),
                   "codec spec '{}': option '{}' is not key=value", spec, item);
      const std::string key(item.substr(0, eq));
      FAST_ENFORCE(std::find(allowed.begin(), allowed.end(), key) != allowed.end(),
                   "codec spec '{}': unknown option '{}' of codec '{}', expected one of [{}]", spec, key, name,
                   fmt::join(allowed, ", "));
      FAST_ENFORCE(options.emplace(key, std::string(item.substr(eq + 1))).second,
                   "codec spec '{}': option '{}' given twice", spec, key);
      if (comma == std::string_view::npos) break;
      rest = rest.substr(comma + 1);
    }
  }
  return entry->make(options, seed, layout);
}

}  // namespace fast::compress
