// did_you_mean (core/suggest.hpp): the edit distance on hand-counted pairs, and which candidate an
// error suggests.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "fast/core/suggest.hpp"

namespace fast::core {
namespace {

TEST(NameDistance, CountsInsertionsDeletionsReplacementsAndAdjacentSwaps) {
  EXPECT_EQ(name_distance("", ""), 0u);
  EXPECT_EQ(name_distance("", "abc"), 3u);
  EXPECT_EQ(name_distance("abc", ""), 3u);
  EXPECT_EQ(name_distance("strategy", "strategy"), 0u);
  EXPECT_EQ(name_distance("stratgy", "strategy"), 1u);    // one insertion
  EXPECT_EQ(name_distance("strategyy", "strategy"), 1u);  // one deletion
  EXPECT_EQ(name_distance("kitten", "sitting"), 3u);      // two replacements and an insertion
  EXPECT_EQ(name_distance("adpgsd", "adpsgd"), 1u);       // one swap of neighbours
  EXPECT_EQ(name_distance("ab", "ba"), 1u);
  // Restricted: a swapped pair is not edited again ("ca" -> "ac" -> "abc" would be 2).
  EXPECT_EQ(name_distance("ca", "abc"), 3u);
}

TEST(NameDistance, CaseAndTheTwoSeparatorsAreTheSameCharacter) {
  EXPECT_EQ(name_distance("Peer-Timeout", "peer_timeout"), 0u);
  EXPECT_EQ(name_distance("MLP", "mlp"), 0u);
  EXPECT_EQ(name_distance("peer-timeot", "peer_timeout"), 1u);
}

TEST(DidYouMean, SuggestsTheNearestNameWithinTheEditsAllowed) {
  const std::vector<std::string> keys{"steps", "strategy", "peer_timeout", "schedule"};
  EXPECT_EQ(did_you_mean("stratgy", keys), " (did you mean 'strategy'?)");
  EXPECT_EQ(did_you_mean("peer-timeout", keys), " (did you mean 'peer_timeout'?)");
  EXPECT_EQ(did_you_mean("shedule", keys), " (did you mean 'schedule'?)");
  EXPECT_EQ(did_you_mean("adpgsd", {"allreduce", "dpsgd", "adpsgd"}), " (did you mean 'adpsgd'?)");  // 2 vs 1
  EXPECT_EQ(did_you_mean("sgdm", {"mlp", "cnn"}), "");
  EXPECT_EQ(did_you_mean("steps", keys), "");  // known: nothing to suggest
  EXPECT_EQ(did_you_mean("anything", {}), "");
}

TEST(DidYouMean, AllowsOneEditUpToFourCharactersTwoUpToEightThreeBeyond) {
  EXPECT_EQ(did_you_mean("cmn", {"cnn"}), " (did you mean 'cnn'?)");  // 1 edit, 3 characters
  EXPECT_EQ(did_you_mean("cmm", {"cnn"}), "");                        // 2 edits, 3 characters
  EXPECT_EQ(did_you_mean("momentm", {"momentum"}), " (did you mean 'momentum'?)");
  EXPECT_EQ(did_you_mean("mmentm", {"momentum"}), " (did you mean 'momentum'?)");          // 2 edits, 6 characters
  EXPECT_EQ(did_you_mean("mentm", {"momentum"}), "");                                      // 3 edits, 5 characters
  EXPECT_EQ(did_you_mean("abcdefgxyz", {"abcdefghij"}), " (did you mean 'abcdefghij'?)");  // 3 edits, 10
  EXPECT_EQ(did_you_mean("abcdefwxyz", {"abcdefghij"}), "");                               // 4 edits, 10
  // Lengths 4 apart are at least 4 edits apart (a hostile file's 100,000-character key is near nothing).
  EXPECT_EQ(did_you_mean("xabcdefghijkl", {"abcdefghi"}), "");  // not a prefix either (below)
  EXPECT_EQ(did_you_mean("abcdefghijkl", {"abcdefghi"}), " (did you mean 'abcdefghi'?)");
  EXPECT_EQ(did_you_mean(std::string(100000, 's'), {"steps", "strategy"}), "");
}

// Of names as near, the one that shares the longer start with the given name, then the first.
TEST(DidYouMean, NeverSuggestsANameAsFarAsItsLengthAndBreaksATieByTheSharedStart) {
  EXPECT_EQ(did_you_mean("x", {"y"}), "");  // 1 edit replaces all of "y"
  EXPECT_EQ(did_you_mean("x", {"xy"}), " (did you mean 'xy'?)");
  EXPECT_EQ(did_you_mean("cn", {"cnn", "can"}), " (did you mean 'cnn'?)");  // 1 edit each; "cn" begins "cnn"
  EXPECT_EQ(did_you_mean("cn", {"can", "cnn"}), " (did you mean 'cnn'?)");
  EXPECT_EQ(did_you_mean("sped", {"count", "seed", "speed"}), " (did you mean 'speed'?)");  // a cluster file's key
  EXPECT_EQ(did_you_mean("cn", {"cxn", "cyn"}), " (did you mean 'cxn'?)");                  // as near, as long a start
  EXPECT_EQ(did_you_mean("cn", {"cyn", "cxn"}), " (did you mean 'cyn'?)");
}

TEST(DidYouMean, FallsBackOnTheOneCandidateThatBeginsTheNameOrThatItBegins) {
  const std::vector<std::string> flags{"batch", "epochs", "warmup-steps", "checkpoint-dir", "checkpoint-every", "lr"};
  EXPECT_EQ(did_you_mean("batch-size", flags), " (did you mean 'batch'?)");  // 5 edits: too far, but a prefix
  EXPECT_EQ(did_you_mean("BatchSize", flags), " (did you mean 'batch'?)");   // folded as the distance folds
  EXPECT_EQ(did_you_mean("warmup", flags), " (did you mean 'warmup-steps'?)");
  EXPECT_EQ(did_you_mean("resnet18", {"mlp", "cnn", "resnet"}), " (did you mean 'resnet'?)");
  EXPECT_EQ(did_you_mean("checkpoint", flags), "");                           // begins two options: no guess
  EXPECT_EQ(did_you_mean("lr-decay", flags), "");                             // "lr" is shorter than 4 characters
  EXPECT_EQ(did_you_mean("warm", flags), " (did you mean 'warmup-steps'?)");  // 4 characters: enough
  EXPECT_EQ(did_you_mean("war", flags), "");
  EXPECT_EQ(did_you_mean("epochs-per-run", flags), " (did you mean 'epochs'?)");
  // The nearest name wins before any prefix: "batc" begins both and is 1 edit from "batch".
  EXPECT_EQ(did_you_mean("batc", {"batch", "batchnorm"}), " (did you mean 'batch'?)");
}

}  // namespace
}  // namespace fast::core
