// Dataset spec strings (`--dataset SPEC`, training/dataset_spec.hpp): the kind, the keyed
// syntax of core/spec.hpp, every key's range, and a synthetic spec's sizes (synthetic_spec). The
// input is the spec text. A spec that names files (npz, npy) only has them checked for existence
// here; the readers of the files have harnesses of their own (npy, npz).

#include "fast/training/dataset_spec.hpp"
#include "harness.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(fast::fuzz::text_of(data, size));
  fast::fuzz::expect_accepted_or_refused([&] {
    const fast::training::DatasetSpec spec = fast::training::parse_dataset_spec(text);
    if (spec.kind == "synthetic") (void)fast::training::synthetic_spec(spec);
  });
  return 0;
}
