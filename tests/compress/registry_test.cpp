#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "fast/compress/codec.hpp"
#include "fast/core/error.hpp"

namespace fast::compress {
namespace {

std::string error_of(const std::string& spec) {
  try {
    make_codec(spec);
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  ADD_FAILURE() << "'" << spec << "' was accepted";
  return {};
}

TEST(CodecRegistry, NamesInRegistryOrder) {
  EXPECT_EQ(codec_names(), (std::vector<std::string>{"none", "fp16", "bf16", "int8", "sign", "topk", "randk",
                                                     "threshold", "powersgd"}));
  for (const auto& name : codec_names()) {
    auto c = make_codec(name == "threshold" ? "threshold:value=0.1" : name);
    EXPECT_EQ(c->name(), name);
  }
}

// The bound of a topk/threshold payload: header, u64 k, u8 form, 4k value bytes, min(u32, bitmap) indices.
std::size_t sparse_bound(std::size_t n, std::size_t k) { return 16 + 9 + 4 * k + std::min(4 * k, (n + 7) / 8); }

TEST(CodecRegistry, OptionsAreParsed) {
  EXPECT_EQ(make_codec("topk:ratio=0.25")->encoded_bytes(100), sparse_bound(100, 25));
  EXPECT_EQ(make_codec("topk:k=7")->encoded_bytes(100), sparse_bound(100, 7));
  EXPECT_EQ(make_codec("topk")->encoded_bytes(1000), sparse_bound(1000, 10));  // default ratio 0.01
  EXPECT_EQ(make_codec("topk")->encoded_bytes(5), sparse_bound(5, 1));         // at least one
  EXPECT_EQ(make_codec("randk:ratio=0.5")->encoded_bytes(10), 16 + 16 + 4 * 5u);
  EXPECT_EQ(make_codec("int8:levels=1")->encoded_bytes(10), 16 + 5 + 4 + 10u);
  EXPECT_EQ(make_codec("int8:bucket=4")->encoded_bytes(10), 16 + 5 + 12 + 10u);
  EXPECT_EQ(make_codec("int8")->encoded_bytes(1025), 16 + 5 + 12 + 1025u);
  EXPECT_EQ(make_codec("threshold:value=0")->encoded_bytes(10), sparse_bound(10, 10));
}

// The messages of core::SpecFamily (core/spec.hpp), each naming the spec.
TEST(CodecRegistry, UnknownNameListsTheAllowedOnes) {
  const auto msg = error_of("zip:ratio=0.1");
  EXPECT_NE(msg.find("codec spec 'zip:ratio=0.1': unknown name 'zip'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("none, fp16, bf16, int8, sign, topk, randk, threshold"), std::string::npos) << msg;
  EXPECT_NE(error_of("").find("unknown name ''"), std::string::npos);
}

TEST(CodecRegistry, UnknownKeyListsTheCodecsKeys) {
  auto msg = error_of("topk:ratoi=0.1");
  EXPECT_NE(msg.find("unknown key 'ratoi' of topk (did you mean 'ratio'?), expected one of: ratio, k, scope"),
            std::string::npos)
      << msg;
  msg = error_of("fp16:levels=3");
  EXPECT_NE(msg.find("unknown key 'levels': fp16 takes no keys"), std::string::npos) << msg;
}

TEST(CodecRegistry, BadValuesNameTheKeyTheRangeAndTheValue) {
  EXPECT_EQ(error_of("topk:ratio=0"), "codec spec 'topk:ratio=0': key 'ratio' expects a number in (0, 1], got '0'");
  EXPECT_NE(error_of("topk:ratio=1.5").find("key 'ratio' expects a number in (0, 1], got '1.5'"), std::string::npos);
  EXPECT_NE(error_of("topk:ratio=abc").find("key 'ratio' expects a number in (0, 1], got 'abc'"), std::string::npos);
  EXPECT_NE(error_of("topk:ratio=0.1x").find("got '0.1x'"), std::string::npos);
  EXPECT_NE(error_of("topk:k=0").find("key 'k' expects an integer >= 1, got '0'"), std::string::npos);
  EXPECT_NE(error_of("topk:k=-3").find("key 'k' expects an integer >= 1, got '-3'"), std::string::npos);
  EXPECT_NE(error_of("topk:k=3,ratio=0.1").find("keys ratio and k are exclusive"), std::string::npos);
  EXPECT_NE(error_of("topk:scope=layer").find("key 'scope' expects one of: global, tensor, got 'layer'"),
            std::string::npos);
  EXPECT_NE(error_of("int8:levels=128").find("key 'levels' expects an integer in [1, 127], got '128'"),
            std::string::npos);
  EXPECT_NE(error_of("int8:levels=0").find("got '0'"), std::string::npos);
  EXPECT_NE(error_of("int8:bucket=0").find("key 'bucket' expects an integer in [1, 4294967295], got '0'"),
            std::string::npos);
  EXPECT_NE(error_of("int8:bucket=4294967296").find("got '4294967296'"), std::string::npos);
  EXPECT_NE(error_of("threshold").find("threshold needs value (threshold:value=VALUE)"), std::string::npos);
  EXPECT_NE(error_of("threshold:value=-1").find("key 'value' expects a number in [0, 3.4e+38], got '-1'"),
            std::string::npos);
  EXPECT_NE(error_of("threshold:value=inf").find("got 'inf'"), std::string::npos);
  EXPECT_NE(error_of("powersgd:warm_start=yes").find("key 'warm_start' expects true or false, got 'yes'"),
            std::string::npos);
}

TEST(CodecRegistry, MalformedSpecsAreRejected) {
  EXPECT_NE(error_of("topk:").find("item '' is not KEY=VALUE"), std::string::npos);
  EXPECT_NE(error_of("topk:k").find("item 'k' is not KEY=VALUE"), std::string::npos);
  EXPECT_NE(error_of("topk:k=").find("is not KEY=VALUE"), std::string::npos);
  EXPECT_NE(error_of("topk:=3").find("is not KEY=VALUE"), std::string::npos);
  EXPECT_NE(error_of("topk:k=3,").find("item '' is not KEY=VALUE"), std::string::npos);
  EXPECT_NE(error_of("topk:k=3,k=4").find("key 'k' given twice"), std::string::npos);
}

TEST(CodecRegistry, HelpFormsComeFromTheDeclarations) {
  const std::vector<std::string> specs = codec_specs();
  ASSERT_EQ(specs.size(), codec_names().size());
  EXPECT_EQ(specs[3], "int8[:levels=LEVELS,bucket=BUCKET]");
  EXPECT_EQ(specs[5], "topk[:ratio=RATIO,k=K,scope=global|tensor]");
  EXPECT_EQ(specs[7], "threshold:value=VALUE");
}

}  // namespace
}  // namespace fast::compress
