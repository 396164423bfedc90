// is_rank_trace_name: `rank<N>_trace.json[.gz]`, read by hand (it was a std::regex).
#include <gtest/gtest.h>

#include <limits>
#include <string>

#include "files.hpp"
#include "sweep/discovery.hpp"

using tracelane::cli::is_rank_trace_name;

TEST(RankTraceName, AcceptsExactlyRankDigitsTraceJsonOrJsonGz) {
  long long rank = -1;
  EXPECT_TRUE(is_rank_trace_name("rank0_trace.json", &rank));
  EXPECT_EQ(rank, 0);
  EXPECT_TRUE(is_rank_trace_name("rank12_trace.json.gz", &rank));
  EXPECT_EQ(rank, 12);
  EXPECT_TRUE(is_rank_trace_name("rank007_trace.json", &rank));  // leading zeros, as before
  EXPECT_EQ(rank, 7);
  EXPECT_TRUE(is_rank_trace_name("rank3_trace.json"));
  for (const char* name : {"rank_trace.json", "rank-1_trace.json", "rank+1_trace.json", "rank 1_trace.json",
                           "Rank1_trace.json", "rank1_trace.json.gz.tmp", "rank1_trace.jsonl", "rank1_trace.json.",
                           "rank1_trace.gz", "xrank1_trace.json", "rank1_trace_compacted.json.gz", "rank1x_trace.json",
                           "rank", "", "rank1", "rank1_trace.json.gzip", "rank\xd9\xa1_trace.json"}) {
    rank = -1;
    EXPECT_FALSE(is_rank_trace_name(name, &rank)) << name;
    EXPECT_EQ(rank, -1) << name;
  }
  EXPECT_FALSE(is_rank_trace_name(std::string("rank1_trace.json\0.gz", 20)));
}

TEST(RankTraceName, ARankPastLongLongIsNoRank) {
  long long rank = -1;
  std::string max = std::to_string(std::numeric_limits<long long>::max());
  EXPECT_TRUE(is_rank_trace_name("rank" + max + "_trace.json", &rank));
  EXPECT_EQ(rank, std::numeric_limits<long long>::max());
  rank = -1;
  EXPECT_FALSE(is_rank_trace_name("rank9223372036854775808_trace.json", &rank));
  EXPECT_FALSE(is_rank_trace_name("rank99999999999999999999999999_trace.json.gz", &rank));
  EXPECT_EQ(rank, -1);
  // Without asking for the rank the name is still of the form, as before.
  EXPECT_TRUE(is_rank_trace_name("rank99999999999999999999999999_trace.json.gz"));
}

TEST(RankTraceName, ALongNameIsReadInOnePass) {
  std::string digits(1 << 20, '1');
  EXPECT_TRUE(is_rank_trace_name("rank" + digits + "_trace.json", nullptr));
  long long rank = -1;
  EXPECT_FALSE(is_rank_trace_name("rank" + digits + "_trace.json", &rank));
  EXPECT_FALSE(is_rank_trace_name("rank" + digits + "_trace.jso", nullptr));
}

TEST(RankTraceName, ACompactedCopyNamesTheRankFileItWasMadeFrom) {
  using tracelane::cli::is_rank_copy_name;
  long long rank = -1;
  std::string original;
  EXPECT_TRUE(is_rank_copy_name("rank3_trace_compacted.json.gz", &rank, &original));
  EXPECT_EQ(rank, 3);
  EXPECT_EQ(original, "rank3_trace.json.gz");
  EXPECT_TRUE(is_rank_copy_name("rank12_trace_compacted.json", &rank, &original));
  EXPECT_EQ(rank, 12);
  EXPECT_EQ(original, "rank12_trace.json");
  for (const char* name :
       {"rank3_trace.json", "rank3_trace_compacted.json.gz.tmp", "rank3_trace_compacted_compacted.json",
        "rankx_trace_compacted.json", ".rank3_trace_compacted.json.gz.tmp.12.34", "pp_traces_merged_compacted.json.gz",
        "rank3_trace_compacted.json.bz2", "rank3_trace_compacted"}) {
    original = "unchanged";
    EXPECT_FALSE(is_rank_copy_name(name, nullptr, &original)) << name;
    EXPECT_EQ(original, "unchanged") << name;
  }
}
