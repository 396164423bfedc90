// The pieces the restore record's encoder and decoder share (src/restore_codec.hpp,
// restore_codec.cpp). restore_test.cpp tests the record end to end: restore(compact(x)) == x.
#include "test_support.hpp"
#include "tracelane/restore.hpp"

using namespace tracelane;

TEST(Xxhash64, MatchesTheReferenceVectors) {
  EXPECT_EQ(xxhash64(""), 0xEF46DB3751D8E999ULL);
  EXPECT_EQ(xxhash64("a"), 0xD24EC4F1A98C6E5BULL);
  EXPECT_EQ(xxhash64("Nobody inspects the spammish repetition"), 0xFBCEA83C8A378BF1ULL);
}
